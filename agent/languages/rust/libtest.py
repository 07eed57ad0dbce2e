"""libtest's machine output (``-Z unstable-options --format json``, one JSON object a line) read per test.

cargo prints its own progress (Compiling, Running ...) in prose on stderr; only the lines that parse as
libtest's events count, so nothing here is a regex over prose.
"""

from __future__ import annotations

import json
from typing import Any

from agent.languages.base import unique_names

# libtest's events, as the outcome names the rest of codebox grades by (SWE-bench's PASSED/FAILED/SKIPPED).
_OUTCOMES = {"ok": "passed", "failed": "failed", "ignored": "skipped", "timeout": None}


def events(output: str) -> list[dict[str, Any]]:
    """The libtest events in ``output`` (other lines skipped), in order."""
    found: list[dict[str, Any]] = []
    for line in output.splitlines():
        line = line.strip()
        if not (line.startswith("{") and line.endswith("}")):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") in ("test", "suite", "bench"):
            found.append(event)
    return found


def outcomes(output: str) -> dict[str, str]:
    """Each test's outcome (passed, failed, skipped) by its libtest name ("tests::adds", "src/lib.rs - f (line
    3)"). A name run in several binaries (a lib test and an integration test of one name) counts as failed
    if it failed in any."""
    result: dict[str, str] = {}
    for event in events(output):
        name, outcome = event.get("name"), _OUTCOMES.get(str(event.get("event")))
        if event.get("type") != "test" or not isinstance(name, str) or outcome is None:
            continue
        if result.get(name) != "failed":
            result[name] = outcome
    return result


def failing_tests(output: str) -> list[str]:
    """The failing tests, each once, in the order they failed."""
    return unique_names([str(e["name"]) for e in events(output)
                         if e.get("type") == "test" and e.get("event") == "failed" and isinstance(e.get("name"), str)])


def counts(output: str) -> dict[str, int]:
    """passed / failed / skipped over every test binary the run went through (libtest's suite lines)."""
    total = {"passed": 0, "failed": 0, "skipped": 0}
    for event in events(output):
        if event.get("type") == "suite" and event.get("event") in ("ok", "failed"):
            for key, field in (("passed", "passed"), ("failed", "failed"), ("skipped", "ignored")):
                value = event.get(field)
                total[key] += value if isinstance(value, int) else 0
    return total
