"""Test doubles for the host side: a sandbox that answers from a table, no Docker."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.model.scripted import ScriptedModel
from agent.protocol import TaskSpec
from agent.sandboxes.result import ToolResult
from agent.task.events import MemorySink
from agent.task.loop import CodingAgent, Limits
from agent.task.policy import Policy, ReadOnlyPolicy
from agent.tools import ToolContext, ToolRegistry


class FakeSandbox:
    """Answers each tool with a function of its arguments; records every call."""

    def __init__(self, handlers: dict[str, Callable[[dict[str, Any]], ToolResult]] | None = None) -> None:
        self.handlers = handlers or {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.closed = threading.Event()

    def call(self, tool: str, args: dict[str, Any], timeout_s: float | None = None) -> ToolResult:
        self.calls.append((tool, args))
        handler = self.handlers.get(tool)
        if handler is None:
            return ToolResult(output=f"{tool} ok")
        return handler(args)

    def close(self) -> None:
        self.closed.set()


def make_agent(
    turns: list[dict[str, Any]],
    sandbox: FakeSandbox | None = None,
    policy: Policy | None = None,
    limits: Limits | None = None,
    test_cmd: list[str] | None = None,
) -> tuple[CodingAgent, MemorySink, ScriptedModel, FakeSandbox]:
    sandbox = sandbox or FakeSandbox()
    sink = MemorySink()
    model = ScriptedModel(turns)
    ctx = ToolContext(sandbox=sandbox, repo=Path("/nonexistent"), test_cmd=test_cmd or ["pytest", "-q"])
    agent = CodingAgent(model, ToolRegistry(), policy or ReadOnlyPolicy(), sink, ctx, limits=limits)
    return agent, sink, model, sandbox


def task(goal: str = "find the retry bug", **kw: Any) -> TaskSpec:
    return TaskSpec(repo="/nonexistent", goal=goal, **kw)
