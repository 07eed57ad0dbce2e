"""The Responses API adapter (``--api responses``): ``POST {base_url}/responses``.

Same config, retries and error messages as the Chat Completions client (``openai_base``). Stateless:
``store`` is false and the whole history is sent each turn as input items.
Reasoning items are not carried between turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.model.base import EmitFn, ModelError
from agent.model.openai_base import OpenAIClientBase
from agent.model.retry_rules import short
from agent.model.wire import arguments_to_wire, make_tool_call, parse_usage
from agent.protocol import (
    AssistantMessage,
    Message,
    ModelOutput,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)


def responses_input(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The history as Responses input items (instructions go in their own field)."""
    items: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, UserMessage):
            items.append({"role": "user", "content": m.content})
        elif isinstance(m, AssistantMessage):
            if m.content:
                items.append({"role": "assistant", "content": m.content})
            for c in m.tool_calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.name,
                        "arguments": arguments_to_wire(c),
                    }
                )
        elif isinstance(m, ToolResultMessage):
            items.append({"type": "function_call_output", "call_id": m.call_id, "output": m.content})
    return items


def responses_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    # strict defaults to true in this API, and strict mode wants schemas ours are not written for.
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
            "strict": False,
        }
        for t in tools
    ]


def parse_response(data: Any) -> ModelOutput:
    """A ``response`` body → ModelOutput; ``incomplete`` for max_output_tokens → finish_reason length."""
    if not isinstance(data, dict):
        raise ModelError("the server's reply is not a JSON object")
    status = data.get("status")
    if status == "failed":
        err = data.get("error") or {}
        said = err.get("message", err) if isinstance(err, dict) else err
        raise ModelError(f"the response failed: {short(str(said), 2000)}")
    details = data.get("incomplete_details") or {}
    incomplete = details.get("reason") if isinstance(details, dict) else None
    cut_off = status == "incomplete" and incomplete == "max_output_tokens"
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in data.get("output") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    texts.append(str(part.get("text", "")))
                elif isinstance(part, dict) and part.get("type") == "refusal":
                    texts.append(str(part.get("refusal", "")))
        elif item.get("type") == "function_call":
            calls.append(make_tool_call(item.get("call_id"), item.get("name"), item.get("arguments"), cut_off=cut_off))
    text = "".join(texts)
    if cut_off:
        finish_reason = "length"
    elif status == "incomplete":
        finish_reason = str(incomplete or "incomplete")
    else:
        finish_reason = "tool_calls" if calls else "stop"
    return ModelOutput(
        message=text if text.strip() else None,
        tool_calls=calls,
        finish_reason=finish_reason,
        usage=parse_usage(data.get("usage")),
    )


class OpenAIResponsesClient(OpenAIClientBase):
    """ModelClient over the Responses API (not streamed)."""

    endpoint = "/responses"

    def request_body(self, instructions: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        cfg = self.config
        body: dict[str, Any] = {"model": cfg.model, "input": responses_input(messages), "store": False}
        if instructions:
            body["instructions"] = instructions
        if tools:
            body["tools"] = responses_tools(tools)
            body["tool_choice"] = cfg.tool_choice
        if cfg.temperature is not None:
            body["temperature"] = cfg.temperature
        if cfg.max_tokens is not None:
            body["max_output_tokens"] = cfg.max_tokens
        return body

    def fetch(self, body: dict[str, Any], timeout: float, attempt: int, emit: EmitFn) -> Any:
        return self.json_of(self._client.responses.with_raw_response.create(**body, timeout=timeout))

    def parse(self, data: Any) -> ModelOutput:
        return parse_response(data)
