"""The OpenAI-compatible client, through the real ``openai`` SDK, against a scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from pydantic import BaseModel, Field

from agent.model.base import ModelError
from agent.model.factory import make_client
from agent.model.openai_client import (
    OpenAIChatClient,
    OpenAIConfig,
    parse_arguments,
    parse_retry_after,
)
from agent.model.responses_client import OpenAIResponsesClient
from agent.protocol import (
    AssistantMessage,
    Message,
    ModelOutput,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from tests.fake_openai_server import (
    Events,
    FakeOpenAIServer,
    RecordedRequest,
    Reply,
    chat_completion,
    chat_reply,
    error_reply,
    responses_reply,
    timeout_reply,
)

KEY_ENV = "CODEBOX_TEST_OPENAI_KEY"
SECRET = "sk-test-SECRET-0123456789abcdef"
MODEL = "test-model"


class SearchArgs(BaseModel):
    query: str = Field(description="what to look for")


class ReadArgs(BaseModel):
    path: str


TOOLS = [
    ToolSpec.from_args_model("search", "Search the repository.", SearchArgs),
    ToolSpec.from_args_model("read_file", "Read a file.", ReadArgs),
]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("CODEBOX_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(KEY_ENV, SECRET)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def config(server: FakeOpenAIServer, **overrides: Any) -> OpenAIConfig:
    options: dict[str, Any] = {
        "model": MODEL,
        "base_url": server.url,
        "api_key_env": KEY_ENV,
        "request_timeout_s": 5.0,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.01,
        **overrides,
    }
    return OpenAIConfig(**options)


def client(server: FakeOpenAIServer, **overrides: Any) -> OpenAIChatClient:
    return OpenAIChatClient(config(server, **overrides))


def ask(c: Any, events: Events | None = None, messages: list[Message] | None = None) -> ModelOutput:
    out: ModelOutput = c.complete("You are a test.", messages or [UserMessage(content="hi")], TOOLS, events or Events())
    return out


def model_error(c: Any, events: Events | None = None) -> str:
    with pytest.raises(ModelError) as info:
        ask(c, events)
    return str(info.value)


# --- the request -------------------------------------------------------------------------------


def test_exact_request_payload_for_a_multi_turn_history_with_tool_calls(server: FakeOpenAIServer) -> None:
    server.add(chat_reply("done"))
    history: list[Message] = [
        UserMessage(content="Fix the bug in calc.py"),
        AssistantMessage(
            content="Let me look.",
            tool_calls=[
                ToolCall(id="call_a", name="search", arguments={"query": "def add"}),
                ToolCall(id="call_b", name="read_file", arguments={"path": "calc.py"}),
            ],
        ),
        ToolResultMessage(call_id="call_a", name="search", content="calc.py:1: def add(a, b):"),
        ToolResultMessage(call_id="call_b", name="read_file", content="def add(a, b):\n    return a - b\n"),
        AssistantMessage(
            tool_calls=[
                ToolCall(
                    id="call_c",
                    name="read_file",
                    raw_arguments='{"path": "calc.py"',
                    parse_error="arguments are not valid JSON",
                )
            ]
        ),
        ToolResultMessage(call_id="call_c", name="read_file", content="error: not JSON", is_error=True),
        AssistantMessage(content="I see: it subtracts. é"),
        UserMessage(content="go on"),
    ]
    out = client(server, stream=False).complete("SYSTEM PROMPT", history, TOOLS, Events())
    assert out.message == "done"

    (request,) = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.header("Authorization") == f"Bearer {SECRET}"
    body = request.json
    assert body["model"] == MODEL
    assert body["messages"] == [
        {"role": "system", "content": "SYSTEM PROMPT"},
        {"role": "user", "content": "Fix the bug in calc.py"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"query": "def add"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "calc.py"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "calc.py:1: def add(a, b):"},
        {"role": "tool", "tool_call_id": "call_b", "content": "def add(a, b):\n    return a - b\n"},
        {
            "role": "assistant",
            "content": "",  # never null: strict servers answer null with HTTP 500
            "tool_calls": [
                {
                    "id": "call_c",
                    "type": "function",
                    # what the model sent, not an empty object: it sees its own mistake
                    "function": {"name": "read_file", "arguments": '{"path": "calc.py"'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_c", "content": "error: not JSON"},
        {"role": "assistant", "content": "I see: it subtracts. é"},
        {"role": "user", "content": "go on"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "search",
                "description": "Search the repository.",
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string", "title": "Query", "description": "what to look for"}},
                    "required": ["query"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string", "title": "Path"}},
                    "required": ["path"],
                },
            },
        },
    ]
    assert body["tool_choice"] == "auto"  # servers that need it to put the tools in the prompt
    assert set(body) == {"model", "messages", "tools", "tool_choice"}  # no temperature, max_tokens, stream...


def test_temperature_and_max_tokens_are_sent_when_set(server: FakeOpenAIServer) -> None:
    server.add(chat_reply("ok"))
    ask(client(server, temperature=0.2, max_tokens=256))
    body = server.requests[0].json
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 256  # a local server: the widely known name


def test_no_tools_means_no_tools_key(server: FakeOpenAIServer) -> None:
    server.add(chat_reply("ok"))
    client(server, stream=False).complete("", [UserMessage(content="hi")], [], Events())
    assert server.requests[0].json == {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}


# --- parsing replies ---------------------------------------------------------------------------


def test_parallel_tool_calls_are_parsed_in_order(server: FakeOpenAIServer) -> None:
    server.add(
        chat_reply(
            tool_calls=[
                ("search", {"query": "one"}, "id1"),
                ("read_file", {"path": "a.py"}, "id2"),
                ("search", {"query": "three"}, "id3"),
            ]
        )
    )
    out = ask(client(server))
    assert out.message is None
    assert out.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in out.tool_calls] == [
        ("id1", "search", {"query": "one"}),
        ("id2", "read_file", {"path": "a.py"}),
        ("id3", "search", {"query": "three"}),
    ]
    assert all(c.parse_error is None and c.raw_arguments is None for c in out.tool_calls)


def test_text_and_tool_calls_are_both_kept(server: FakeOpenAIServer) -> None:
    server.add(chat_reply("I will search first.", tool_calls=[("search", {"query": "x"})]))
    out = ask(client(server))
    assert out.message == "I will search first."
    assert [c.name for c in out.tool_calls] == ["search"]


def test_bad_arguments_give_a_parse_error_and_keep_what_was_sent(server: FakeOpenAIServer) -> None:
    double = json.dumps(json.dumps({"query": "twice"}))
    server.add(
        chat_reply(
            tool_calls=[
                ("search", '{"query": "x"', "bad"),
                ("search", '["x"]', "list"),
                ("search", '"just text"', "string"),
                ("search", double, "double"),
                ("search", "", "empty"),
            ]
        )
    )
    bad, as_list, as_string, double_call, empty = ask(client(server)).tool_calls

    assert bad.arguments == {} and bad.raw_arguments == '{"query": "x"'
    assert bad.parse_error is not None and "not valid JSON" in bad.parse_error

    assert as_list.arguments == {} and as_list.raw_arguments == '["x"]'
    assert as_list.parse_error == "arguments must be a JSON object, got an array"

    assert as_string.raw_arguments == '"just text"'
    assert as_string.parse_error == "arguments must be a JSON object, got a string"

    assert double_call.arguments == {"query": "twice"}  # decoded once more
    assert double_call.parse_error is None and double_call.raw_arguments is None

    assert empty.arguments == {} and empty.parse_error is None  # a call without arguments


@pytest.mark.parametrize(
    ("raw", "arguments", "error"),
    [
        ('{"a": 1}', {"a": 1}, None),
        ({"a": 1}, {"a": 1}, None),  # some servers send an object, not a string
        (None, {}, None),
        ("  ", {}, None),
        ("42", {}, "arguments must be a JSON object, got a number"),
        ("null", {}, "arguments must be a JSON object, got null"),
        ("true", {}, "arguments must be a JSON object, got a boolean"),
        (json.dumps(json.dumps([1])), {}, "arguments must be a JSON object, got a string"),
        ([1, 2], {}, "arguments must be a JSON object, got an array"),
    ],
)
def test_parse_arguments(raw: Any, arguments: dict[str, Any], error: str | None) -> None:
    args, _, err = parse_arguments(raw)
    assert args == arguments
    assert err == error


def test_cut_off_reply_keeps_finish_reason_length_and_says_so(server: FakeOpenAIServer) -> None:
    server.add(chat_reply(tool_calls=[("search", '{"query": "unfinis')], finish_reason="length"))
    out = ask(client(server))
    assert out.finish_reason == "length"
    (call,) = out.tool_calls
    assert call.parse_error is not None and "cut off" in call.parse_error
    assert call.raw_arguments == '{"query": "unfinis'


def test_empty_reply_has_no_message(server: FakeOpenAIServer) -> None:
    server.add(chat_reply(None), chat_reply("  \n"), Reply(body={"id": "x", "object": "chat.completion"}))
    c = client(server)
    for _ in range(3):
        out = ask(c)
        assert out.message is None and out.tool_calls == []


def test_missing_tool_call_ids_are_generated(server: FakeOpenAIServer) -> None:
    no_id = {"type": "function", "function": {"name": "search", "arguments": '{"query": "a"}'}}
    null_id = {"id": None, "function": {"name": "search", "arguments": '{"query": "b"}'}}
    server.add(chat_reply(tool_calls=[no_id, null_id]))
    first, second = ask(client(server)).tool_calls
    assert first.id and second.id and first.id != second.id
    assert (first.arguments, second.arguments) == ({"query": "a"}, {"query": "b"})


def test_usage_is_parsed(server: FakeOpenAIServer) -> None:
    server.add(chat_reply("ok", usage=(123, 45)), chat_reply("ok", usage=None))
    c = client(server)
    usage = ask(c).usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (123, 45, 168)
    assert ask(c).usage is None


def test_a_reply_that_is_not_json_is_a_model_error(server: FakeOpenAIServer) -> None:
    server.add(Reply(body="<html>proxy says hi</html>"))
    assert "not JSON" in model_error(client(server))


# --- retries -----------------------------------------------------------------------------------


def test_429_with_retry_after_is_honored(server: FakeOpenAIServer) -> None:
    server.add(error_reply(429, "Rate limit reached", headers={"Retry-After": "1"}), chat_reply("ok"))
    events = Events()
    out = ask(client(server, backoff_base_s=5.0, backoff_max_s=5.0), events)
    assert out.message == "ok"
    first, second = server.requests
    assert 0.9 <= second.time - first.time < 2.0
    (retry,) = events.of("model.retry")
    assert retry["attempt"] == 1
    assert retry["wait_s"] == pytest.approx(1.0, abs=0.01)
    assert "429" in retry["reason"] and "Rate limit reached" in retry["reason"]


def test_retry_after_ms_is_honored(server: FakeOpenAIServer) -> None:
    server.add(error_reply(503, "busy", headers={"retry-after-ms": "50"}), chat_reply("ok"))
    events = Events()
    assert ask(client(server, backoff_base_s=5.0, backoff_max_s=5.0), events).message == "ok"
    assert events.of("model.retry")[0]["wait_s"] == pytest.approx(0.05, abs=0.005)


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"retry-after": later}) == pytest.approx(30, abs=2)
    past = format_datetime(datetime.now(UTC) - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"retry-after": past}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_500_twice_then_success(server: FakeOpenAIServer) -> None:
    server.add(error_reply(500, "boom"), error_reply(502, "bad gateway"), chat_reply("ok"))
    events = Events()
    assert ask(client(server), events).message == "ok"
    assert len(server.requests) == 3
    retries = events.of("model.retry")
    assert [r["attempt"] for r in retries] == [1, 2]
    assert retries[0]["reason"] == "HTTP 500: boom"
    assert retries[1]["reason"] == "HTTP 502: bad gateway"
    assert [(r["status"], r["body"]) for r in retries] == [(500, "boom"), (502, "bad gateway")]
    assert retries[0]["request"].startswith("request 1 (POST ")
    assert all(0 <= r["wait_s"] <= 0.01 for r in retries)


def test_timeout_then_success(server: FakeOpenAIServer) -> None:
    server.add(timeout_reply(3.0), chat_reply("ok"))
    events = Events()
    started = time.monotonic()
    assert ask(client(server, request_timeout_s=0.5), events).message == "ok"
    assert time.monotonic() - started < 2.5
    assert len(server.requests) == 2
    (retry,) = events.of("model.retry")
    assert retry["attempt"] == 1
    assert retry["reason"].startswith("APITimeoutError")


def test_connection_refused_is_retried_then_fails_clearly() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = OpenAIChatClient(
        OpenAIConfig(
            model=MODEL,
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key_env=KEY_ENV,
            max_attempts=2,
            backoff_base_s=0.01,
            backoff_max_s=0.01,
        )
    )
    events = Events()
    message = model_error(c, events)
    assert message.startswith("model unavailable: request 1 (POST http://127.0.0.1:")
    assert "/v1/chat/completions, 1 messages, 2 tools) failed 2 times over " in message
    assert "APIConnectionError" in message
    assert len(events.of("model.retry")) == 1


def test_retry_budget_exhausted(server: FakeOpenAIServer) -> None:
    server.default = error_reply(503, "overloaded")
    events = Events()
    message = model_error(client(server, max_attempts=3), events)
    assert len(server.requests) == 3
    assert message.startswith("model unavailable: request 1 (POST ")
    assert " failed 3 times over " in message  # 503 is "not now": the same words again are no reason to stop
    assert message.endswith(": HTTP 503: overloaded")
    assert [r["attempt"] for r in events.of("model.retry")] == [1, 2]


def test_total_time_budget_caps_retry_after(server: FakeOpenAIServer) -> None:
    server.default = error_reply(429, "slow down", headers={"Retry-After": "30"})
    events = Events()
    started = time.monotonic()
    message = model_error(client(server, max_retry_time_s=0.3), events)
    assert time.monotonic() - started < 2.0
    assert "model unavailable: request 1" in message and "HTTP 429: slow down" in message
    assert all(r["wait_s"] <= 0.3 for r in events.of("model.retry"))


# --- refusals: never retried ------------------------------------------------------------------


def test_401_names_the_variable_and_is_not_retried(server: FakeOpenAIServer) -> None:
    server.add(error_reply(401, "Incorrect API key provided"))
    events = Events()
    message = model_error(client(server), events)
    assert message.startswith(f"authentication failed: set {KEY_ENV} to a valid key")
    assert "Incorrect API key provided" in message
    assert len(server.requests) == 1
    assert events.items == []


def test_401_with_the_variable_unset_says_so(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    server.add(error_reply(401, "key required"))
    message = model_error(client(server))
    assert f"set {KEY_ENV} to a valid key; {KEY_ENV} is not set" in message
    assert server.requests[0].header("Authorization") == "Bearer not-needed"


def test_404_names_model_and_base_url(server: FakeOpenAIServer) -> None:
    server.add(error_reply(404, "The model `test-model` does not exist"))
    message = model_error(client(server))
    assert message.startswith(f"model '{MODEL}' not found at {server.url} (check --model and --base-url")
    assert len(server.requests) == 1


def test_400_includes_the_servers_message(server: FakeOpenAIServer) -> None:
    server.add(error_reply(400, "This model's maximum context length is 8192 tokens", code="context_length"))
    message = model_error(client(server))
    assert message == (
        f"request 1 (POST {server.url}/chat/completions, 1 messages, 2 tools) was rejected with HTTP 400: "
        "This model's maximum context length is 8192 tokens"
    )
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(server: FakeOpenAIServer, status: int) -> None:
    server.default = error_reply(status, "no")
    events = Events()
    model_error(client(server), events)
    assert len(server.requests) == 1
    assert events.items == []


def test_error_bodies_in_other_shapes(server: FakeOpenAIServer) -> None:
    server.add(
        Reply(body={"object": "error", "message": "vllm says no", "code": 400}, status=400),
        Reply(body={"detail": "fastapi says no"}, status=422),
        Reply(body="plain text says no", status=400),
    )
    c = client(server)
    assert model_error(c).endswith("vllm says no")
    assert model_error(c).endswith("fastapi says no")
    assert model_error(c).endswith("plain text says no")


# --- configuration and the key ----------------------------------------------------------------


def test_the_key_never_shows(server: FakeOpenAIServer) -> None:
    server.add(
        error_reply(500, f"upstream rejected key {SECRET}"),
        error_reply(401, f"Incorrect API key provided: {SECRET}"),
    )
    cfg = config(server)
    c = OpenAIChatClient(cfg)
    events = Events()
    message = model_error(c, events)
    assert events.of("model.retry")  # the 500 was retried, and its reason scrubbed
    for text in (repr(cfg), str(cfg), cfg.model_dump_json(), repr(c), message, json.dumps(events.items)):
        assert SECRET not in text
    assert "***" in message
    assert server.requests[0].header("Authorization") == f"Bearer {SECRET}"


def test_missing_key_for_openai_endpoint_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(ModelError, match=f"no API key: set {KEY_ENV}"):
        OpenAIChatClient(OpenAIConfig(model=MODEL, api_key_env=KEY_ENV))
    with pytest.raises(ModelError, match="set OPENAI_API_KEY"):
        OpenAIChatClient(OpenAIConfig(model=MODEL, base_url="https://api.openai.com/v1"))


def test_no_model_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="--model"):
        OpenAIChatClient(OpenAIConfig(base_url="http://127.0.0.1:1/v1"))


def test_config_defaults_from_env_and_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    cfg = OpenAIConfig.from_options(model=None, base_url=None, temperature=None, request_timeout_s=30)
    assert (cfg.model, cfg.base_url, cfg.api_key_env) == ("env-model", "http://localhost:11434/v1", "OPENAI_API_KEY")
    assert (cfg.request_timeout_s, cfg.temperature, cfg.max_attempts, cfg.max_retry_time_s) == (30, None, 6, 120)
    assert not cfg.uses_openai_endpoint
    cfg = OpenAIConfig.from_options(model="cli-model", base_url="https://api.openai.com/v1/")
    assert cfg.model == "cli-model" and cfg.uses_openai_endpoint
    with pytest.raises(ValueError):
        OpenAIConfig.from_options(no_such_option=1)


def test_client_name_is_the_model(server: FakeOpenAIServer) -> None:
    assert client(server).name == MODEL
    assert isinstance(make_client(config(server)), OpenAIChatClient)


# --- the Responses API adapter ----------------------------------------------------------------


def test_responses_adapter_payload_and_parsing(server: FakeOpenAIServer) -> None:
    server.add(responses_reply("Looking.", tool_calls=[("search", {"query": "x"}, "c1"), ("read_file", "[1]", "c2")]))
    c = make_client(config(server, api="responses", temperature=0.0))
    assert isinstance(c, OpenAIResponsesClient)
    history: list[Message] = [
        UserMessage(content="task"),
        AssistantMessage(content="ok", tool_calls=[ToolCall(id="c0", name="search", arguments={"query": "q"})]),
        ToolResultMessage(call_id="c0", name="search", content="found"),
    ]
    out = c.complete("SYS", history, TOOLS[:1], Events())
    (request,) = server.requests
    assert request.path == "/v1/responses"
    assert request.json == {
        "model": MODEL,
        "instructions": "SYS",
        "store": False,
        "temperature": 0.0,
        "input": [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "ok"},
            {"type": "function_call", "call_id": "c0", "name": "search", "arguments": '{"query": "q"}'},
            {"type": "function_call_output", "call_id": "c0", "output": "found"},
        ],
        "tools": [
            {
                "type": "function",
                "name": "search",
                "description": "Search the repository.",
                "parameters": TOOLS[0].parameters,
                "strict": False,
            }
        ],
        "tool_choice": "auto",
    }
    assert out.message == "Looking."
    assert out.finish_reason == "tool_calls"
    assert [(t.id, t.name, t.arguments) for t in out.tool_calls] == [
        ("c1", "search", {"query": "x"}),
        ("c2", "read_file", {}),
    ]
    assert out.tool_calls[1].parse_error == "arguments must be a JSON object, got an array"
    assert out.usage is not None and out.usage.total_tokens == 15


def test_responses_adapter_cut_off_and_retries(server: FakeOpenAIServer) -> None:
    server.add(
        error_reply(500, "boom"), responses_reply("partial", status="incomplete", incomplete_reason="max_output_tokens")
    )
    events = Events()
    out = make_client(config(server, api="responses")).complete("", [UserMessage(content="x")], [], events)
    assert (out.message, out.finish_reason) == ("partial", "length")
    assert len(events.of("model.retry")) == 1


# --- the fake server itself --------------------------------------------------------------------


def test_fake_server_records_and_runs_out_clearly(server: FakeOpenAIServer) -> None:
    server.add(lambda req: chat_reply(f"echo {req.json['messages'][-1]['content']}"))
    c = client(server)
    assert ask(c, messages=[UserMessage(content="ping")]).message == "echo ping"
    assert "no scripted reply left for request #2" in model_error(c)
    assert [r.path for r in server.posts] == ["/v1/chat/completions"] * 2
    assert isinstance(server.requests[0], RecordedRequest)
    assert chat_completion("x")["choices"][0]["finish_reason"] == "stop"


def test_display_url_hides_credentials_and_query() -> None:
    config = OpenAIConfig(model="m", base_url="http://user:pw@127.0.0.1:9/v1?api-key=SECRET")
    assert config.display_base_url == "http://127.0.0.1:9/v1"


def test_a_non_json_page_echoing_the_key_does_not_leak_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_TEST_KEY", "sk-echoed-secret-123456")

    def echo(request: Any) -> Reply:
        return Reply(body=f"<html>proxy debug: {request.header('Authorization')}</html>")

    with FakeOpenAIServer([echo]) as server:
        client = OpenAIChatClient(OpenAIConfig(model="m", base_url=server.url, api_key_env="CODEBOX_TEST_KEY"))
        with pytest.raises(ModelError) as info:
            client.complete("i", [UserMessage(content="hi")], [], lambda t, d: None)
    assert "not JSON" in str(info.value) and "sk-echoed-secret-123456" not in str(info.value)
