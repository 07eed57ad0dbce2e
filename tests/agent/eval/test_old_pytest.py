"""Grading on a pytest older than 3.5 (no report.user_properties; before 2.8 no pytest.hookimpl): boot_pytest's own
plugin, in the plain hook style, keeps each outcome and writes the JUnit report the host reads."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from agent.eval import boot_pytest, junit
from agent.eval.boot_pytest import OWN_REPORT_BELOW, OldPytestOutcomes, old_args, old_status, write_junit
from agent.eval.grading import ERROR, FAILED, PASSED, SKIPPED, XFAIL
from agent.eval.junit import collection_errors, junit_cases, junit_key, status_map
from agent.eval.pytest_run import pytest_argv


def report(when: str, outcome: str, **extra: Any) -> SimpleNamespace:
    return SimpleNamespace(when=when, outcome=outcome, passed=outcome == "passed", failed=outcome == "failed",
                           skipped=outcome == "skipped", keywords=extra.pop("keywords", {}), **extra)


def test_each_report_reads_as_pytest_8_s_summary_would_in_every_pytest_since_2_2() -> None:
    assert old_status(report("call", "passed"), (3, 4)) == "PASSED"
    assert old_status(report("call", "failed"), (3, 4)) == "FAILED"
    assert old_status(report("setup", "passed"), (3, 4)) == ""
    assert old_status(report("setup", "failed"), (3, 4)) == "ERROR"
    assert old_status(report("teardown", "failed"), (2, 7)) == "ERROR"
    assert old_status(report("setup", "skipped"), (3, 4)) == "SKIPPED"
    assert old_status(report("setup", "skipped", wasxfail="reason"), (3, 4)) == "XFAIL"
    assert old_status(report("call", "skipped", wasxfail="reason"), (2, 7)) == "XFAIL"
    assert old_status(report("call", "failed", wasxfail=""), (2, 7)) == "XPASS"  # 2.x: a non-strict XPASS fails
    assert old_status(report("call", "passed", wasxfail=""), (3, 4)) == "XPASS"  # 3.x: it passes
    # pytest 2.2: no wasxfail; the outcome's `xfail` keyword says it (a marked test that ran plainly has none).
    assert old_status(report("call", "skipped", keywords={"xfail": "reason: x"}), (2, 2)) == "XFAIL"
    assert old_status(report("call", "failed", keywords={"xfail": "reason: x"}), (2, 2)) == "XPASS"
    # Later, keywords are the node's marks: an xfail mark alone says nothing.
    assert old_status(report("call", "failed", keywords={"xfail": 1}), (3, 4)) == "FAILED"


def test_the_report_written_is_read_by_the_host_as_pytest_s_own_with_ids_as_datasets_write_them(
        tmp_path: Any) -> None:
    plugin = OldPytestOutcomes((3, 4))
    plugin.config = SimpleNamespace(cwd_relative_nodeid=lambda nodeid: nodeid)
    for nodeid, rep in [("tests/test_r.py::Suite::()::test_get", report("call", "passed")),
                        ("tests/test_r.py::Suite::()::test_post", report("call", "failed", longrepr="E  boom")),
                        ("tests/test_r.py::Suite::()::test_post", report("teardown", "failed", longrepr="E  x")),
                        ("tests/test_r.py::test_p[a-1]", report("call", "passed")),
                        ("tests/test_r.py::test_later", report("setup", "skipped", longrepr=("f", 1, "no"))),
                        ("tests/test_r.py::test_known", report("call", "skipped", wasxfail="bug")),
                        ("tests/test_r.py::test_fixed", report("call", "passed", wasxfail="bug"))]:
        rep.nodeid = nodeid
        plugin.pytest_runtest_logreport(rep)
    plugin.pytest_collectreport(SimpleNamespace(nodeid="tests/test_broken.py", failed=True,
                                                longrepr="E   ImportError: No module named 'nose'"))
    path = tmp_path / "junit.xml"
    write_junit(plugin.cases, str(path))
    xml = path.read_text(encoding="utf-8")
    status = status_map(junit_cases(xml))
    assert status == {junit_key("tests/test_r.py::Suite::test_get"): PASSED,
                      junit_key("tests/test_r.py::test_p[a-1]"): PASSED,
                      junit_key("tests/test_r.py::test_later"): SKIPPED,
                      junit_key("tests/test_r.py::test_known"): XFAIL,
                      junit_key("tests/test_r.py::Suite::test_post"): FAILED,  # -rA: its FAILED line is the last
                      ("", "tests/test_broken.py"): ERROR}  # a module that could not be collected, as pytest writes it
    assert ERROR in {s for _key, s in junit_cases(xml)}  # its teardown error is there too; the XPASS is left out
    assert collection_errors(xml) == ["tests/test_broken.py: ImportError: No module named 'nose'"]


def test_an_old_pytest_gets_no_option_it_lacks_and_the_host_s_names_are_the_plugin_s() -> None:
    argv = pytest_argv(["tests/test_r.py"])[3:]
    assert old_args(argv, (2, 2)) == ["-rpsxXEf", "-p", "no:cacheprovider", "tests/test_r.py"]
    assert old_args(argv, (3, 4)) == ["-rpsxXEf", "--color=no", "-p", "no:cacheprovider", "tests/test_r.py"]
    assert (boot_pytest.XPASS_PROPERTY, boot_pytest.NODEID_PROPERTY) == (junit.XPASS_PROPERTY, junit.NODEID_PROPERTY)
    assert OWN_REPORT_BELOW == (3, 5)
