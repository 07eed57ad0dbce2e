"""The failing tests named from a test run's output: pytest, unittest, go test."""

from __future__ import annotations

from agent.languages.base import MAX_NAMES
from agent.languages.registry import failing_tests

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


def test_only_the_run_s_own_summary_when_a_test_ran_pytest_inside_pytest() -> None:
    """pytest-mock's suite (3.15, measured): its introspection tests run pytest in pytest, and a
    failing one prints the inner run's summary in its captured output."""
    output = """\
..F.F
=================================== FAILURES ===================================
_________________________ test_detailed_introspection __________________________
----------------------------- Captured stdout call -----------------------------
=========================== short test summary info ============================
FAILED test_detailed_introspection.py::test - AssertionError: assert 1 == 2
============================== 1 failed in 0.01s ===============================
=========================== short test summary info ============================
FAILED tests/test_pytest_mock.py::test_detailed_introspection - Failed: nomatch
FAILED tests/test_pytest_mock.py::test_assert_called_args_with_introspection
2 failed, 87 passed, 5 warnings in 5.13s
"""
    assert failing_tests(output) == ["tests/test_pytest_mock.py::test_detailed_introspection",
                                     "tests/test_pytest_mock.py::test_assert_called_args_with_introspection"]
    # -v lines with no summary (-rN): read as before
    assert failing_tests("tests/t.py::test_a PASSED\ntests/t.py::test_b FAILED\n") == ["tests/t.py::test_b"]
