"""The failing tests named in a test run's output (pytest and unittest), for the task page."""

from __future__ import annotations

import re

# pytest's short summary ("FAILED tests/t.py::test_x - AssertionError"), its -v/-rA lines
# ("tests/t.py::test_x FAILED"), and unittest's headers ("FAIL: test_x (pkg.TestCase.test_x)").
_PYTEST_SUMMARY = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$")
_PYTEST_VERBOSE = re.compile(r"^(\S+::\S+) (?:FAILED|ERROR)\b")
_UNITTEST = re.compile(r"^(?:FAIL|ERROR): (\S+(?: \(\S+\))?)$")
MAX_FAILING = 200


def failing_tests(output: str) -> list[str]:
    """Each failing test once, in the order the output names them."""
    found: dict[str, None] = {}
    for line in output.split("\n"):
        line = line.strip()
        name = _match(line)
        if name and name not in found:
            found[name] = None
            if len(found) >= MAX_FAILING:
                break
    return list(found)


def _match(line: str) -> str | None:
    for pattern in (_PYTEST_SUMMARY, _PYTEST_VERBOSE, _UNITTEST):
        m = pattern.match(line)
        if m:
            return m.group(1)
    return None
