"""`codebox eval`: SWE-bench-style evaluation of predictions, each in a fresh workspace, tests network-off."""

from __future__ import annotations

import json
import sys
import threading
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.cancel import CancelToken
from agent.errors import SandboxError
from agent.protocol import TaskSpec
from agent.sandboxes.base import Session as Sandbox
from agent.sandboxes.config import SandboxConfig
from agent.sandboxes.registry import backend_for
from agent.workspace import Workspace, WorkspaceError, create_workspace, git

EvalStatus = Literal["resolved", "unresolved", "patch_failed", "error"]
STATUSES: tuple[EvalStatus, ...] = ("resolved", "unresolved", "patch_failed", "error")
JUNIT_PATH = "/tmp/codebox-eval-junit.xml"  # the repo is read-only in the sandbox: /tmp is the tmpfs
DEFAULT_TEST_TIMEOUT_S = 1800.0


class Prediction(BaseModel):
    """One line of a predictions file (SWE-bench's keys; other keys are carried and ignored)."""

    model_config = ConfigDict(extra="allow")

    instance_id: str = Field(min_length=1)
    model_patch: str | None = None
    model_name_or_path: str | None = None


class InstanceEval(BaseModel):
    """DIR/<id>/eval.json: what happened to one instance, and each named test's outcome."""

    instance_id: str
    status: EvalStatus
    error: str | None = None
    model_name_or_path: str | None = None
    fail_to_pass: dict[str, str] = Field(default_factory=dict)
    pass_to_pass: dict[str, str] = Field(default_factory=dict)
    missing_tests: list[str] = Field(default_factory=list)
    test_command: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    test_log: str = ""
    duration_s: float = 0.0


@dataclass
class InputError:
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


# --- inputs -----------------------------------------------------------------------------------------


def load_predictions(path: Path) -> tuple[dict[str, Prediction], list[InputError]]:
    """JSONL (or a JSON list, as SWE-bench also takes); every bad line is reported with its number."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return {}, [InputError(str(path), f"cannot read it as UTF-8 text: {exc}")]
    if text.lstrip().startswith("["):
        try:
            items = [json.dumps(item) for item in json.loads(text)]
        except (ValueError, TypeError) as exc:
            return {}, [InputError(str(path), f"not a JSON list of predictions: {exc}")]
        numbered = list(enumerate(items, start=1))
    else:
        numbered = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    found: dict[str, Prediction] = {}
    errors: list[InputError] = []
    for number, line in numbered:
        try:
            prediction = Prediction.model_validate_json(line)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'line'}: {e['msg']}" for e in exc.errors())
            errors.append(InputError(f"{path.name} line {number}", problems))
            continue
        if prediction.instance_id in found:
            errors.append(InputError(f"{path.name} line {number}", f"duplicate instance_id {prediction.instance_id!r}"))
            continue
        found[prediction.instance_id] = prediction
    return found, errors


def match(
    tasks: list[TaskSpec], predictions: dict[str, Prediction]
) -> tuple[list[tuple[TaskSpec, Prediction]], list[str], list[str]]:
    """Pairs in task order; prediction ids with no task; task ids with no prediction."""
    by_id = {t.prediction_id: t for t in tasks}
    pairs = [(t, predictions[t.prediction_id]) for t in tasks if t.prediction_id in predictions]
    orphans = [pid for pid in predictions if pid not in by_id]
    unpredicted = [t.prediction_id for t in tasks if t.prediction_id not in predictions]
    return pairs, orphans, unpredicted


# --- one instance -----------------------------------------------------------------------------------


def node_file(node_id: str) -> str | None:
    """The file part of a pytest node id (`tests/test_x.py::C::test[a::b]` -> tests/test_x.py)."""
    head = node_id.split("[", 1)[0]
    if "::" not in head:
        return None
    return head.split("::", 1)[0]


def junit_key(node_id: str) -> tuple[str, str]:
    """The (classname, name) pytest's JUnit XML gives the test with this node id."""
    head, bracket, params = node_id.partition("[")
    parts = head.split("::")
    module = parts[0].removesuffix(".py").replace("/", ".")
    name = parts[-1] + bracket + params
    return ".".join([module, *parts[1:-1]]), name


def junit_outcomes(xml_text: str) -> dict[tuple[str, str], str]:
    """passed / failed / error / skipped for every testcase of a JUnit report."""
    root = ET.fromstring(xml_text)
    outcomes: dict[tuple[str, str], str] = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        outcome = "passed"
        for tag in ("error", "failure", "skipped"):
            if case.find(tag) is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                break
        # A test that failed and then errored in teardown appears twice: the worse outcome wins.
        if outcomes.get(key) in (None, "passed"):
            outcomes[key] = outcome
    return outcomes


class _Active:
    """The sandboxes running now, so a cancel can close them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._boxes: set[Sandbox] = set()

    def add(self, box: Sandbox) -> None:
        with self._lock:
            self._boxes.add(box)

    def discard(self, box: Sandbox) -> None:
        with self._lock:
            self._boxes.discard(box)

    def close_all(self) -> None:
        with self._lock:
            boxes = list(self._boxes)
        for box in boxes:
            box.close()


def evaluate(
    task: TaskSpec, prediction: Prediction, config: SandboxConfig, timeout_s: float, active: _Active | None = None
) -> InstanceEval:
    """One instance: fresh workspace at base_commit, model_patch, test_patch, the named tests."""
    started = time.monotonic()
    result = InstanceEval(instance_id=task.prediction_id, status="error",
                          model_name_or_path=prediction.model_name_or_path)
    try:
        _evaluate_into(result, task, prediction, config, timeout_s, active or _Active())
    except Exception as exc:  # one instance's failure is its own error, never the run's end
        result.status, result.error = "error", f"{type(exc).__name__}: {exc}"
    result.duration_s = round(time.monotonic() - started, 3)
    return result


def _evaluate_into(
    result: InstanceEval, task: TaskSpec, prediction: Prediction, config: SandboxConfig, timeout_s: float,
    active: _Active,
) -> None:
    named = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    if not named:
        result.error = "the task names no FAIL_TO_PASS or PASS_TO_PASS tests"
        return
    not_pytest = [n for n in named if node_file(n) is None]
    if not_pytest:
        result.error = f"not pytest node ids (path.py::name): {', '.join(not_pytest[:5])}"
        return
    if task.image:
        config = config.replace(image=task.image)
    try:
        backend_for(config).preflight(config)  # the engine, the runtime, the image
        workspace = create_workspace(Path(task.repo), task.base_commit)
    except (SandboxError, WorkspaceError) as exc:
        result.error = str(exc)
        return
    try:
        if prediction.model_patch and prediction.model_patch.strip():
            problem = _apply(workspace, prediction.model_patch)
            if problem:
                result.status, result.error = "patch_failed", f"the model_patch does not apply: {problem}"
                return
        if task.test_patch:
            problem = _apply(workspace, task.test_patch)
            if problem:
                result.error = f"the test_patch does not apply after the model_patch: {problem}"
                return
        _run_tests(result, task, workspace, config, timeout_s, active)
    finally:
        workspace.remove()


def _apply(workspace: Workspace, patch: str) -> str | None:
    """None when the patch applied; else git's reason (nothing is applied then)."""
    data = patch.encode("utf-8", errors="surrogateescape")
    if not data.endswith(b"\n"):
        data += b"\n"
    for args in (["apply", "--check"], ["apply"]):
        proc = git(*args, "--binary", "--whitespace=nowarn", "-", cwd=workspace.path, stdin=data, check=False)
        if proc.returncode != 0:
            lines = proc.stderr.decode(errors="replace").strip().splitlines()
            return "; ".join(lines[:3]) or f"git apply exit {proc.returncode}"
    return None


def _run_tests(
    result: InstanceEval, task: TaskSpec, workspace: Workspace, config: SandboxConfig, timeout_s: float,
    active: _Active,
) -> None:
    named = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    files = sorted({f for f in (node_file(n) for n in named) if f})
    present = [f for f in files if (workspace.path / f).is_file()]
    argv = ["python3", "-m", "pytest", "-rA", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
            f"--junitxml={JUNIT_PATH}", *present]
    result.test_command = argv
    outcomes: dict[tuple[str, str], str] = {}
    if present:
        sandbox = backend_for(config).session(workspace.path, config, task_id=f"eval-{task.id}")
        active.add(sandbox)
        try:
            request: dict[str, object] = {"argv": argv, "timeout_s": timeout_s, "report_file": JUNIT_PATH}
            if task.test_in_copy:
                request["copy_repo"] = True
            reply = sandbox.call("run_test", request, timeout_s=timeout_s)
        except SandboxError as exc:
            result.error = f"the sandbox failed: {exc}"
            return
        finally:
            active.discard(sandbox)
            sandbox.close()
        result.test_log, result.exit_code = reply.output, reply.data.get("exit_code")
        text = reply.data.get("report_file_text")
        if not isinstance(text, str):
            why = reply.data.get("report_file_error") or reply.error or "no report"
            result.error = f"pytest wrote no JUnit report ({reply.outcome}: {why})"
            return
        try:
            outcomes = junit_outcomes(text)
        except ET.ParseError as exc:
            result.error = f"the JUnit report could not be read: {exc}"
            return
    _score(result, task, outcomes)


def _score(result: InstanceEval, task: TaskSpec, outcomes: dict[tuple[str, str], str]) -> None:
    result.fail_to_pass = {n: outcomes.get(junit_key(n), "missing") for n in task.FAIL_TO_PASS}
    result.pass_to_pass = {n: outcomes.get(junit_key(n), "missing") for n in task.PASS_TO_PASS}
    every = {**result.fail_to_pass, **result.pass_to_pass}
    result.missing_tests = [n for n, outcome in every.items() if outcome == "missing"]
    if result.missing_tests:
        shown = ", ".join(result.missing_tests[:5]) + (" ..." if len(result.missing_tests) > 5 else "")
        result.error = f"{len(result.missing_tests)} named test(s) did not run (no such test?): {shown}"
    result.status = "resolved" if all(o == "passed" for o in every.values()) else "unresolved"


# --- many instances -----------------------------------------------------------------------------------


def run_eval(
    pairs: list[tuple[TaskSpec, Prediction]],
    out_dir: Path,
    *,
    jobs: int = 2,
    config: SandboxConfig | None = None,
    timeout_s: float = DEFAULT_TEST_TIMEOUT_S,
    cancel: CancelToken | None = None,
    progress: bool = True,
) -> list[InstanceEval]:
    """Evaluate every pair, ``jobs`` at a time; write DIR/<id>/eval.json and DIR/results.json."""
    cancel = cancel or CancelToken()
    config = config or SandboxConfig()
    out_dir.mkdir(parents=True, exist_ok=True)
    active = _Active()
    results: dict[str, InstanceEval] = {}
    lock = threading.Lock()

    def one(task: TaskSpec, prediction: Prediction) -> None:
        if cancel.cancelled:
            return
        result = evaluate(task, prediction, config, timeout_s, active)
        if cancel.cancelled and result.status == "error":
            result.error = f"cancelled ({result.error})"
        (out_dir / task.id).mkdir(parents=True, exist_ok=True)
        (out_dir / task.id / "eval.json").write_text(result.model_dump_json(indent=2), encoding="utf-8")
        with lock:
            results[task.id] = result
            if progress:
                print(f"  {result.instance_id}: {result.status}", file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="codebox-eval") as pool:
        futures = [pool.submit(one, task, prediction) for task, prediction in pairs]
        closed = False
        for future in futures:
            while not future.done():
                if cancel.cancelled and not closed:
                    active.close_all()
                    closed = True
                time.sleep(0.05)
            future.result()
    ordered = [results[t.id] for t, _ in pairs if t.id in results]
    write_results(out_dir, ordered)
    return ordered


def write_results(out_dir: Path, results: list[InstanceEval]) -> None:
    summary: dict[str, object] = {status: [r.instance_id for r in results if r.status == status]
                                  for status in STATUSES}
    summary["total"] = len(results)
    (out_dir / "results.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


def render_table(results: list[InstanceEval]) -> str:
    header = ("instance", "status", "F2P", "P2P", "time", "note")
    rows = [
        (
            r.instance_id,
            r.status,
            _ratio(r.fail_to_pass),
            _ratio(r.pass_to_pass),
            f"{r.duration_s:.1f}s",
            (r.error or "")[:80],
        )
        for r in results
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    counts = " · ".join(f"{sum(r.status == s for r in results)} {s}" for s in STATUSES)
    return "\n".join([*lines, "", f"{len(results)} instances: {counts}"])


def _ratio(outcomes: dict[str, str]) -> str:
    if not outcomes:
        return "-"
    return f"{sum(o == 'passed' for o in outcomes.values())}/{len(outcomes)}"
