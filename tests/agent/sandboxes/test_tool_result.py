"""ToolResult and its closed list of outcomes: the server's outcomes are a part of it, the server
produces no other, and a report refuses one that is not on the list."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent.protocol import TestRun
from agent.sandboxes.result import OUTCOMES, ToolResult, failure
from sandbox import wire

ROOT = Path(__file__).resolve().parents[3]


def test_the_servers_outcomes_are_the_first_of_the_hosts() -> None:
    assert OUTCOMES[: len(wire.OUTCOMES)] == wire.OUTCOMES
    assert {"container_died", "sandbox_error", "denied", "refused", "interrupted"} <= set(OUTCOMES)
    assert "passed" not in OUTCOMES


def _outcomes_written_in(path: Path) -> set[str]:
    """The string constants given as ``outcome=`` or assigned to a name ``outcome``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.keyword) and node.arg == "outcome" and isinstance(node.value, ast.Constant):
            found.add(node.value.value)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and any(
            isinstance(t, ast.Name) and t.id == "outcome" for t in node.targets
        ):
            found.add(node.value.value)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):  # outcome, oom = "oom", "confirmed"
            for target in node.targets:
                if isinstance(target, ast.Tuple):
                    for name, value in zip(target.elts, node.value.elts, strict=False):
                        if isinstance(name, ast.Name) and name.id == "outcome" and isinstance(value, ast.Constant):
                            found.add(value.value)
    return found


def test_the_server_produces_only_its_listed_outcomes() -> None:
    written = set().union(*(_outcomes_written_in(p) for p in (ROOT / "sandbox").rglob("*.py")))
    assert {"ok", "error", "failed", "timeout", "oom"} <= written  # the check reads the tools at all
    assert written <= set(wire.OUTCOMES)


def test_shown_puts_a_failures_one_line_error_first_once() -> None:
    assert ToolResult("out").shown() == "out"
    failed = ToolResult("$ pytest\n1 failed", ok=False, outcome="failed", error="exit 1")
    assert failed.shown() == "exit 1\n$ pytest\n1 failed"
    assert ToolResult("no such file: a.py", ok=False, outcome="error", error="no such file: a.py").shown() == (
        "no such file: a.py"
    )
    assert ToolResult("", ok=False, outcome="error", error="gone").shown() == "gone"


def test_failure_keeps_its_first_line_as_the_error_and_its_data() -> None:
    result = failure("Denied by policy\nmore", "denied", stop_reason="x")
    assert (result.ok, result.outcome, result.error) == (False, "denied", "Denied by policy")
    assert result.data == {"stop_reason": "x"}


def test_a_report_refuses_an_outcome_off_the_list() -> None:
    assert TestRun(command=["pytest"], outcome="failed").outcome == "failed"
    with pytest.raises(ValidationError):
        TestRun.model_validate({"command": ["pytest"], "outcome": "passed"})
