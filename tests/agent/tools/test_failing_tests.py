"""The failing tests named from a test run's output: pytest, unittest, go test."""

from __future__ import annotations

from agent.tools.test_names import MAX_NAMES, failing_tests

PYTEST = """\
..F.E
=================================== FAILURES ===================================
___________________________________ test_x ____________________________________
E   assert 1 == 2
=========================== short test summary info ============================
FAILED tests/test_a.py::test_x - assert 1 == 2
FAILED tests/test_a.py::test_p[1-2]
ERROR tests/test_b.py - ImportError: no module named zz
XFAIL tests/test_a.py::test_known - reason
FAILED tests/test_a.py::test_x - again
1 failed, 2 passed
"""

UNITTEST = """\
======================================================================
FAIL: test_add (tests.test_calc.CalcTest.test_add)
----------------------------------------------------------------------
ERROR: test_div (tests.test_calc.CalcTest)
"""


def test_pytest_short_summary() -> None:
    assert failing_tests(PYTEST) == ["tests/test_a.py::test_x", "tests/test_a.py::test_p[1-2]", "tests/test_b.py"]


def test_unittest_old_and_new_formats() -> None:
    assert failing_tests(UNITTEST) == ["tests.test_calc.CalcTest.test_add", "tests.test_calc.CalcTest.test_div"]


def test_go_test() -> None:
    assert failing_tests("=== RUN   TestA\n--- FAIL: TestA (0.00s)\n    --- FAIL: TestA/sub (0.00s)\n") == [
        "TestA", "TestA/sub"]


def test_a_passing_run_names_nothing_and_the_list_is_bounded() -> None:
    assert failing_tests("....\n4 passed in 0.01s\n") == []
    many = "".join(f"FAILED t.py::test_{i}\n" for i in range(500))
    assert len(failing_tests(many)) == MAX_NAMES
