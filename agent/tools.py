"""The four tools the model may call, and the registry that checks a call before it runs.

The handlers here run on the host and do nothing themselves: each forwards to the
sandbox, where the real tool runs inside the task's container. What the host does is
validate: the arguments against the handler's pydantic model, and (for apply_patch)
the patch's grammar and the paths it writes, so the policy can judge them.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from agent.protocol import ToolCall, ToolSpec
from sandbox.patch import PatchError, patch_paths


class SandboxReplyLike(Protocol):
    ok: bool
    output: str
    error: str | None
    outcome: str
    data: dict[str, Any]


class SandboxPort(Protocol):
    """What the tools need of a sandbox (sandbox.client.Sandbox; fakes in tests)."""

    def call(self, tool: str, args: dict[str, Any], timeout_s: float | None = None) -> SandboxReplyLike: ...

    def apply_patch(self, patch: str, timeout_s: float | None = None) -> SandboxReplyLike: ...

    def close(self) -> None: ...


class ToolResult(BaseModel):
    """What goes back to the model (content) and into the report (the rest)."""

    content: str
    is_error: bool = False
    outcome: str = "ok"
    data: dict[str, Any] = Field(default_factory=dict)


@dataclass
class ToolContext:
    sandbox: SandboxPort
    repo: Path
    test_cmd: list[str] = field(default_factory=list)
    test_in_copy: bool = False
    max_test_timeout_s: float = 600.0
    default_test_timeout_s: float = 300.0


class ToolInputError(Exception):
    """The call cannot run as sent; the message tells the model what to fix."""


# --- argument models (names are stable: scripts drive codebox with them) -------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadFileArgs(_Args):
    path: str = Field(min_length=1, description="File path relative to the repository root.")
    start_line: int | None = Field(default=None, ge=1, description="First line to read (1-based).")
    end_line: int | None = Field(default=None, ge=1, description="Last line to read (inclusive).")


class SearchArgs(_Args):
    query: str = Field(min_length=1, description="Text to find (a regular expression if regex is true).")
    path: str | None = Field(default=None, description="Limit the search to this file or directory.")
    glob: str | None = Field(default=None, description="Only files matching this glob, e.g. '*.py'.")
    regex: bool = Field(default=False, description="Treat query as a regular expression.")
    max_results: int | None = Field(default=None, ge=1, le=500, description="At most this many matches.")


class ApplyPatchArgs(_Args):
    patch: str = Field(
        min_length=1,
        validation_alias=AliasChoices("patch", "input"),
        description="The whole patch, from '*** Begin Patch' to '*** End Patch'.",
    )


class RunTestArgs(_Args):
    args: list[str] = Field(
        default_factory=list,
        description="Extra arguments appended to the task's test command, e.g. ['tests/test_x.py', '-k', 'foo'].",
    )
    timeout_s: float | None = Field(default=None, gt=0, description="Time limit for this run in seconds.")


# --- handlers ------------------------------------------------------------------------------------


class ToolHandler(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    args_model: ClassVar[type[BaseModel]]
    mutates: ClassVar[bool] = False

    def spec(self) -> ToolSpec:
        return ToolSpec.from_args_model(self.name, self.description, self.args_model)

    def inspect(self, args: BaseModel) -> list[str]:
        """Checks beyond the schema; returns the paths the call would write (for the policy)."""
        return []

    @abstractmethod
    def execute(self, args: BaseModel, ctx: ToolContext) -> ToolResult: ...


def _from_reply(reply: SandboxReplyLike) -> ToolResult:
    content = reply.output
    if not reply.ok and reply.error and reply.error not in content:
        content = f"{reply.error}\n{content}" if content else reply.error
    return ToolResult(content=content, is_error=not reply.ok, outcome=reply.outcome, data=dict(reply.data))


class _ReadOnlyTool(ToolHandler):
    """A read: the validated arguments go to the tool of the same name in the tool container."""

    def execute(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        return _from_reply(ctx.sandbox.call(self.name, args.model_dump(exclude_none=True)))


class ReadFileTool(_ReadOnlyTool):
    name = "read_file"
    description = (
        "Read a text file of the repository, with line numbers. "
        "Use start_line/end_line for a part of a large file."
    )
    args_model = ReadFileArgs


class SearchTool(_ReadOnlyTool):
    name = "search"
    description = (
        "Search the repository's files for text (literal by default). "
        "Returns 'path:line: text' for each match."
    )
    args_model = SearchArgs


class ApplyPatchTool(ToolHandler):
    name = "apply_patch"
    description = (
        "Edit files with a patch in this format:\n"
        "*** Begin Patch\n"
        "*** Update File: path/a.py\n"
        "@@ def handler():\n"
        " context line\n"
        "-removed line\n"
        "+added line\n"
        "*** Add File: path/new.py\n"
        "+new line\n"
        "*** Delete File: path/old.py\n"
        "*** End Patch\n"
        "Paths are relative to the repository root. Context lines must match the file."
    )
    args_model = ApplyPatchArgs
    mutates = True

    def inspect(self, args: BaseModel) -> list[str]:
        assert isinstance(args, ApplyPatchArgs)
        try:
            return [path for _op, path in patch_paths(args.patch)]
        except PatchError as exc:
            raise ToolInputError(str(exc)) from exc

    def execute(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, ApplyPatchArgs)
        return _from_reply(ctx.sandbox.apply_patch(args.patch))


class RunTestTool(ToolHandler):
    name = "run_test"
    description = (
        "Run the task's test command in the sandbox (no network, read-only repository). "
        "args are appended to the command. Returns the exit code and the (capped) output."
    )
    args_model = RunTestArgs

    def execute(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, RunTestArgs)
        if not ctx.test_cmd:
            return ToolResult(
                content="No test command is configured for this task (codebox run --test-cmd ...).",
                is_error=True,
                outcome="error",
            )
        timeout = min(args.timeout_s or ctx.default_test_timeout_s, ctx.max_test_timeout_s)
        argv = [*ctx.test_cmd, *args.args]
        request: dict[str, Any] = {"argv": argv, "timeout_s": timeout}
        if ctx.test_in_copy:
            request["copy_repo"] = True
        reply = ctx.sandbox.call("run_test", request, timeout_s=timeout)
        result = _from_reply(reply)
        result.data.setdefault("argv", argv)
        return result


def default_tools() -> list[ToolHandler]:
    return [ReadFileTool(), SearchTool(), ApplyPatchTool(), RunTestTool()]


# --- registry ------------------------------------------------------------------------------------


@dataclass
class PreparedCall:
    """A call that named a known tool with valid arguments: ready for the policy."""

    call: ToolCall
    handler: ToolHandler
    args: BaseModel
    write_paths: list[str]


class ToolRegistry:
    def __init__(self, handlers: list[ToolHandler] | None = None) -> None:
        self._handlers: dict[str, ToolHandler] = {}
        self._specs: list[ToolSpec] | None = None  # built once: a JSON schema costs ~1 ms each
        for handler in handlers if handlers is not None else default_tools():
            self.register(handler)

    def register(self, handler: ToolHandler) -> None:
        if handler.name in self._handlers:
            raise ValueError(f"a tool named {handler.name!r} is already registered")
        self._handlers[handler.name] = handler
        self._specs = None

    def names(self) -> list[str]:
        return list(self._handlers)

    def specs(self) -> list[ToolSpec]:
        if self._specs is None:
            self._specs = [h.spec() for h in self._handlers.values()]
        return list(self._specs)

    def prepare(self, call: ToolCall) -> PreparedCall:
        """Validate a model's call. Raises ToolInputError with a message for the model."""
        handler = self._handlers.get(call.name)
        if handler is None:
            raise ToolInputError(
                f"Unknown tool {call.name!r}. Available tools: {', '.join(self._handlers)}."
            )
        if call.parse_error:
            raise ToolInputError(
                f"Arguments for {call.name} were not usable: {call.parse_error}. "
                "Send the arguments as one JSON object."
            )
        try:
            args = handler.args_model.model_validate(call.arguments)
        except ValidationError as exc:
            raise ToolInputError(format_validation_error(call.name, exc, handler.args_model)) from exc
        return PreparedCall(call=call, handler=handler, args=args, write_paths=handler.inspect(args))


def format_validation_error(tool: str, exc: ValidationError, model: type[BaseModel]) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        got = f" (got {json.dumps(err['input'], default=str)[:80]})" if err["type"] != "missing" else ""
        problems.append(f"- {where}: {err['msg']}{got}")
    fields = ", ".join(
        f"{name}{'' if info.is_required() else '?'}" for name, info in model.model_fields.items()
    )
    return f"Invalid arguments for {tool}:\n" + "\n".join(problems) + f"\nExpected fields: {fields}."
