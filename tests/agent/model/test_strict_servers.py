"""What strict real servers need (llama-cpp-python's quirks, reproduced by the fake), and which errors are retried."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from agent.model.base import ModelError
from agent.model.config import OpenAIConfig
from agent.model.factory import make_client
from agent.model.openai_client import OpenAIChatClient
from agent.protocol import AssistantMessage, Message, ModelOutput, ToolCall, ToolResultMessage, ToolSpec, UserMessage
from tests.fake_openai_behaviour import (
    LLAMA_CPP_PYTHON,
    PROSE_WITHOUT_TOOLS,
    ServerBehaviour,
    problem,
    validation_message,
)
from tests.fake_openai_server import Events, FakeOpenAIServer, chat_reply, error_reply

KEY_ENV = "CODEBOX_TEST_OPENAI_KEY"
TOOLS = [
    ToolSpec(
        name="read_file",
        description="Read a file.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
]
HISTORY: list[Message] = [
    UserMessage(content="fix it"),
    AssistantMessage(tool_calls=[ToolCall(id="c1", name="read_file", arguments={"path": "a.py"})]),
    ToolResultMessage(call_id="c1", name="read_file", content="x = 1"),
]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("CODEBOX_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(KEY_ENV, "sk-test")


@pytest.fixture
def llama() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(behaviour=LLAMA_CPP_PYTHON) as srv:
        yield srv


def client(server: FakeOpenAIServer, **overrides: Any) -> OpenAIChatClient:
    options: dict[str, Any] = {
        "model": "m",
        "base_url": server.url,
        "api_key_env": KEY_ENV,
        "request_timeout_s": 5.0,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.01,
        **overrides,
    }
    return OpenAIChatClient(OpenAIConfig(**options))


def ask(c: Any, history: list[Message] | None = None, events: Events | None = None) -> ModelOutput:
    out: ModelOutput = c.complete("SYS", history or HISTORY, TOOLS, events or Events())
    return out


def raw_post(server: FakeOpenAIServer, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A request as another client would send it: to see what the strict fake does with it."""
    sdk = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
    try:
        reply = sdk.chat.completions.with_raw_response.create(**body)
        return reply.http_response.status_code, reply.http_response.json()
    except openai.APIStatusError as e:
        return e.status_code, e.body if isinstance(e.body, dict) else {}


# --- the fake behaves like the real server (so the tests below mean something) ---------------


def test_the_strict_fake_refuses_null_content_with_500_and_ignores_tools_without_tool_choice(
    llama: FakeOpenAIServer,
) -> None:
    llama.add(chat_reply(tool_calls=[("read_file", {"path": "a.py"})]))
    history = [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
    ]
    status, body = raw_post(llama, {"model": "m", "messages": history})
    assert status == 500
    message = body["message"] if "message" in body else body["error"]["message"]
    assert "'ChatCompletionRequestAssistantMessage', 'content')" in message
    assert message.index("'content'") > 300  # what a 300-character cut used to hide

    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
    status, body = raw_post(llama, {"model": "m", "messages": history[:1], "tools": tools})
    assert status == 200 and body["choices"][0]["message"]["content"] == PROSE_WITHOUT_TOOLS
    assert llama.remaining == 1  # the scripted tool call was never reached


# --- what codebox sends ----------------------------------------------------------------------


def test_codebox_gets_tool_calls_from_the_strict_server(llama: FakeOpenAIServer) -> None:
    llama.add(chat_reply(tool_calls=[("read_file", {"path": "b.py"}, "c2")]), chat_reply("done"))
    c = client(llama)
    out = ask(c)
    assert [(t.name, t.arguments) for t in out.tool_calls] == [("read_file", {"path": "b.py"})]
    history = [*HISTORY, AssistantMessage(tool_calls=out.tool_calls),
               ToolResultMessage(call_id="c2", name="read_file", content="y = 2")]
    assert ask(c, history).message == "done"
    for request in llama.posts:
        body = request.json
        assert body["tool_choice"] == "auto"
        assistants = [m for m in body["messages"] if m["role"] == "assistant"]
        assert assistants and all(m["content"] == "" for m in assistants)


@pytest.mark.parametrize("choice", ["required", "none"])
def test_tool_choice_can_be_changed(llama: FakeOpenAIServer, choice: str) -> None:
    llama.add(chat_reply("ok"))
    ask(client(llama, tool_choice=choice))
    assert llama.posts[0].json["tool_choice"] == choice


def test_no_tools_means_no_tool_choice(llama: FakeOpenAIServer) -> None:
    llama.add(chat_reply("ok"))
    client(llama).complete("", [UserMessage(content="hi")], [], Events())
    assert "tool_choice" not in llama.posts[0].json and "tools" not in llama.posts[0].json


# --- which errors are retried --------------------------------------------------------------------


def test_a_500_validation_error_is_not_retried_and_its_whole_message_is_kept(llama: FakeOpenAIServer) -> None:
    # A tool result without its call id: refused by the strict server's request models.
    history: list[Message] = [*HISTORY[:2], ToolResultMessage(call_id="", name="read_file", content="x")]
    events = Events()
    with pytest.raises(ModelError) as info:
        ask(client(llama), history, events)
    assert len(llama.posts) == 1
    error = info.value
    assert error.status == 500 and error.request is not None and error.request.startswith("request 1 (POST ")
    assert "'messages', 3, 'ChatCompletionRequestToolMessage', 'tool_call_id')" in str(error)
    assert "Field required" in str(error) and "a validation error" in str(error) and "not retried" in str(error)
    assert error.body is not None and error.body.startswith("1 validation error:\n  {'type': 'missing'")
    assert events.of("model.retry") == []


REAL_BODY = (  # llama-cpp-python 0.3.36's answer to content: null, cut to its first three errors
    "7 validation errors:\n"
    "  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestSystemMessage', 'role'), "
    "'msg': \"Input should be 'system'\", 'input': 'assistant', 'ctx': {'expected': \"'system'\"}}\n"
    "  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestUserMessage', 'role'), "
    "'msg': \"Input should be 'user'\", 'input': 'assistant', 'ctx': {'expected': \"'user'\"}}\n"
    "  {'type': 'string_type', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestAssistantMessage', 'content'), "
    "'msg': 'Input should be a valid string', 'input': None}"
)


@pytest.mark.parametrize("body", [REAL_BODY, "llama_decode returned -1", "'dict object' has no attribute 'content'"])
def test_what_counts_as_a_validation_error(body: str) -> None:
    from agent.model.retry_rules import is_validation_error

    assert is_validation_error(body) == (body == REAL_BODY)


def test_a_long_server_message_is_kept_whole() -> None:
    roles = [problem("literal_error", ("messages", i, "role"), "Input should be 'system'", "x") for i in range(40)]
    message = validation_message([*roles, problem("string_type", ("messages", 41, "content"), "THE PART THAT MATTERS")])
    with FakeOpenAIServer([error_reply(500, message)]) as server, pytest.raises(ModelError) as info:
        ask(client(server))
    assert len(message) > 1500
    assert "THE PART THAT MATTERS" in str(info.value)
    assert info.value.body == message.strip()


def test_the_same_500_twice_is_not_retried_again() -> None:
    with FakeOpenAIServer(default=error_reply(500, "llama_decode returned -1")) as server:
        events = Events()
        with pytest.raises(ModelError) as info:
            ask(client(server), events=events)
        assert len(server.posts) == 2  # tried, retried once, the same answer: stop
    assert "the same answer twice in a row" in str(info.value)
    assert "HTTP 500: llama_decode returned -1" in str(info.value)
    assert len(events.of("model.retry")) == 1


def test_different_500s_and_503s_are_retried() -> None:
    replies = [error_reply(500, "one"), error_reply(500, "two"), error_reply(503, "busy"), error_reply(503, "busy"),
               chat_reply("ok")]
    with FakeOpenAIServer(replies) as server:
        assert ask(client(server)).message == "ok"
        assert len(server.posts) == 5


def test_a_400_that_is_not_about_stream_options_is_not_retried() -> None:
    with FakeOpenAIServer(default=error_reply(400, "bad")) as server:
        with pytest.raises(ModelError) as info:
            ask(client(server, stream=True))
        assert len(server.posts) == 1
    assert info.value.status == 400


# --- hints ---------------------------------------------------------------------------------------


def test_responses_api_404_says_the_server_has_none() -> None:
    with FakeOpenAIServer([error_reply(404, "Not Found")]) as server:
        c = make_client(OpenAIConfig(model="gemma-3-270m", base_url=server.url, api_key_env=KEY_ENV, api="responses"))
        with pytest.raises(ModelError) as info:
            c.complete("SYS", HISTORY, TOOLS, Events())
        url = server.url
    message = str(info.value)
    assert message.startswith(f"this server has no Responses API (POST {url}/responses answered 404)")
    assert "use --api chat" in message and "check --model" not in message


def test_responses_api_404_about_the_model_still_names_the_model() -> None:
    reply = error_reply(404, "The model `gpt-x` does not exist", code="model_not_found")
    with FakeOpenAIServer([reply]) as server:
        c = make_client(OpenAIConfig(model="gpt-x", base_url=server.url, api_key_env=KEY_ENV, api="responses"))
        with pytest.raises(ModelError) as info:
            c.complete("SYS", HISTORY, TOOLS, Events())
    assert str(info.value).startswith("model 'gpt-x' not found")


# --- slow generation, max_tokens, timeouts -----------------------------------------------------------


LONG = " ".join(f"word{i}" for i in range(60))


def test_max_tokens_caps_a_long_generation() -> None:
    with FakeOpenAIServer([chat_reply(LONG)], behaviour=ServerBehaviour(seconds_per_token=0.001)) as server:
        out = ask(client(server, max_tokens=5))
        assert server.posts[0].json["max_tokens"] == 5
    assert out.finish_reason == "length"
    assert out.message is not None and out.message.split() == ["word0", "word1", "word2", "word3", "word4"]


def test_a_generation_longer_than_the_request_timeout_fails_with_the_timeout_named() -> None:
    slow = ServerBehaviour(seconds_per_token=0.05)  # 60 tokens: 3 s, the timeout is 0.3 s
    with FakeOpenAIServer(default=chat_reply(LONG), behaviour=slow) as server, pytest.raises(ModelError) as info:
        ask(client(server, request_timeout_s=0.3, max_attempts=2, stream=False))
    assert "APITimeoutError: no answer within 0.3 s" in str(info.value)
    assert "failed 2 times" in str(info.value)


def test_streamed_the_same_slow_generation_fits_the_same_timeout() -> None:
    slow = ServerBehaviour(seconds_per_token=0.05)  # the timeout is between two chunks now
    with FakeOpenAIServer([chat_reply(LONG)], behaviour=slow) as server:
        out = ask(client(server, request_timeout_s=0.3, max_attempts=1, stream=True))
    assert out.message == LONG and out.finish_reason == "stop"


def test_parse_error_messages_read_well() -> None:
    from agent.model.arguments import parse_arguments
    from agent.tools import ToolRegistry

    _, _, error = parse_arguments('{"path": "a.py')
    assert error == "arguments are not valid JSON: Unterminated string starting at line 1 column 10"
    call = ToolCall(name="read_file", raw_arguments='{"path": "a.py', parse_error=error)
    with pytest.raises(Exception) as info:
        ToolRegistry().prepare(call)
    text = str(info.value)
    assert " at at " not in text
    assert text.lower().count("send the arguments as one json object") == 1


def test_requests_are_valid_json_with_no_null_content_for_any_history(llama: FakeOpenAIServer) -> None:
    llama.default = chat_reply("ok")
    history: list[Message] = [
        UserMessage(content="a"),
        AssistantMessage(content=None),
        UserMessage(content="[codebox] Your reply was empty."),
        AssistantMessage(content="text and a call", tool_calls=[ToolCall(id="c", name="read_file", arguments={})]),
        ToolResultMessage(call_id="c", name="read_file", content="r", is_error=True),
    ]
    assert ask(client(llama), history).message == "ok"
    sent = json.loads(llama.posts[0].body)
    assert [m.get("content") for m in sent["messages"] if m["role"] == "assistant"] == ["", "text and a call"]
