"""A model that replays a script of turns: for tests, the demo, and tools that drive codebox.

File format (stable; docs/scripted-model.md documents it for users, and a test checks that page):

    {"turns": [
        {"tool_calls": [{"name": "search", "arguments": {"query": "retry"}}]},
        {"message": "done"}
    ]}

Each turn may also carry ``expect``: checks on what the model was sent before this
turn, so a script notices when the run drifted from what it was written for:

    "expect": {"last_result_contains": "FAILED", "last_result_is_error": true}

``arguments`` may be an object or a string (sent as-is, like a model's raw JSON). Call
ids are generated when absent. When the script runs out, complete() raises ModelError.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.model.arguments import parse_arguments
from agent.model.base import EmitFn, ModelError
from agent.protocol import Message, ModelOutput, ToolCall, ToolResultMessage, ToolSpec, Usage, new_id


class ScriptedCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class Expectation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    last_result_contains: str | None = None
    last_result_is_error: bool | None = None


class ScriptedTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: str | None = None
    tool_calls: list[ScriptedCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    expect: Expectation | None = None
    comment: str | None = None  # ignored; lets a script explain itself


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turns: list[ScriptedTurn]


def _to_call(call: ScriptedCall) -> ToolCall:
    call_id = call.id or new_id("call")
    if isinstance(call.arguments, str):
        args, _, error = parse_arguments(call.arguments)
        return ToolCall(id=call_id, name=call.name, arguments=args, raw_arguments=call.arguments, parse_error=error)
    return ToolCall(id=call_id, name=call.name, arguments=call.arguments)


class ScriptedModel:
    def __init__(self, turns: Sequence[ScriptedTurn | dict[str, Any]], name: str = "scripted") -> None:
        self.turns = [t if isinstance(t, ScriptedTurn) else ScriptedTurn.model_validate(t) for t in turns]
        self.name = name
        self.position = 0
        # What each request carried, for tests: (instructions, messages, tools).
        self.requests: list[tuple[str, list[Message], list[ToolSpec]]] = []

    @classmethod
    def from_file(cls, path: Path | str) -> ScriptedModel:
        path = Path(path)
        try:
            script = Script.model_validate_json(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ModelError(f"cannot read the script {path}: {exc}") from exc
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            said = f"{where}: {first['msg']}" if where else str(first["msg"])
            more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
            raise ModelError(f"the script {path} is not a valid codebox script: {said}{more}") from None
        except ValueError as exc:
            raise ModelError(f"the script {path} is not a valid codebox script: {exc}") from exc
        return cls(script.turns, name=f"scripted:{path.name}")

    def complete(
        self,
        instructions: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        emit: EmitFn,
    ) -> ModelOutput:
        self.requests.append((instructions, list(messages), list(tools)))
        if self.position >= len(self.turns):
            raise ModelError(f"the scripted model ran out of turns after {len(self.turns)}")
        turn = self.turns[self.position]
        self.position += 1
        if turn.expect:
            self._check(turn.expect, messages)
        return ModelOutput(
            message=turn.message,
            tool_calls=[_to_call(c) for c in turn.tool_calls],
            finish_reason=turn.finish_reason or ("tool_calls" if turn.tool_calls else "stop"),
            usage=turn.usage,
        )

    def _check(self, expect: Expectation, messages: Sequence[Message]) -> None:
        results = [m for m in messages if isinstance(m, ToolResultMessage)]
        last = results[-1] if results else None
        where = f"turn {self.position}"
        if expect.last_result_contains is not None and (
            last is None or expect.last_result_contains not in last.content
        ):
            got = "no tool result" if last is None else repr(last.content[:300])
            raise ModelError(
                f"script expectation failed at {where}: last tool result should contain "
                f"{expect.last_result_contains!r}, got {got}"
            )
        if expect.last_result_is_error is not None and (
            last is None or last.is_error != expect.last_result_is_error
        ):
            raise ModelError(
                f"script expectation failed at {where}: last tool result is_error should be "
                f"{expect.last_result_is_error}"
            )
