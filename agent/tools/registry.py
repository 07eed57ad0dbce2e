"""The registry: the tools the model may call, and the check a call passes before the policy sees it."""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import BaseModel, ValidationError

from agent.protocol import ToolCall, ToolSpec
from agent.tools.apply_patch import ApplyPatchTool
from agent.tools.base import ToolHandler, ToolInputError
from agent.tools.read_file import ReadFileTool
from agent.tools.run_test import RunTestTool
from agent.tools.search import SearchTool


def default_tools() -> list[ToolHandler]:
    return [ReadFileTool(), SearchTool(), ApplyPatchTool(), RunTestTool()]


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

    def get(self, name: str) -> ToolHandler | None:
        return self._handlers.get(name)

    def specs(self) -> list[ToolSpec]:
        if self._specs is None:
            self._specs = [h.spec() for h in self._handlers.values()]
        return list(self._specs)

    def summary(self, call: ToolCall) -> str:
        """The call in a few words for the console; empty for an unknown tool."""
        handler = self._handlers.get(call.name)
        return handler.summary(call.arguments) if handler else ""

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
