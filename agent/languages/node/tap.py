"""node --test's TAP (``--test-reporter=tap``) read per test: each ``ok`` / ``not ok`` line, named by its
``# Subtest:`` path ("suite > test"), a ``# SKIP`` or ``# TODO`` directive read as skipped."""

from __future__ import annotations

import re

from agent.languages.base import unique_names

_SUBTEST = re.compile(r"^( *)# Subtest: (.*)$")
_RESULT = re.compile(r"^( *)(ok|not ok) \d+ - (.*?)(?: # (SKIP|TODO)\b.*)?$")
_COUNT = re.compile(r"^# (tests|pass|fail|skipped|todo|cancelled) (\d+)$", re.M)


def outcomes(output: str) -> dict[str, str]:
    """Each test's outcome (passed, failed, skipped) by its path; a suite is named as its tests' parent."""
    result: dict[str, str] = {}
    path: dict[int, str] = {}
    for line in output.splitlines():
        if match := _SUBTEST.match(line):
            depth = len(match.group(1)) // 4
            path = {d: n for d, n in path.items() if d < depth}
            path[depth] = _unescape(match.group(2))
        elif match := _RESULT.match(line):
            depth = len(match.group(1)) // 4
            parents = [path[d] for d in sorted(path) if d < depth]
            name = " > ".join([*parents, _unescape(match.group(3))])
            status = "skipped" if match.group(4) else "passed" if match.group(2) == "ok" else "failed"
            result[name] = status
    return result


def _unescape(name: str) -> str:
    return name.replace("\\#", "#").replace("\\\\", "\\")


def failing_tests(output: str) -> list[str]:
    return unique_names([name for name, status in outcomes(output).items() if status == "failed"])


def counts(output: str) -> dict[str, int]:
    """node's own closing counts (# pass, # fail, # skipped + # todo): its tests, suites left out."""
    found = {key: int(value) for key, value in _COUNT.findall(output)}
    return {"passed": found.get("pass", 0), "failed": found.get("fail", 0) + found.get("cancelled", 0),
            "skipped": found.get("skipped", 0) + found.get("todo", 0)}
