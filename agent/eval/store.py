"""What an evaluation keeps in --out, per instance: OUT/<id>/ eval.json, junit.xml, test_output.txt.gz,
patch.diff, report.json (SWE-bench's per-instance report); and reading it back (resume, --regrade).

test_output.txt.gz is SWE-bench's test_output.txt: pytest's output between its markers, then the
test command's exit status, so `swebench`'s own grading reads it as it reads its own logs.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from agent.eval.job import INFRASTRUCTURE, EvalEvidence
from agent.eval.verdict import InstanceEval

EVAL_JSON, JUNIT, LOG, PATCH, REPORT = "eval.json", "junit.xml", "test_output.txt.gz", "patch.diff", "report.json"
START, END, EXIT = ">>>>> Start Test Output", ">>>>> End Test Output", ">>>>> Test Exit Code"


def swebench_log(log: str, exit_code: int | None) -> str:
    """The test run's output in SWE-bench's test_output.txt shape (its markers and exit status line)."""
    tail = f"{EXIT}: {exit_code}\n" if exit_code is not None else ""
    return f"{START}\n{log.rstrip()}\n{END}\n{tail}"


def write_instance(folder: Path, result: InstanceEval, evidence: EvalEvidence | None, patch: str | None) -> None:
    """Keep the evidence, then eval.json (written last: an instance with an eval.json is done)."""
    folder.mkdir(parents=True, exist_ok=True)
    result.files = {}
    if evidence is not None and evidence.junit_xml is not None:
        _write(folder / JUNIT, evidence.junit_xml.encode("utf-8", errors="replace"))
        result.files["junit"] = JUNIT
    if evidence is not None and (evidence.log or evidence.exit_code is not None):
        text = swebench_log(evidence.log, evidence.exit_code).encode("utf-8", errors="replace")
        _write(folder / LOG, gzip.compress(text, compresslevel=6, mtime=0))
        result.files["log"] = LOG
        result.log_bytes = len(text)
    if patch is not None:
        _write(folder / PATCH, patch.encode("utf-8", errors="surrogateescape"))
        result.files["patch"] = PATCH
    write_verdict(folder, result)


def write_verdict(folder: Path, result: InstanceEval) -> None:
    """eval.json and SWE-bench's per-instance report.json (a regrade rewrites these two only)."""
    _write(folder / REPORT, (json.dumps(swebench_instance_report(result), indent=4) + "\n").encode())
    _write(folder / EVAL_JSON, result.model_dump_json(indent=2).encode())


def swebench_instance_report(result: InstanceEval) -> dict[str, object]:
    """SWE-bench's run_instance report.json for this instance (its get_eval_report): tests_status only for a run
    it would grade (a log it cannot trust has none there); infra_failure advisory, codebox's own knowledge."""
    patch_exists = not result.empty_patch
    entry: dict[str, object] = {
        "patch_is_None": False,
        "patch_exists": patch_exists,
        "patch_successfully_applied": patch_exists and result.trusted,
        "resolved": result.status == "resolved",
        "infra_failure": result.error_kind in INFRASTRUCTURE,
    }
    if result.tests_status and result.trusted:
        entry["tests_status"] = result.tests_status
    return {result.instance_id: entry}


def read_instance(folder: Path) -> InstanceEval | None:
    try:
        return InstanceEval.model_validate_json((folder / EVAL_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_junit(folder: Path, result: InstanceEval) -> str | None:
    if "junit" not in result.files:
        return None
    try:
        return (folder / result.files["junit"]).read_text(encoding="utf-8")
    except OSError:
        return None


def read_log(folder: Path) -> str | None:
    """The kept test log (test_output.txt), decompressed."""
    try:
        return gzip.decompress((folder / LOG).read_bytes()).decode("utf-8", errors="replace")
    except (OSError, EOFError, gzip.BadGzipFile):
        return None


def finished(folder: Path, fingerprint: str) -> InstanceEval | None:
    """The kept verdict when it ends this instance for good: same inputs, not cancelled."""
    result = read_instance(folder)
    if result is None or result.cancelled or result.fingerprint != fingerprint:
        return None
    return result


def clear(folder: Path) -> None:
    """An instance that starts has no verdict yet: if the run is killed, the next one evaluates it."""
    for name in (EVAL_JSON, REPORT, JUNIT, LOG, PATCH):
        (folder / name).unlink(missing_ok=True)


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
