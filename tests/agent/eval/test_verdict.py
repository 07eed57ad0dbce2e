"""The verdict from evidence alone: statuses, an empty patch, --strict, and the files a run keeps."""

from __future__ import annotations

import gzip
from pathlib import Path

from agent.eval import store
from agent.eval.job import ApplyRecord, EvalEvidence
from agent.eval.report import render_table, results_summary, swebench_report
from agent.eval.verdict import EMPTY_PATCH, InstanceEval, judge

PASSING = ('<testsuites><testsuite><testcase classname="tests.test_a" name="test_a"/>'
           '<testcase classname="tests.test_a" name="test_b"/></testsuite></testsuites>')
F2P, P2P = ["tests/test_a.py::test_a"], ["tests/test_a.py::test_b"]


def judged(evidence: EvalEvidence, **kw: object) -> InstanceEval:
    result = InstanceEval.model_validate({"instance_id": "i", "status": "error", **kw})
    return judge(result, F2P, P2P, evidence, evidence.junit_xml)


def test_statuses_from_the_evidence() -> None:
    applied = ApplyRecord(command="git apply --verbose")
    assert judged(EvalEvidence(model_patch=applied, junit_xml=PASSING, exit_code=0)).status == "resolved"
    failed = judged(EvalEvidence(model_patch=ApplyRecord(tried=["git apply --verbose: error: corrupt patch"])))
    assert failed.status == "patch_failed" and "corrupt patch" in (failed.error or "")
    harness = EvalEvidence(model_patch=applied)
    harness.fail("environment", "environment: no wheel for x")
    errored = judged(harness)
    assert errored.status == "error" and errored.error_kind == "environment" and errored.fail_to_pass == {
        F2P[0]: "missing"}
    cause = "pytest wrote no report (exit 4): ERROR: usage"
    no_report = judged(EvalEvidence(model_patch=applied, no_report=cause, exit_code=4))
    assert no_report.status == "unresolved" and no_report.error == cause and not no_report.trusted


def test_an_empty_patch_is_never_resolved_and_strict_turns_flagged_down() -> None:
    empty = judged(EvalEvidence(junit_xml=PASSING, exit_code=0), empty_patch=True)
    assert empty.status == "unresolved" and empty.resolution == "RESOLVED_FULL"
    assert empty.verdict_notes[0].startswith(EMPTY_PATCH) and "do not fail at base" in empty.verdict_notes[0]
    flagged = EvalEvidence(model_patch=ApplyRecord(command="git apply --verbose"), junit_xml=PASSING, exit_code=0,
                           flagged=["tests/conftest.py"])
    assert judged(flagged).status == "resolved"
    strict = judged(flagged, strict=True)
    assert strict.status == "unresolved" and "tests/conftest.py" in (strict.error or "")
    again = judge(strict, F2P, P2P, None, PASSING)  # a regrade: the same verdict, notes not doubled
    assert again.status == "unresolved" and again.verdict_notes == []


def test_the_kept_files_and_swebench_shapes(tmp_path: Path) -> None:
    evidence = EvalEvidence(model_patch=ApplyRecord(command="git apply --verbose"), junit_xml=PASSING, exit_code=0,
                            log="$ pytest\nPASSED tests/test_a.py::test_a")
    result = judged(evidence, fingerprint="abc")
    store.write_instance(tmp_path / "i", result, evidence, "diff --git a/x b/x\n")
    log = gzip.decompress((tmp_path / "i" / store.LOG).read_bytes()).decode()
    assert log == (">>>>> Start Test Output\n$ pytest\nPASSED tests/test_a.py::test_a\n>>>>> End Test Output\n"
                   ">>>>> Test Exit Code: 0\n")
    kept = store.finished(tmp_path / "i", "abc")
    assert kept is not None and kept.files == {"junit": "junit.xml", "log": store.LOG, "patch": "patch.diff"}
    assert store.read_junit(tmp_path / "i", kept) == PASSING and store.finished(tmp_path / "i", "other") is None
    report = (tmp_path / "i" / "report.json").read_text()
    assert '"patch_successfully_applied": true' in report and '"resolved": true' in report
    assert '"infra_failure": false' in report and '"tests_status"' in report
    store.clear(tmp_path / "i")
    assert store.read_instance(tmp_path / "i") is None and not (tmp_path / "i" / store.LOG).exists()


def test_swebench_s_instance_report_has_no_tests_status_for_a_log_it_would_not_grade() -> None:
    """diskcache's --cov-fail-under=98: every test passed, pytest exited 1. SWE-bench's get_eval_report writes no
    tests_status for such a log (nor for an environment that failed, then infra_failure); codebox wrote one."""
    applied = ApplyRecord(command="git apply --verbose")
    untrusted = judged(EvalEvidence(model_patch=applied, junit_xml=PASSING, exit_code=1))
    assert untrusted.status == "unresolved" and untrusted.tests_status  # eval.json keeps codebox's reading
    assert store.swebench_instance_report(untrusted) == {"i": {
        "patch_is_None": False, "patch_exists": True, "patch_successfully_applied": False, "resolved": False,
        "infra_failure": False}}
    broken = EvalEvidence(model_patch=applied)
    broken.fail("environment", "environment: no wheel for x")
    report = store.swebench_instance_report(judged(broken))["i"]
    assert isinstance(report, dict) and report["infra_failure"] is True and "tests_status" not in report


def test_run_summaries_count_as_swebench_counts() -> None:
    def one(iid: str, status: str, **kw: object) -> InstanceEval:
        return InstanceEval.model_validate({"instance_id": iid, "status": status, **kw})

    results = [one("a", "resolved"), one("b", "unresolved", no_report="x"), one("c", "patch_failed"),
               one("d", "unresolved", empty_patch=True), one("e", "error", error_kind="sandbox", harness_error="x"),
               one("f", "unresolved", flagged=["conftest.py"])]
    report = swebench_report(results, ["a", "b", "c", "d", "e", "f", "g", "h"], ["a", "b", "c", "d", "e", "f", "g"])
    assert report["resolved_ids"] == ["a"] and report["unresolved_ids"] == ["b", "f"]
    assert report["empty_patch_ids"] == ["d"] and report["completed_ids"] == ["a", "b", "f"]
    assert report["error_ids"] == ["c", "e", "g"] and report["incomplete_ids"] == ["h"]
    assert report["infra_failure_ids"] == ["e"] and report["ambiguous_failure_ids"] == ["b"]
    assert report["not_evaluated_ids"] == ["g"] and report["submitted_instances"] == 7
    summary = results_summary(results, strict=False)
    assert summary["flagged"] == {"f": ["conftest.py"]} and summary["empty_patch"] == ["d"]
    table = render_table(results)
    assert "6 instances: 1 resolved · 3 unresolved · 1 patch_failed · 1 error · 1 flagged" in table
    assert next(line for line in table.splitlines() if line.startswith("d ")).endswith(
        "empty patch (report.json: empty_patch_ids)")


def test_entries_that_are_no_test_id_are_not_graded_and_said() -> None:
    result = InstanceEval(instance_id="i", status="error")
    judge(result, F2P, [*P2P, "[100%]", "["], EvalEvidence(junit_xml=PASSING, exit_code=0), PASSING)
    assert result.status == "resolved" and result.pass_to_pass["[100%]"] == result.pass_to_pass["["] == "not_a_test"
    assert "2 entries are no pytest test id ('[100%]', '[')" in result.verdict_notes[0]
    assert "[100%]" not in str(result.tests_status)


def test_a_repository_s_ids_are_read_as_its_swebench_parser_writes_them() -> None:
    junit = ('<testsuites><testsuite><testcase classname="tests.test_functional" '
             'name="test_functional[/repo/tests/functional/r/recursion_error_3152.py]"/></testsuite></testsuites>')
    named = ["tests/test_functional.py::test_functional[/recursion_error_3152.py]"]
    for repo, expected in (("pylint-dev/pylint", "resolved"), ("pallets/flask", "unresolved")):
        result = InstanceEval.model_validate({"instance_id": "i", "status": "error", "dataset": {"repo": repo}})
        assert judge(result, named, [], EvalEvidence(junit_xml=junit, exit_code=0), junit).status == expected


def test_a_log_runner_is_graded_from_its_log_and_regraded_from_the_kept_one() -> None:
    log = "test_Mod ok\ntest_Mul F\n"
    result = InstanceEval(instance_id="i", status="error")
    judge(result, ["test_Mod"], ["test_Mul"], EvalEvidence(runner="sympy", log=log, exit_code=1), None)
    assert result.runner == "sympy" and result.fail_to_pass == {"test_Mod": "passed"}
    assert result.pass_to_pass == {"test_Mul": "failed"} and result.status == "unresolved" and result.trusted
    again = judge(result, ["test_Mod"], ["test_Mul"], None, None, store.swebench_log(log, 1))
    assert again.tests_status == result.tests_status


def test_a_language_s_row_is_graded_by_its_own_test_names() -> None:
    """Go's, Node's, Rust's names are graded exactly (no pytest id forms); a package of the suite that fails to
    build fails the run with no test failed, and the named tests are graded all the same."""
    from agent.eval.junit import junit_from_outcomes

    outcomes = {"TestAdd": "passed", "TestAdd/small": "passed", "TestMul": "failed", "suite > adds": "passed",
                "tests::adds": "passed"}
    junit = junit_from_outcomes(outcomes)
    for runner, f2p, p2p in (("go", ["TestAdd", "TestAdd/small"], ["TestMul"]), ("node", ["suite > adds"], []),
                             ("rust", ["tests::adds"], [])):
        result = InstanceEval(instance_id="i", status="error")
        judge(result, f2p, p2p, EvalEvidence(runner=runner, junit_xml=junit, exit_code=1), junit)
        assert result.runner == runner and not result.verdict_notes, result.verdict_notes
        assert result.tests_status["FAIL_TO_PASS"]["success"] == f2p and result.trusted
        assert result.status == ("unresolved" if p2p else "resolved"), (runner, result.error)
    prefix = InstanceEval(instance_id="i", status="error")  # "TestAd" is no test of the run, not TestAdd's prefix
    judge(prefix, ["TestAd", "TestAdd/smal"], [], EvalEvidence(runner="go", junit_xml=junit, exit_code=0), junit)
    assert prefix.status == "unresolved" and prefix.missing_tests == ["TestAd", "TestAdd/smal"]
    again = judge(prefix, ["TestAdd"], [], None, junit)  # a regrade finds the language by eval.json's runner
    assert again.status == "resolved"
