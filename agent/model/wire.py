"""Pieces of the OpenAI wire format that the Chat and Responses adapters share."""

from __future__ import annotations

import json
from typing import Any

from agent.model.arguments import parse_arguments
from agent.protocol import ToolCall, Usage, new_id


def arguments_to_wire(call: ToolCall) -> str:
    """What the model is shown of its own call: what it sent when that could not be parsed."""
    if call.parse_error is not None and call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def make_tool_call(call_id: Any, name: Any, raw_arguments: Any, *, cut_off: bool) -> ToolCall:
    args, raw, error = parse_arguments(raw_arguments, cut_off=cut_off)
    return ToolCall(
        id=call_id if isinstance(call_id, str) and call_id else new_id("call"),
        name=name if isinstance(name, str) else "",
        arguments=args,
        raw_arguments=raw,
        parse_error=error,
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parse_usage(data: Any) -> Usage | None:
    """``usage`` of a Chat Completions (prompt/completion) or Responses (input/output) reply."""
    if not isinstance(data, dict):
        return None
    inp = _int(data.get("prompt_tokens", data.get("input_tokens")))
    out = _int(data.get("completion_tokens", data.get("output_tokens")))
    total = _int(data.get("total_tokens")) or inp + out
    return Usage(input_tokens=inp, output_tokens=out, total_tokens=total)
