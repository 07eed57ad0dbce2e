"""How strict and how fast the fake OpenAI server is: real servers' quirks, reproduced for tests.

``LLAMA_CPP_PYTHON`` behaves like llama-cpp-python's server (0.3.36, checked against the real
one) as seen on the wire: a request its pydantic models refuse (an assistant message with
``content: null``) is answered with HTTP 500 and the whole list of validation errors, in which
the one that names ``content`` comes after the other roles' complaints; tools sent without ``tool_choice`` are left out
of the prompt, so the model answers in prose; generation takes time per token and runs to the
end unless ``max_tokens`` stops it; a streamed request that carries tools cannot be served
(its chatml-function-calling handler raises "Automatic streaming tool choice is not supported"):
the answer is HTTP 200 with an empty event stream (``stream_with_tools="empty"``), or, as other
builds of the server answer it, an HTTP 500 with that text (``"error"``).

Also here: a reply as the chunks of a stream (``completion_chunks``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

PROSE_WITHOUT_TOOLS = "To fix this I would first read the file and then change the loop."
NO_STREAMING_WITH_TOOLS = "Automatic streaming tool choice is not supported"  # llama-cpp-python's words


@dataclass(frozen=True)
class ServerBehaviour:
    """The defaults are a lenient, instant server (the fake's behaviour before strict modes)."""

    refuse_null_content: bool = False  # assistant message with content null or missing: a validation error
    tools_need_tool_choice: bool = False  # tools without tool_choice are ignored: the reply is prose
    validation_status: int = 400  # the status of a validation error (llama-cpp-python: 500)
    seconds_per_token: float = 0.0  # generation time per output token (streamed as generated)
    refuse_stream_options: bool = False  # an older server: 400 for stream_options
    # A streamed request with tools: served ("stream"), HTTP 200 with an empty event stream
    # ("empty"), or HTTP 500 with NO_STREAMING_WITH_TOOLS ("error").
    stream_with_tools: Literal["stream", "empty", "error"] = "stream"
    # A server that forges its bill: every completion (whole or streamed) reports this usage,
    # (prompt_tokens, completion_tokens, total_tokens), whatever it read and wrote.
    forged_usage: tuple[int, int, int] | None = None


LENIENT = ServerBehaviour()
LLAMA_CPP_PYTHON = ServerBehaviour(
    refuse_null_content=True,
    tools_need_tool_choice=True,
    validation_status=500,
    seconds_per_token=0.0,
    stream_with_tools="empty",
)
ZERO_USAGE = ServerBehaviour(forged_usage=(0, 0, 0))
NEGATIVE_USAGE = ServerBehaviour(forged_usage=(-4000, -100, -4100))


def forge_usage(completion: dict[str, Any], behaviour: ServerBehaviour) -> dict[str, Any]:
    """The completion with the usage the behaviour forges (unchanged for an honest server)."""
    if behaviour.forged_usage is None:
        return completion
    prompt, completion_tokens, total = behaviour.forged_usage
    usage = {"prompt_tokens": prompt, "completion_tokens": completion_tokens, "total_tokens": total}
    return {**completion, "usage": usage}

_OTHER_ROLES = ("system", "user", "tool", "function")
Problem = dict[str, Any]


def problem(kind: str, loc: tuple[Any, ...], msg: str, value: Any = None) -> Problem:
    """One error as FastAPI lists it (llama-cpp-python 0.3.36 sends exactly this shape)."""
    return {"type": kind, "loc": ("body", *loc), "msg": msg, "input": value}


def _union_problems(i: int, role: str) -> list[Problem]:
    """What pydantic says for each member of the message union the message did not match."""
    return [
        problem("literal_error", ("messages", i, f"ChatCompletionRequest{other.capitalize()}Message", "role"),
                f"Input should be '{other}'", role)
        for other in _OTHER_ROLES
    ]


def validation_problems(body: Any, behaviour: ServerBehaviour) -> list[Problem]:
    """The errors the server's request models find in this request; empty when it is valid."""
    if not isinstance(body, dict):
        return [problem("dict_type", (), "Input should be a valid dictionary", body)]
    found: list[Problem] = []
    for i, msg in enumerate(body.get("messages") or []):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in ("system", "user", "assistant", "tool", "function"):
            found.append(problem("literal_error", ("messages", i, "role"), "Input should be a known role", role))
            continue
        if role == "assistant" and behaviour.refuse_null_content and not isinstance(msg.get("content"), str):
            found += _union_problems(i, "assistant")
            where = ("messages", i, "ChatCompletionRequestAssistantMessage", "content")
            if "content" in msg:
                found.append(problem("string_type", where, "Input should be a valid string", msg["content"]))
            else:
                found.append(problem("missing", where, "Field required", msg))
        if role == "tool" and not msg.get("tool_call_id"):
            found.append(problem("missing", ("messages", i, "ChatCompletionRequestToolMessage", "tool_call_id"),
                                 "Field required", msg))
    choice = body.get("tool_choice")
    if choice is not None and choice not in ("auto", "none", "required") and not isinstance(choice, dict):
        found.append(problem("literal_error", ("tool_choice",), "Input should be 'none', 'auto' or 'required'",
                             choice))
    if behaviour.refuse_stream_options and "stream_options" in body:
        found.append(problem("extra_forbidden", ("stream_options",), "Extra inputs are not permitted",
                             body["stream_options"]))
    return found


def validation_message(problems: list[Problem]) -> str:
    """The message of llama-cpp-python's HTTP 500 for a request its models refuse."""
    plural = "s" if len(problems) != 1 else ""
    return f"{len(problems)} validation error{plural}:" + "".join(f"\n  {p!r}" for p in problems)


def ignores_tools(body: Any, behaviour: ServerBehaviour) -> bool:
    return bool(behaviour.tools_need_tool_choice and isinstance(body, dict) and body.get("tools")
                and "tool_choice" not in body)


def cannot_stream(body: Any, behaviour: ServerBehaviour) -> bool:
    """A streamed request with tools, to a server that cannot stream tool calls."""
    return bool(behaviour.stream_with_tools != "stream" and isinstance(body, dict) and body.get("stream")
                and body.get("tools"))


def requested_max_tokens(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    value = body.get("max_tokens", body.get("max_completion_tokens"))
    return value if isinstance(value, int) else None


def tokens_of(text: str) -> list[str]:
    """The fake's tokens: a word with the space after it."""
    return re.findall(r"\S+\s*|\s+", text)


def generate(completion: dict[str, Any], max_tokens: int | None) -> tuple[dict[str, Any], int]:
    """The completion as a server that honours ``max_tokens`` would send it, and its token count.

    A reply longer than ``max_tokens`` is cut: text kept up to the limit, no tool calls,
    ``finish_reason: length`` (what real servers do when the cap falls inside a reply).
    """
    choice = completion["choices"][0]
    message = dict(choice["message"])
    text_tokens = tokens_of(message.get("content") or "")
    calls = message.get("tool_calls") or []
    call_tokens = sum(len((c.get("function") or {}).get("arguments") or "") // 4 + 2 for c in calls)
    count = len(text_tokens) + call_tokens
    if max_tokens is None or count <= max_tokens:
        return completion, count
    message["content"] = "".join(text_tokens[:max_tokens])
    message.pop("tool_calls", None)
    cut = dict(completion)
    cut["choices"] = [dict(choice, message=message, finish_reason="length")]
    if isinstance(cut.get("usage"), dict):
        usage = dict(cut["usage"], completion_tokens=max_tokens)
        usage["total_tokens"] = usage.get("prompt_tokens", 0) + max_tokens
        cut["usage"] = usage
    return cut, max_tokens


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def completion_chunks(completion: dict[str, Any], include_usage: bool, args_piece: int = 7) -> list[dict[str, Any]]:
    """A chat.completion body as the chunks of a stream: a role chunk, the text a token at a time,
    each call's id and name then its arguments ``args_piece`` characters at a time, the finish,
    and (when asked for) the usage in a last chunk without choices."""
    base = {"id": completion.get("id", "chatcmpl-fake"), "object": "chat.completion.chunk",
            "created": completion.get("created", 0), "model": completion.get("model", "fake-model")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    choice = completion["choices"][0]
    message = choice["message"]
    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": t}) for t in tokens_of(message.get("content") or "")]
    for i, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function") or {}
        head = {"index": i, "id": call.get("id"), "type": "function", "function": {"name": fn.get("name"),
                                                                                  "arguments": ""}}
        out.append(chunk({"tool_calls": [head]}))
        for piece in _pieces(fn.get("arguments") or "", args_piece):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(chunk({}, choice.get("finish_reason") or "stop"))
    if include_usage and completion.get("usage"):
        out.append({**base, "choices": [], "usage": completion["usage"]})
    return out


def sse(event: dict[str, Any] | str) -> bytes:
    data = event if isinstance(event, str) else json.dumps(event)
    return f"data: {data}\n\n".encode()
