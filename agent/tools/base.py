"""What every tool's host side is made of: the handler interface, its context and its result.

A handler runs on the host and does nothing by itself: it checks the model's arguments
(a pydantic model), tells the policy which paths the call writes, forwards the call to the
sandbox, says how the call reads in one line on the console, and notes its effects on
the run's report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

from agent.defaults import SETTINGS
from agent.protocol import TestRun, ToolSpec
from agent.sandboxes.result import ToolResult
from sandbox.tools.catalog import WRITE_TOOLS


class SandboxPort(Protocol):
    """What the tools need of a sandbox (agent.containers.sandbox.Sandbox; fakes in tests).

    ``call`` routes a writing tool (sandbox.tools.catalog.WRITE_TOOLS) to the write container.
    """

    def call(self, tool: str, args: dict[str, Any], timeout_s: float | None = None) -> ToolResult: ...

    def close(self) -> None: ...


@dataclass
class ToolContext:
    sandbox: SandboxPort
    repo: Path
    test_cmd: list[str] = field(default_factory=list)
    test_source: str = "given"
    """How test_cmd was chosen, in words (agent.task.found_tests): the run's first event carries it."""
    no_tests_message: str | None = None
    """What run_test answers when test_cmd is empty (None: the generic message)."""
    test_in_copy: bool = False
    max_test_timeout_s: float = SETTINGS["max_test_timeout"].default
    default_test_timeout_s: float = SETTINGS["test_timeout"].default


@dataclass
class RunEffects:
    """What the run's tool calls did, for the report."""

    files_changed: list[str] = field(default_factory=list)
    last_test: TestRun | None = None


class ToolInputError(Exception):
    """The call cannot run as sent; the message tells the model what to fix."""


class ToolArgs(BaseModel):
    """Base of every tool's argument model: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")


class ToolHandler:
    """A tool's host side. The default ``execute`` forwards the validated arguments to the
    sandbox tool of the same name."""

    name: ClassVar[str]
    description: ClassVar[str]
    args_model: ClassVar[type[BaseModel]]

    @property
    def writes(self) -> bool:
        """True for a tool that changes the repository (it runs in the write container)."""
        return self.name in WRITE_TOOLS

    def spec(self) -> ToolSpec:
        return ToolSpec.from_args_model(self.name, self.description, self.args_model)

    def inspect(self, args: BaseModel) -> list[str]:
        """Checks beyond the schema; returns the paths the call would write (for the policy)."""
        return []

    def execute(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        return ctx.sandbox.call(self.name, args.model_dump(exclude_none=True))

    def summary(self, arguments: dict[str, Any]) -> str:
        """The call in a few words for the console (arguments as the model sent them)."""
        return ""

    def note_effects(self, write_paths: list[str], result: ToolResult, effects: RunEffects) -> None:
        """Record what the call changed or learned, for the report."""
