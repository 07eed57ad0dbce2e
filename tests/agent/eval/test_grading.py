"""SWE-bench's grading rules, on JUnit XML read as its parser reads the -rA summary of the same run."""

from __future__ import annotations

from agent.eval import grading
from agent.eval.junit import XPASS, collection_errors, junit_cases, junit_key, node_file, status_map
from agent.eval.verdict import InstanceEval, judge

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_a" name="test_ok" file="tests/test_a.py"/>
<testcase classname="tests.test_a.TestC" name="test_m[x::y-1]"><failure message="boom"/></testcase>
<testcase classname="tests.test_a" name="test_skip"><skipped type="pytest.skip" message="s"/></testcase>
<testcase classname="tests.test_a" name="test_xfail"><skipped type="pytest.xfail" message="r"/></testcase>
<testcase classname="tests.test_a" name="test_xpass"><properties>
  <property name="codebox.outcome" value="xpassed"/></properties></testcase>
<testcase classname="tests.test_a" name="test_teardown"/>
<testcase classname="tests.test_a" name="test_teardown"><error message="teardown"/></testcase>
<testcase classname="tests.test_a" name="test_p[a b]"/>
<testcase classname="tests.test_a" name="test_p[a c]"><skipped type="pytest.skip" message="s"/></testcase>
<testcase classname="" name="tests.test_b"><error message="collection failure">Traceback
E   ModuleNotFoundError: No module named 'dateutil'</error></testcase>
</testsuite></testsuites>"""


def verdict(f2p: list[str], p2p: list[str], junit: str = JUNIT, exit_code: int | None = 1,
            **kw: object) -> InstanceEval:
    result = InstanceEval.model_validate({"instance_id": "i", "status": "error", "exit_code": exit_code, **kw})
    return judge(result, f2p, p2p, None, junit)


def test_the_id_the_summary_wrote_is_the_key_when_the_rootdir_is_not_the_repo() -> None:
    # rich's tests/pytest.ini: JUnit says classname="test_table", the summary tests/test_table.py::test_x
    xml = ('<testsuite><testcase classname="test_table" name="test_x[a]"><properties>'
           '<property name="codebox.nodeid" value="tests/test_table.py::test_x[a]"/></properties></testcase>'
           '<testcase classname="test_table" name="test_y"><failure message="no"/></testcase></testsuite>')
    assert junit_cases(xml) == [(junit_key("tests/test_table.py::test_x[a]"), "PASSED"),
                                (("test_table", "test_y"), "FAILED")]


def test_junit_reads_as_the_summary_would() -> None:
    cases = junit_cases(JUNIT)
    sm = status_map(cases)
    assert sm[junit_key("tests/test_a.py::test_ok")] == "PASSED"
    assert sm[junit_key("tests/test_a.py::TestC::test_m[x::y-1]")] == "FAILED"
    assert sm[junit_key("tests/test_a.py::test_skip")] == "SKIPPED"
    assert sm[junit_key("tests/test_a.py::test_xfail")] == "XFAIL"
    xpass = junit_key("tests/test_a.py::test_xpass")
    assert xpass not in sm and (xpass, XPASS) in cases
    assert sm[junit_key("tests/test_a.py::test_teardown")] == "ERROR"  # the later summary line wins
    order = list(sm)  # -rA's order: passed lines first, then skipped, xfail, errors, failures
    assert order[0] == junit_key("tests/test_a.py::test_ok")
    assert order[-1] == junit_key("tests/test_a.py::TestC::test_m[x::y-1]")
    assert node_file("tests/test_a.py::TestC::test_m[x::y-1]") == "tests/test_a.py" and node_file("t (m.C)") is None
    assert collection_errors(JUNIT) == ["tests.test_b: ModuleNotFoundError: No module named 'dateutil'"]


def test_xfail_passes_skipped_is_maintained_only_for_pass_to_pass() -> None:
    ok = verdict(["tests/test_a.py::test_ok", "tests/test_a.py::test_xfail"], ["tests/test_a.py::test_skip"])
    assert ok.status == "resolved" and ok.fail_to_pass["tests/test_a.py::test_xfail"] == "xfail"
    assert ok.pass_to_pass == {"tests/test_a.py::test_skip": "skipped"}
    skipped_f2p = verdict(["tests/test_a.py::test_skip"], [])
    assert skipped_f2p.status == "unresolved" and skipped_f2p.tests_status["FAIL_TO_PASS"]["failure"]


def test_xpass_failure_error_and_absent_tests_fail() -> None:
    for name in ("tests/test_a.py::test_xpass", "tests/test_a.py::TestC::test_m[x::y-1]",
                 "tests/test_a.py::test_teardown", "tests/test_a.py::test_nope"):
        result = verdict(["tests/test_a.py::test_ok"], [name])
        assert result.status == "unresolved" and result.tests_status["PASS_TO_PASS"]["failure"] == [name]
    xpass = verdict([], ["tests/test_a.py::test_xpass"]).pass_to_pass
    assert xpass == {"tests/test_a.py::test_xpass": "xpass"}
    missing = verdict(["tests/test_a.py::test_nope"], [])
    assert missing.missing_tests == ["tests/test_a.py::test_nope"]
    assert "collection failed: tests.test_b" in (missing.error or "")


def test_ids_relative_to_a_subfolder_are_not_found_and_the_error_says_why() -> None:
    cut = JUNIT.index('<testcase classname="" name="tests.test_b">')
    no_collection_error = JUNIT[:cut] + "</testsuite></testsuites>"
    relative = verdict(["test_a.py::test_ok"], [], junit=no_collection_error)  # as if named from tests/
    assert relative.status == "unresolved" and relative.missing_tests == ["test_a.py::test_ok"]
    assert "but tests.test_a::test_ok ran" in (relative.error or "") and "from the repository root" in (
        relative.error or "")
    absent = verdict(["tests/test_a.py::test_nope"], [], junit=no_collection_error)
    assert "(no such test?)" in (absent.error or "")


def test_ids_cut_inside_their_parameters_match_when_the_tests_agree() -> None:
    mixed = verdict(["tests/test_a.py::test_ok"], ["tests/test_a.py::test_p[a"])
    assert mixed.status == "unresolved"  # PASSED (passing) and SKIPPED (not passing) disagree: no match, failed
    only_pass = JUNIT.replace('<testcase classname="tests.test_a" name="test_p[a c]"><skipped type="pytest.skip" '
                              'message="s"/></testcase>', "")
    cut = verdict(["tests/test_a.py::test_p[a"], [], junit=only_pass)
    assert cut.status == "resolved" and cut.fail_to_pass == {"tests/test_a.py::test_p[a": "passed"}


def test_an_id_cut_at_a_space_after_its_brackets_close_matches_too() -> None:
    """loguru 258326b: test_formatting[HHmmss]-2018-01-03 11:03:04.000002-timezone20-110304]] is, cut at the space as
    SWE-bench's parser cuts it, test_formatting[HHmmss]-2018-01-03: its brackets balance, so it was not taken for a
    cut id, and a gold patch was unresolved ('no such test?') where SWE-bench resolves it."""
    xml = ('<testsuite><testcase classname="tests.test_d" name="test_f[HH]-2018-01-03 11:03-tz20-1103]]"/>'
           '<testcase classname="tests.test_d" name="test_f[HH]-2018-01-03x"><failure message="no"/></testcase>'
           '<testcase classname="tests.test_d" name="test_g[a]"/></testsuite>')
    cut = verdict(["tests/test_d.py::test_f[HH]-2018-01-03"], [], junit=xml, exit_code=1)
    assert cut.status == "resolved" and cut.fail_to_pass == {"tests/test_d.py::test_f[HH]-2018-01-03": "passed"}
    # balanced and not followed by a space: another test, never this one
    assert verdict(["tests/test_d.py::test_f[HH]-2018"], [], junit=xml).fail_to_pass == {
        "tests/test_d.py::test_f[HH]-2018": "missing"}
    assert verdict(["tests/test_d.py::test_g[a"], [], junit=xml).status == "resolved"  # the old rule still holds


def test_fail_only_counts_only_failed_tests_against() -> None:
    result = verdict(["tests/test_a.py::test_nope", "tests/test_a.py::test_skip"],
                     ["tests/test_a.py::test_teardown"], eval_type="fail_only")
    assert result.status == "resolved"
    assert verdict(["tests/test_a.py::TestC::test_m[x::y-1]"], [], eval_type="fail_only").status == "unresolved"


def test_a_run_that_contradicts_its_exit_status_is_not_trusted() -> None:
    passing = ('<testsuites><testsuite><testcase classname="t" name="test_a"/><testcase classname="t" '
               'name="test_b"><skipped type="pytest.xfail"/></testcase></testsuite></testsuites>')
    assert verdict(["t.py::test_a"], [], junit=passing, exit_code=0).status == "resolved"
    spoofed = verdict(["t.py::test_a"], [], junit=passing, exit_code=1)
    assert spoofed.status == "unresolved" and not spoofed.trusted and "exited 1" in (spoofed.error or "")
    empty = verdict(["t.py::test_a"], [], junit="<testsuites/>", exit_code=5)
    assert empty.status == "unresolved" and "no test result" in (empty.error or "")


def test_resolution_levels() -> None:
    report = {grading.F2P: {"success": ["a"], "failure": ["b"]}, grading.P2P: {"success": [], "failure": []}}
    assert grading.resolution(report) == grading.PARTIAL
    report[grading.P2P]["failure"] = ["c"]
    assert grading.resolution(report) == grading.NO
    assert grading.resolution({grading.F2P: {"success": [], "failure": []},
                               grading.P2P: {"success": [], "failure": []}}) == grading.FULL
