"""A server's usage is taken only when plausible; otherwise codebox's own count of the request and reply."""

from __future__ import annotations

import pytest

from agent.model.usage import CHARS_PER_TOKEN, MAX_TOKENS, estimate, problem, reply_chars, request_chars, settle
from agent.protocol import AssistantMessage, Message, ModelOutput, ToolCall, ToolSpec, Usage, UserMessage


def usage(inp: int, out: int, total: int | None = None) -> Usage:
    return Usage(input_tokens=inp, output_tokens=out, total_tokens=inp + out if total is None else total)


SENT, RECEIVED = 8000, 400  # characters


@pytest.mark.parametrize(
    ("reported", "why"),
    [
        (None, "the server sent no usage"),
        (usage(0, 0), "zero input tokens for 8000 characters"),
        (usage(2000, 0), "zero output tokens for 400 characters"),
        (usage(-1, 100), "negative input tokens (-1)"),
        (usage(2000, -100), "negative output tokens (-100)"),
        (usage(2000, 100, total=-1), "negative total tokens (-1)"),
        (usage(2000, 100, total=50), "a total (50) below its parts (2000 + 100)"),
        (usage(1, 1), "1 input tokens for 8000 characters"),
        (usage(2000, 1), "1 output tokens for 400 characters"),
        (usage(MAX_TOKENS + 1, 100), f"{MAX_TOKENS + 1} input tokens in one request"),
        (usage(2000, 100, total=2**63), f"{2**63} total tokens in one request"),
    ],
)
def test_implausible_usage_is_refused_with_the_reason(reported: Usage | None, why: str) -> None:
    assert problem(reported, SENT, RECEIVED) == why


@pytest.mark.parametrize(
    "reported",
    [
        usage(2000, 100),  # 4 characters a token: what tokenizers do
        usage(500, 25),  # 16 characters a token: the lowest count still believed
        usage(2000, 5000),  # a reasoning model's hidden output tokens
        usage(2000, 100, total=2200),  # a total above its parts (cached or reasoning tokens counted apart)
    ],
)
def test_plausible_usage_is_taken(reported: Usage) -> None:
    assert problem(reported, SENT, RECEIVED) is None
    counted, why = settle(ModelOutput(message="x" * RECEIVED, usage=reported), SENT)
    assert why is None and counted == reported.model_copy(update={"source": "server"})


def test_an_empty_reply_may_count_zero_output_tokens() -> None:
    assert problem(usage(2000, 0), SENT, 0) is None


def test_the_estimate_counts_what_was_sent_and_received() -> None:
    tool = ToolSpec(name="search", description="find text", parameters={"type": "object"})
    call = ToolCall(id="c1", name="search", arguments={"query": "retry"})
    messages: list[Message] = [UserMessage(content="fix it"), AssistantMessage(content="ok", tool_calls=[call])]
    sent = request_chars("be brief", messages, [tool])
    assert sent == len("be brief") + len("search") + len("find text") + len('{"type": "object"}') + len(
        "fix it") + len("ok") + len("search") + len(str(call.arguments))
    output = ModelOutput(message="done", tool_calls=[call])
    assert reply_chars(output) == len("done") + len("search") + len('{"query": "retry"}')
    counted, why = settle(output.model_copy(update={"usage": usage(0, 0)}), sent)
    assert why == f"zero input tokens for {sent} characters"
    assert counted == estimate(sent, reply_chars(output)) and counted.source == "estimated"
    assert counted.input_tokens == -(-sent // CHARS_PER_TOKEN)


def test_sums_say_whose_count_they_are() -> None:
    server, mine = usage(10, 1).model_copy(update={"source": "server"}), estimate(40, 4)
    assert (Usage() + server).source == "server" and (server + server).source == "server"
    assert (server + mine).source == "mixed" and (mine + mine).source == "estimated"
    assert (server + mine + server).source == "mixed"
