"""go test's machine output (``-json``: one test2json event a line) read per test, never its prose."""

from __future__ import annotations

import json
from typing import Any

from agent.languages.base import unique_names

_OUTCOMES = {"pass": "passed", "fail": "failed", "skip": "skipped"}


def events(output: str) -> list[dict[str, Any]]:
    found = []
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and isinstance(event.get("Action"), str):
                found.append(event)
    return found


def outcomes(output: str) -> dict[str, str]:
    """Each test's outcome by its name (``TestAdd``, ``TestAdd/sub``): failed if it failed in any package."""
    result: dict[str, str] = {}
    for event in events(output):
        name, outcome = event.get("Test"), _OUTCOMES.get(event["Action"])
        if isinstance(name, str) and outcome and result.get(name) != "failed":
            result[name] = outcome
    return result


def failing_tests(output: str) -> list[str]:
    return unique_names([str(e["Test"]) for e in events(output)
                         if e["Action"] == "fail" and isinstance(e.get("Test"), str)])


def counts(output: str) -> dict[str, int]:
    total = {"passed": 0, "failed": 0, "skipped": 0}
    for outcome in outcomes(output).values():
        total[outcome] += 1
    return total
