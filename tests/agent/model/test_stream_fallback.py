"""A server that cannot stream replies to requests with tools (llama-cpp-python's
chatml-function-calling) is found out on the first request, which goes again unstreamed at once;
and failures that will repeat are not retried six times. Real openai SDK, strict fake server."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, Literal

import openai
import pytest

from agent.model.base import ModelError
from agent.model.config import OpenAIConfig
from agent.model.openai_client import OpenAIChatClient
from agent.model.retry_rules import EmptyStream, StreamInterrupted, cannot_stream_with_tools, is_retryable, will_repeat
from agent.protocol import Message, ToolSpec, UserMessage
from tests.fake_openai_behaviour import LLAMA_CPP_PYTHON, NO_STREAMING_WITH_TOOLS, completion_chunks
from tests.fake_openai_server import Events, FakeOpenAIServer, chat_completion, chat_reply, error_reply, stream_reply

KEY_ENV = "CODEBOX_TEST_OPENAI_KEY"
TOOLS = [ToolSpec(name="read_file", description="Read a file.",
                  parameters={"type": "object", "properties": {"path": {"type": "string"}}})]
HISTORY: list[Message] = [UserMessage(content="fix it")]
SDK_TOOLS: Any = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("CODEBOX_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(KEY_ENV, "sk-test")


def client(server: FakeOpenAIServer, **overrides: Any) -> OpenAIChatClient:
    options: dict[str, Any] = {"model": "m", "base_url": server.url, "api_key_env": KEY_ENV, "request_timeout_s": 5.0,
                               "backoff_base_s": 0.01, "backoff_max_s": 0.01, **overrides}
    return OpenAIChatClient(OpenAIConfig(**options))


Mode = Literal["empty", "error"]


@pytest.fixture(params=["empty", "error"])
def no_stream_server(request: pytest.FixtureRequest) -> Iterator[FakeOpenAIServer]:
    behaviour = dataclasses.replace(LLAMA_CPP_PYTHON, stream_with_tools=request.param)
    with FakeOpenAIServer(behaviour=behaviour) as server:
        yield server


# --- the fake answers as the real server does -------------------------------------------------


def test_the_strict_fake_answers_a_streamed_request_with_tools_with_an_empty_stream() -> None:
    with FakeOpenAIServer([chat_reply("hello there")], behaviour=LLAMA_CPP_PYTHON) as server:
        sdk = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
        messages: Any = [{"role": "user", "content": "hi"}]
        with sdk.chat.completions.create(model="m", messages=messages, tools=SDK_TOOLS, tool_choice="auto",
                                         stream=True) as stream:
            assert stream.response.status_code == 200
            assert stream.response.headers["content-type"] == "text/event-stream"
            assert list(stream) == []
        assert server.remaining == 1  # no model was asked
        with sdk.chat.completions.create(model="m", messages=messages, stream=True) as stream:
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        assert text == "hello there"  # without tools it streams


def test_the_other_build_answers_with_a_500_that_says_so() -> None:
    behaviour = dataclasses.replace(LLAMA_CPP_PYTHON, stream_with_tools="error")
    with FakeOpenAIServer(behaviour=behaviour) as server:
        sdk = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
        with pytest.raises(openai.InternalServerError) as info:
            sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], tools=SDK_TOOLS,
                                        tool_choice="auto", stream=True)
        assert NO_STREAMING_WITH_TOOLS in str(info.value)


# --- codebox finds it out on the first request ------------------------------------------------


def test_the_first_request_goes_again_unstreamed_and_the_run_stays_unstreamed(
    no_stream_server: FakeOpenAIServer,
) -> None:
    server = no_stream_server
    server.add(chat_reply(tool_calls=[("read_file", {"path": "a.py"})]), chat_reply("done"), chat_reply("again"))
    c, events = client(server), Events()
    first = c.complete("SYS", HISTORY, TOOLS, events)
    assert [t.name for t in first.tool_calls] == ["read_file"]
    assert c.complete("SYS", HISTORY, TOOLS, events).message == "done"
    assert c.complete("SYS", HISTORY, TOOLS, events).message == "again"
    assert [r.json.get("stream", False) for r in server.posts] == [True, False, False, False]
    (fallback,) = events.of("model.fallback")
    assert "cannot stream replies to requests with tools" in fallback["reason"]
    assert ("empty stream" in fallback["said"] or "before its first chunk" in fallback["said"]
            or NO_STREAMING_WITH_TOOLS in fallback["said"])
    assert events.of("model.retry") == [] and events.of("message.delta") == []
    assert c.streaming is False and c.requests_made == 3


def test_a_connection_the_failed_stream_broke_costs_no_retry() -> None:
    """The real llama-cpp-python closes the connection after the stream it could not serve: the
    unstreamed request sent at once meets "connection reset" and goes again on a new one."""
    reset = stream_reply([], cut="reset")  # the body breaks off: a connection error for the client
    with FakeOpenAIServer([reset, chat_reply("done")], behaviour=LLAMA_CPP_PYTHON) as server:
        events = Events()
        assert client(server).complete("SYS", HISTORY, TOOLS, events).message == "done"
        assert [r.json.get("stream", False) for r in server.posts] == [True, False, False]
    assert len(events.of("model.fallback")) == 1 and events.of("model.retry") == []


def test_no_stream_asks_whole_replies_from_the_start(no_stream_server: FakeOpenAIServer) -> None:
    no_stream_server.add(chat_reply("done"))
    events = Events()
    assert client(no_stream_server, stream=False).complete("SYS", HISTORY, TOOLS, events).message == "done"
    assert len(no_stream_server.posts) == 1 and events.of("model.fallback") == []


def test_an_empty_stream_after_streams_that_worked_is_retried_not_a_fallback() -> None:
    replies = [chat_reply("one"), stream_reply([], cut="eof"), chat_reply("two")]
    with FakeOpenAIServer(replies) as server:
        c, events = client(server), Events()
        assert c.complete("SYS", HISTORY, TOOLS, events).message == "one"
        assert c.complete("SYS", HISTORY, TOOLS, events).message == "two"
        assert [r.json.get("stream") for r in server.posts] == [True, True, True]
    assert len(events.of("model.retry")) == 1 and events.of("model.fallback") == []
    assert c.streaming is True


def test_an_empty_stream_without_tools_is_retried() -> None:
    replies = [stream_reply([], cut="eof"), chat_reply("hi")]
    with FakeOpenAIServer(replies) as server:
        events = Events()
        assert client(server).complete("", HISTORY, [], events).message == "hi"
        assert len(server.posts) == 2
    assert len(events.of("model.retry")) == 1 and events.of("model.fallback") == []


def test_a_stream_cut_after_some_chunks_is_not_taken_for_a_server_that_cannot_stream() -> None:
    whole = chat_completion("Reading.", [("read_file", {"path": "a.py"})])
    replies = [stream_reply(completion_chunks(whole, include_usage=False), cut="reset", cut_after=2), chat_reply("ok")]
    with FakeOpenAIServer(replies) as server:
        events = Events()
        assert client(server).complete("SYS", HISTORY, TOOLS, events).message == "ok"
    assert len(events.of("model.retry")) == 1 and events.of("model.fallback") == []


# --- failures that will repeat ----------------------------------------------------------------


def _status_error(status: int, message: str) -> openai.APIStatusError:
    """The SDK's own exception for this answer from a server."""
    with FakeOpenAIServer([error_reply(status, message)]) as server:
        sdk = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
        with pytest.raises(openai.APIStatusError) as info:
            sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    return info.value


@pytest.mark.parametrize(
    ("status", "message", "repeats"),
    [
        (500, NO_STREAMING_WITH_TOOLS, True),
        (500, "NotImplementedError: logprobs", True),
        (500, "tool_choice 'required' is unsupported by this chat format", True),
        (500, "llama_decode returned -1", False),
        (503, "streaming is not supported while loading", False),  # "not now": waiting fixes it
        (429, "not supported at this rate", False),
    ],
)
def test_what_will_repeat(status: int, message: str, repeats: bool) -> None:
    exc = _status_error(status, message)
    assert will_repeat(exc) is repeats
    assert is_retryable(exc) is not repeats


def test_the_words_of_a_server_that_cannot_stream_with_tools() -> None:
    assert cannot_stream_with_tools(_status_error(500, NO_STREAMING_WITH_TOOLS))
    assert cannot_stream_with_tools(StreamInterrupted("the server sent an error in the stream: streaming with "
                                                      "tools is not supported"))
    assert not cannot_stream_with_tools(_status_error(500, "tools must be a list"))
    assert not cannot_stream_with_tools(EmptyStream("nothing"))  # an empty stream is judged by the client


def test_a_500_that_says_not_supported_is_tried_once() -> None:
    with FakeOpenAIServer(default=error_reply(500, "NotImplementedError: n > 1")) as server:
        events = Events()
        with pytest.raises(ModelError) as info:
            client(server, stream=False).complete("SYS", HISTORY, TOOLS, events)
        assert len(server.posts) == 1
    assert "does not support it (not retried)" in str(info.value) and info.value.status == 500
    assert events.of("model.retry") == []
