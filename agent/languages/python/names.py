"""The names of the failing tests, read out of a Python test run's output (pytest, unittest)."""

from __future__ import annotations

import re

from agent.languages.base import MAX_NAMES

# pytest's short summary: "FAILED tests/test_a.py::test_x - AssertionError ..." (also ERROR),
# and its -v / -rA lines: "tests/test_a.py::test_x FAILED".
_PYTEST = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$")  # node ids may hold spaces (parametrize ids)
_PYTEST_VERBOSE = re.compile(r"^(\S+::\S+) (?:FAILED|ERROR)\b")
# unittest: "FAIL: test_x (tests.test_a.TestA.test_x)" (3.11+) or "FAIL: test_x (tests.test_a.TestA)".
_UNITTEST = re.compile(r"^(?:FAIL|ERROR): (\S+) \(([^)\s]+)\)")


# The header of pytest's short summary; the last one in the output is the run's own.
_SUMMARY = re.compile(r"^=+ short test summary info =+$", re.MULTILINE)


def failing_tests(output: str) -> list[str]:
    """Each failing test once, in the order the output names them (at most MAX_NAMES).

    When pytest printed its short summary, only the last one is read: a failing test's captured
    output can hold another pytest's lines (pytest-mock's tests run pytest inside pytest, and its
    inner "FAILED test_detailed_introspection.py::test" is no test of the project)."""
    summaries = list(_SUMMARY.finditer(output))
    if summaries:
        output = output[summaries[-1].end():]
    names: list[str] = []
    for line in output.splitlines():
        name = _name(line.strip())
        if name and name not in names:
            names.append(name)
            if len(names) >= MAX_NAMES:
                break
    return names


def _name(line: str) -> str | None:
    if match := _PYTEST.match(line) or _PYTEST_VERBOSE.match(line):
        return match.group(1)
    if match := _UNITTEST.match(line):
        method, where = match.groups()
        return where if where.endswith("." + method) else f"{where}.{method}"
    return None
