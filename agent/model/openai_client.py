"""The real model client: any OpenAI-compatible Chat Completions endpoint with function calling.

Works with OpenAI and with the servers people run locally (vLLM, Ollama, llama.cpp server,
llama-cpp-python, LM Studio, LiteLLM). What it sends is what the strictest of them accept:
``tool_choice`` whenever tools are sent (llama-cpp-python leaves the tools out of the prompt
without it), and ``content: ""`` rather than null on an assistant message that only calls
tools (llama-cpp-python answers null, or no content, with HTTP 500).

Replies are streamed by default (``stream: false`` in the config, ``--no-stream`` on the
command line, for servers that stream badly): text deltas go out as ``message.delta`` while
the reply comes in, and the reply is used only once the stream has ended properly. A server
that cannot stream a reply to a request with tools (llama-cpp-python's chatml-function-calling:
an HTTP 500 saying so, or a 200 with an empty stream) is found out on the first such request,
which is sent again unstreamed at once; the rest of the run is unstreamed, and one
``model.fallback`` event says why.
Retries, error messages and the key's handling live in ``openai_base``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import openai

from agent.model.arguments import parse_arguments
from agent.model.base import EmitFn, ModelError
from agent.model.chat_stream import ChatStreamAssembler
from agent.model.config import OpenAIConfig
from agent.model.openai_base import OpenAIClientBase
from agent.model.retry_rules import (
    SERVER_ERROR_EVENT,
    EmptyStream,
    StreamInterrupted,
    cannot_stream_with_tools,
    parse_retry_after,
    server_message,
    short,
)
from agent.model.wire import arguments_to_wire, make_tool_call, parse_usage
from agent.protocol import AssistantMessage, Message, ModelOutput, ToolCall, ToolResultMessage, ToolSpec, UserMessage

# Importable from here as before the split (factory.py, tests, scripts).
__all__ = [
    "OpenAIChatClient",
    "OpenAIConfig",
    "chat_messages",
    "chat_tools",
    "parse_arguments",
    "parse_chat_completion",
    "parse_retry_after",
]


def chat_messages(instructions: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The history as Chat Completions messages."""
    out: list[dict[str, Any]] = []
    if instructions:
        out.append({"role": "system", "content": instructions})
    for m in messages:
        if isinstance(m, UserMessage):
            out.append({"role": "user", "content": m.content})
        elif isinstance(m, AssistantMessage):
            # Never null: strict servers refuse null (and a missing key) on every later request.
            msg: dict[str, Any] = {"role": "assistant", "content": m.content or ""}
            if m.tool_calls:
                msg["tool_calls"] = [_call_to_wire(c) for c in m.tool_calls]
            out.append(msg)
        elif isinstance(m, ToolResultMessage):
            out.append({"role": "tool", "tool_call_id": m.call_id, "content": m.content})
    return out


def _call_to_wire(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments_to_wire(call)}}


def chat_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def _text(value: Any) -> str | None:
    """Message content: a string, or a list of text parts; blank → None."""
    if isinstance(value, list):
        value = "".join(str(p.get("text", "")) for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    if isinstance(value, str) and value.strip():
        return value
    return None


def parse_chat_completion(data: Any) -> ModelOutput:
    """A chat.completion body → ModelOutput. Tolerant of what local servers leave out."""
    if not isinstance(data, dict):
        raise ModelError(f"the server's reply is not a JSON object: {short(json.dumps(data), 200)}")
    usage = parse_usage(data.get("usage"))
    choices = data.get("choices")
    if not choices:
        if data.get("error"):
            err = data["error"]
            said = err.get("message", err) if isinstance(err, dict) else err
            raise ModelError(f"the server answered with an error: {said}")
        return ModelOutput(message=None, finish_reason=None, usage=usage)
    choice = choices[0] if isinstance(choices[0], dict) else {}
    finish_reason = choice.get("finish_reason")
    message = choice.get("message") or {}
    cut_off = finish_reason == "length"
    text = _text(message.get("content"))
    if text is None and isinstance(message.get("refusal"), str) and message["refusal"].strip():
        text = message["refusal"]
    calls: list[ToolCall] = []
    for raw_call in message.get("tool_calls") or []:
        if not isinstance(raw_call, dict):
            continue
        fn = raw_call.get("function") or {}
        calls.append(make_tool_call(raw_call.get("id"), fn.get("name"), fn.get("arguments"), cut_off=cut_off))
    legacy = message.get("function_call")
    if not calls and isinstance(legacy, dict):  # the pre-tools function calling shape
        calls.append(make_tool_call(None, legacy.get("name"), legacy.get("arguments"), cut_off=cut_off))
    return ModelOutput(
        message=text,
        tool_calls=calls,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=usage,
    )


def _is_event_stream(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == "text/event-stream"


class _Whole:
    """A streamed HTTP response read whole, shaped like a raw response for ``json_of``."""

    def __init__(self, response: Any) -> None:
        response.read()
        self.http_response = response


def _chunk_dict(chunk: Any) -> Any:
    if hasattr(chunk, "to_dict"):
        return chunk.to_dict(warnings=False)
    return chunk


class OpenAIChatClient(OpenAIClientBase):
    """ModelClient over ``POST {base_url}/chat/completions`` with ``tools``."""

    endpoint = "/chat/completions"

    def __init__(self, config: OpenAIConfig | None = None, **options: Any) -> None:
        super().__init__(config, **options)
        self._stream_usage = self.config.stream_usage  # off for good once a server refuses it
        self.streaming = self.config.stream  # off for good once a server cannot stream with tools
        self._streamed_with_tools = 0  # streamed replies to requests with tools that came whole

    def request_body(self, instructions: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        cfg = self.config
        body: dict[str, Any] = {"model": cfg.model, "messages": chat_messages(instructions, messages)}
        if tools:  # OpenAI refuses an empty list
            body["tools"] = chat_tools(tools)
            body["tool_choice"] = cfg.tool_choice
        if cfg.temperature is not None:
            body["temperature"] = cfg.temperature
        if cfg.max_tokens is not None:
            # OpenAI's newer models only take max_completion_tokens; local servers know max_tokens.
            key = "max_completion_tokens" if cfg.uses_openai_endpoint else "max_tokens"
            body[key] = cfg.max_tokens
        return body

    def fetch(self, body: dict[str, Any], timeout: float, attempt: int, emit: EmitFn) -> Any:
        if not self.streaming:
            return self._whole(body, timeout)
        try:
            data = self._stream(body, timeout, attempt, emit)
        except (openai.APIStatusError, StreamInterrupted) as exc:
            if not (body.get("tools") and self._cannot_stream_with_tools(exc)):
                raise
            self.streaming = False
            emit("model.fallback", {
                "reason": "the server cannot stream replies to requests with tools: the run goes on unstreamed",
                "said": self._reason(exc),
            })
            try:
                return self._whole(body, timeout)
            except openai.APITimeoutError:
                raise
            except openai.APIConnectionError:
                # The server dropped the connection its failed stream left open (llama-cpp-python:
                # "Connection reset by peer" on the pooled socket): once more, on a new one.
                return self._whole(body, timeout)
        if body.get("tools"):
            self._streamed_with_tools += 1
        return data

    def _whole(self, body: dict[str, Any], timeout: float) -> Any:
        return self.json_of(self._client.chat.completions.with_raw_response.create(**body, timeout=timeout))

    def _cannot_stream_with_tools(self, exc: BaseException) -> bool:
        """The server says so in words; or its first stream with tools came empty (an HTTP 200
        with nothing in it). An empty stream after streams that worked is a failure like any
        other, retried."""
        if cannot_stream_with_tools(exc):
            return True
        return isinstance(exc, EmptyStream) and self._streamed_with_tools == 0

    def _stream(self, body: dict[str, Any], timeout: float, attempt: int, emit: EmitFn) -> Any:
        options: dict[str, Any] = {"stream": True}
        if self._stream_usage:
            options["stream_options"] = {"include_usage": True}
        try:
            stream = self._client.chat.completions.create(**body, **options, timeout=timeout)
        except openai.APIStatusError as e:
            if self._stream_usage and e.status_code in (400, 422) and "stream_options" in server_message(e):
                self._stream_usage = False  # an older server: usage is then not known for streamed replies
                return self._stream(body, timeout, attempt, emit)
            raise
        if not _is_event_stream(stream.response.headers.get("content-type")):  # a server that does not stream
            with stream:
                return self.json_of(_Whole(stream.response))
        assembler = ChatStreamAssembler(lambda text: emit("message.delta", {"text": text, "attempt": attempt}))
        try:
            with stream:  # closes the connection however the loop ends
                for chunk in stream:
                    assembler.add(_chunk_dict(chunk))
        except openai.APIStatusError:
            raise
        except openai.APIConnectionError as e:  # includes a read timeout between two chunks
            cause = e.__cause__ or e
            if assembler.chunks == 0 and not isinstance(e, openai.APITimeoutError):
                raise EmptyStream(
                    f"the stream broke before its first chunk ({type(cause).__name__}: {cause})"
                ) from e
            raise StreamInterrupted(
                f"the connection broke after {assembler.chunks} chunks ({type(cause).__name__}: {cause})"
            ) from e
        except openai.APIError as e:  # an error event in the stream
            raise StreamInterrupted(f"{SERVER_ERROR_EVENT}: {e.message}") from e
        except ValueError as e:  # a chunk that is not JSON
            raise StreamInterrupted(f"a chunk was not JSON after {assembler.chunks} chunks: {e}") from e
        return assembler.result()

    def parse(self, data: Any) -> ModelOutput:
        return parse_chat_completion(data)
