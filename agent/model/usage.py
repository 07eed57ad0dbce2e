"""A reply's token count that a server cannot forge: its own usage when plausible, else codebox's estimate.

Budgets (agent.task.budget) spend what this module settles on. A server's ``usage`` is taken when
it passes every check below; otherwise, and when there is none, codebox counts the request and
the reply itself, at ``CHARS_PER_TOKEN`` characters a token (no tokenizer: a rough count, on
the generous side for code and English). The request is everything sent: the instructions, the
tools' names, descriptions and schemas, and the messages; the reply is its text and its tool
calls (names and arguments).

A server's usage is implausible when it is:

- negative anywhere, or more than ``MAX_TOKENS`` anywhere (no context window is that large);
- a total below the sum of its parts;
- zero input tokens for a request with content, or zero output tokens beside a reply with content;
- fewer tokens than ``chars / MAX_CHARS_PER_TOKEN`` of what was sent or received (real
  tokenizers average 3 to 5 characters a token; 1 token for a long request is a forgery).

Output tokens may exceed what was received (reasoning models count hidden tokens): only a count
below it is checked. The whole usage of that reply is then replaced, and the report says so
(``usage.source``: "server", "estimated", or "mixed" for a sum of both).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agent.protocol import Message, ModelOutput, ToolSpec, Usage, message_size

CHARS_PER_TOKEN = 4  # the estimate
MAX_CHARS_PER_TOKEN = 16  # a count that implies more characters a token than this is too low to be true
MAX_TOKENS = 10_000_000  # one request's count above this is not a count


def tools_chars(tools: Sequence[ToolSpec]) -> int:
    """Characters of the tools as a request carries them (name, description, JSON schema)."""
    return sum(len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in tools)


def request_chars(instructions: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
    """Characters of a whole request: what the server reads and counts as input."""

    return len(instructions) + tools_chars(tools) + sum(message_size(m) for m in messages)


def reply_chars(output: ModelOutput) -> int:
    """Characters of a reply: its text and its tool calls."""
    size = len(output.message or "")
    for call in output.tool_calls:
        size += len(call.name) + len(call.raw_arguments or json.dumps(call.arguments))
    return size


def estimate(sent_chars: int, received_chars: int) -> Usage:
    """codebox's own count of a request and its reply."""
    inp, out = -(-sent_chars // CHARS_PER_TOKEN), -(-received_chars // CHARS_PER_TOKEN)
    return Usage(input_tokens=inp, output_tokens=out, total_tokens=inp + out, source="estimated")


def problem(usage: Usage | None, sent_chars: int, received_chars: int) -> str | None:
    """Why the server's usage cannot be taken for this request and reply; None when it can."""
    if usage is None:
        return "the server sent no usage"
    counts = {"input": usage.input_tokens, "output": usage.output_tokens, "total": usage.total_tokens}
    for name, count in counts.items():
        if count < 0:
            return f"negative {name} tokens ({count})"
        if count > MAX_TOKENS:
            return f"{count} {name} tokens in one request"
    if usage.total_tokens < usage.input_tokens + usage.output_tokens:
        return f"a total ({usage.total_tokens}) below its parts ({usage.input_tokens} + {usage.output_tokens})"
    for name, count, chars in (("input", usage.input_tokens, sent_chars), ("output", usage.output_tokens,
                                                                           received_chars)):
        if chars and count == 0:
            return f"zero {name} tokens for {chars} characters"
        if count * MAX_CHARS_PER_TOKEN < chars:
            return f"{count} {name} tokens for {chars} characters"
    return None


def settle(output: ModelOutput, sent_chars: int) -> tuple[Usage, str | None]:
    """The usage to count for this reply, and why the server's was replaced (None when it was taken)."""
    received = reply_chars(output)
    why = problem(output.usage, sent_chars, received)
    if why is None and output.usage is not None:
        return output.usage.model_copy(update={"source": "server"}), None
    return estimate(sent_chars, received), why
