"""Parity: the `swebench` package's own parser for each repository reads the same real logs (runner_logs/) as
codebox's runner does, test by test, except where this file says why."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from agent.eval.job import EvalEvidence
from agent.eval.store import swebench_log
from agent.eval.verdict import InstanceEval, judge
from agent.languages.python.runners import DJANGO, SYMPY
from agent.languages.runner import LogRunner
from tests.e2e.swebench_referee import referee_or_skip

LOGS = Path(__file__).with_name("runner_logs")


@pytest.fixture(scope="module")
def parsers() -> dict[str, object]:
    referee_or_skip()
    registry: dict[str, object] = importlib.import_module("swebench.harness.log_parsers").PARSER_REGISTRY
    return registry


@pytest.mark.parametrize(("name", "runner"), [
    ("sympy-1.8-py3.11.txt", SYMPY), ("sympy-1.0-py3.9.txt", SYMPY), ("django-3.2-py3.9.txt", DJANGO),
    ("django-3.2-py3.11.txt", DJANGO), ("django-4.2-py3.11.txt", DJANGO)])
def test_swebench_reads_every_test_as_codebox_does(name: str, runner: LogRunner, parsers: dict[str, object]) -> None:
    text = (LOGS / name).read_text(encoding="utf-8")
    parse = parsers[runner.log_parser]
    assert callable(parse)
    theirs = {runner.key(test): status for test, status in parse(text, None).items()}
    ours = runner.statuses(text)
    if runner is SYMPY:
        # SWE-bench's sympy parser also keys each failure's header (path.py:name), and misses a file's last test
        # (its line ends in the file's [OK]/[FAIL] mark): no dataset row names either.
        headers = {t for t in theirs if ".py:" in t}
        assert all(theirs[t] == "FAILED" and ours[t.rsplit(":", 1)[1]] == "FAILED" for t in headers)
        theirs = {t: s for t, s in theirs.items() if t not in headers}
        last = {t for t in ours if t not in theirs}
        assert len(last) == 1 and all(ours[t] == "PASSED" for t in last)
        ours = {t: s for t, s in ours.items() if t not in last}
    assert theirs == ours


ROWS = json.loads((LOGS / "sympy-rows.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("iid", "name", "exit_code", "resolved"), [
    ("sympy__sympy-11400", "sympy-1.0-py3.9.txt", 1, False),
    ("sympy__sympy-20442", "sympy-1.8-py3.11.txt", 1, False),
    ("sympy__sympy-11400", "sympy-1.0-py3.9-gold.swebench.txt", None, True)])
def test_swebench_and_codebox_give_real_sympy_rows_the_same_verdict(
        iid: str, name: str, exit_code: int | None, resolved: bool, tmp_path: Path) -> None:
    referee = referee_or_skip()
    text = (LOGS / name).read_text(encoding="utf-8")
    shaped = text if exit_code is None else swebench_log(text, exit_code)
    (tmp_path / "log.txt").write_text(shaped)
    f2p, p2p = ROWS[iid]["FAIL_TO_PASS"], ROWS[iid]["PASS_TO_PASS"]
    theirs = referee.grade(iid, f2p, p2p, "pass_and_fail", "a patch", tmp_path / "log.txt", repo="sympy/sympy",
                           log_parser="parse_log_sympy")
    result = InstanceEval(instance_id=iid, status="error", runner="sympy")
    judge(result, f2p, p2p, EvalEvidence(runner="sympy", log=shaped, exit_code=exit_code or 0), None)
    assert theirs["resolved"] == (result.resolution == "RESOLVED_FULL") == resolved
    assert {k: theirs["tests_status"][k] for k in ("FAIL_TO_PASS", "PASS_TO_PASS")} == result.tests_status
