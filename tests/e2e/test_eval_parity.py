"""The parity test: the `swebench` package's own parser and grading judge the logs codebox kept, and agree.

One fixture project, one instance per grading rule (eval_fixtures.py): XFAIL passes, a skipped
PASS_TO_PASS is maintained and a skipped FAIL_TO_PASS is not, XPASS and teardown errors fail,
the test files reset before the test_patch, the fuzzy apply, ids cut inside their parameters,
fail_only, a run that contradicts its exit status, collection errors, pytest that cannot start,
a conftest that rewrites outcomes. Any disagreement on an instance's resolution, or on which
named tests succeed and fail, fails the test. An empty patch is graded on both sides too
(SWE-bench's harness does not run it; its grading of the same log still must agree).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.cli.parser import main
from agent.eval.junit import junit_cases, junit_key, status_map
from agent.eval.store import read_log
from tests.e2e.eval_fixtures import Case, build, write_inputs
from tests.e2e.swebench_referee import Referee, referee_or_skip

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def referee() -> Referee:
    return referee_or_skip()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, referee: Referee) -> tuple[Path, dict[str, Case]]:
    folder = tmp_path_factory.mktemp("parity")
    base, test_patch, cases = build(folder / "repos" / "acme" / "calc")
    tasks, preds = write_inputs(folder, base, test_patch, cases)
    code = main(["eval", "--dataset", str(tasks), "--predictions", str(preds), "--out", str(folder / "out"),
                 "--repos", str(folder / "repos"), "--jobs", "2"])
    assert code == 0
    return folder / "out", cases


def test_every_instance_is_judged_as_codebox_expects(run: tuple[Path, dict[str, Case]]) -> None:
    out, cases = run
    for iid, case in cases.items():
        result = json.loads((out / iid / "eval.json").read_text())
        assert result["status"] == case.expected, (iid, result["error"])
        assert bool(result["flagged"]) == case.flagged, (iid, result["flagged"])


def test_swebench_grades_codebox_logs_the_same(run: tuple[Path, dict[str, Case]], referee: Referee,
                                               tmp_path: Path) -> None:
    out, cases = run
    disagreements: list[str] = []
    for iid, case in cases.items():
        result = json.loads((out / iid / "eval.json").read_text())
        if result["status"] == "patch_failed":
            continue  # no log: SWE-bench stops at the apply step too (its error_ids)
        log = read_log(out / iid)
        assert (log is not None and "short test summary" in log) or result["no_report"], iid
        log_path = tmp_path / f"{iid}.txt"
        log_path.write_text(log or "")
        theirs = referee.grade(iid, case.f2p, case.p2p, case.eval_type, case.patch or "empty", log_path)
        ours_resolved = result["resolution"] == "RESOLVED_FULL"
        if theirs["resolved"] != ours_resolved:
            disagreements.append(f"{iid}: swebench resolved={theirs['resolved']}, codebox {result['resolution']}")
        if theirs["patch_successfully_applied"] != result["trusted"]:
            disagreements.append(f"{iid}: swebench trusts the log: {theirs['patch_successfully_applied']}")
        for label in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            for side in ("success", "failure"):
                mine = sorted(result["tests_status"].get(label, {}).get(side, []))
                their = sorted(theirs.get("tests_status", {}).get(label, {}).get(side, []))
                if theirs.get("tests_status") and mine != their:
                    disagreements.append(f"{iid} {label} {side}: swebench {their}, codebox {mine}")
    assert disagreements == []


def test_swebench_parses_the_same_outcome_for_every_test(run: tuple[Path, dict[str, Case]], referee: Referee) -> None:
    """Not only the named tests: every test of the log, SWE-bench's parser against codebox's JUnit reading
    (a node id with a space is cut by SWE-bench's parser at the space: those are left out)."""
    out, cases = run
    for iid in cases:
        junit = out / iid / "junit.xml"
        log = read_log(out / iid)
        if not junit.exists() or log is None:
            continue
        ours = status_map(junit_cases(junit.read_text()))
        theirs = referee.parse_log_pytest(log, None)
        theirs = {junit_key(k): v for k, v in theirs.items() if "::" in k and k.count("[") == k.count("]")}
        mine = {k: v for k, v in ours.items() if k[0] and " " not in k[1]}
        assert theirs == mine, iid


def test_the_run_report_has_swebench_keys_and_counts(run: tuple[Path, dict[str, Case]], referee: Referee) -> None:
    out, cases = run
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    assert referee.report_keys <= set(report)
    assert report["empty_patch_ids"] == ["empty"] and "empty" not in report["completed_ids"]
    assert report["error_ids"] == ["broken"] and report["submitted_instances"] == len(cases)
    assert report["resolved_instances"] == sum(c.expected == "resolved" for c in cases.values())
    assert "minversion" in report["ambiguous_failure_ids"]
    per_instance = json.loads((out / "gold" / "report.json").read_text())
    assert per_instance["gold"]["resolved"] and per_instance["gold"]["patch_successfully_applied"]
