"""The names of the failing tests, read out of a test run's output (pytest, unittest, go test)."""

from __future__ import annotations

import re

MAX_NAMES = 50

# pytest's short summary: "FAILED tests/test_a.py::test_x - AssertionError ..." (also ERROR),
# and its -v / -rA lines: "tests/test_a.py::test_x FAILED".
_PYTEST = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$")  # node ids may hold spaces (parametrize ids)
_PYTEST_VERBOSE = re.compile(r"^(\S+::\S+) (?:FAILED|ERROR)\b")
# unittest: "FAIL: test_x (tests.test_a.TestA.test_x)" (3.11+) or "FAIL: test_x (tests.test_a.TestA)".
_UNITTEST = re.compile(r"^(?:FAIL|ERROR): (\S+) \(([^)\s]+)\)")
# go test: "--- FAIL: TestX (0.00s)".
_GO = re.compile(r"^\s*--- FAIL: (\S+)")


def failing_tests(output: str) -> list[str]:
    """Each failing test once, in the order the output names them (at most MAX_NAMES)."""
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
    if match := _GO.match(line):
        return match.group(1)
    return None
