"""Streamed replies: tool-call deltas put back together, text deltas as events, broken streams retried whole."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.model.base import ModelError
from agent.model.chat_stream import ChatStreamAssembler
from agent.model.config import OpenAIConfig
from agent.model.openai_client import OpenAIChatClient
from agent.model.retry_rules import StreamInterrupted
from agent.protocol import ModelOutput, ToolSpec, UserMessage
from agent.task.events import FanoutSink, JsonlSink, MemorySink
from agent.task.loop import Limits
from tests.fake_openai_behaviour import ServerBehaviour, completion_chunks
from tests.fake_openai_server import Events, FakeOpenAIServer, Reply, chat_completion, chat_reply, stream_reply
from tests.fakes import make_agent, task

KEY_ENV = "CODEBOX_TEST_OPENAI_KEY"
TOOLS = [ToolSpec(name="search", description="Search.", parameters={"type": "object", "properties": {}})]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("CODEBOX_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(KEY_ENV, "sk-test")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def client(server: FakeOpenAIServer, **overrides: Any) -> OpenAIChatClient:
    options: dict[str, Any] = {"model": "m", "base_url": server.url, "api_key_env": KEY_ENV,
                               "request_timeout_s": 5.0, "backoff_base_s": 0.01, "backoff_max_s": 0.01, **overrides}
    return OpenAIChatClient(OpenAIConfig(**options))


def ask(c: OpenAIChatClient, events: Events | None = None) -> ModelOutput:
    return c.complete("SYS", [UserMessage(content="go")], TOOLS, events or Events())


def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


def call_delta(index: int | None = None, call_id: str | None = None, name: str | None = None,
               args: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {}
    if index is not None:
        call["index"] = index
    if call_id is not None:
        call["id"] = call_id
        call["type"] = "function"
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    call["function"] = fn
    return delta({"tool_calls": [call]})


def assemble(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    assembler = ChatStreamAssembler()
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.result()


def calls_of(body: dict[str, Any]) -> list[tuple[str | None, str, Any]]:
    return [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in body["choices"][0]["message"]["tool_calls"]]


# --- the assembler -------------------------------------------------------------------------------

ARGS_A = json.dumps({"query": 'say "hi" \\ é', "path": "src/a b.py"}, ensure_ascii=False)
ARGS_B = json.dumps({"path": "x.py", "start": 3})


def _split_awkwardly(text: str) -> list[str]:
    """Cut inside the JSON strings: after a backslash, inside the escaped quote, one char at a time near it."""
    cuts = sorted({1, text.index("\\") + 1, text.index('"hi') + 1, text.index("é"), len(text) - 2})
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True) if text[a:b]]


def test_two_calls_interleaved_with_arguments_cut_inside_strings() -> None:
    a, b = _split_awkwardly(ARGS_A), [ARGS_B[:5], ARGS_B[5:6], ARGS_B[6:]]
    chunks = [delta({"role": "assistant", "content": ""}),
              call_delta(0, "call_a", "search", ""), call_delta(1, "call_b", "read_file", "")]
    for i in range(max(len(a), len(b))):  # a piece of one, a piece of the other
        if i < len(a):
            chunks.append(call_delta(0, args=a[i]))
        if i < len(b):
            chunks.append(call_delta(1, args=b[i]))
    chunks.append(delta({}, "tool_calls"))
    body = assemble(chunks)
    assert calls_of(body) == [("call_a", "search", json.loads(ARGS_A)), ("call_b", "read_file", json.loads(ARGS_B))]
    assert body["choices"][0]["finish_reason"] == "tool_calls"


def test_calls_without_index_and_calls_all_numbered_zero() -> None:
    no_index = [call_delta(None, "c1", "search", '{"q": '), call_delta(None, None, None, '"a"}'),
                call_delta(None, "c2", "search", '{"q": "b"}'), delta({}, "tool_calls")]
    assert calls_of(assemble(no_index)) == [("c1", "search", {"q": "a"}), ("c2", "search", {"q": "b"})]
    all_zero = [call_delta(0, "c1", "search", '{"q": "a"}'), call_delta(0, "c2", "search", '{"q": "b"}'),
                delta({}, "tool_calls")]
    assert calls_of(assemble(all_zero)) == [("c1", "search", {"q": "a"}), ("c2", "search", {"q": "b"})]


def test_a_name_in_pieces_and_a_name_repeated_in_every_delta() -> None:
    pieces = [call_delta(0, "c", "read_", ""), call_delta(0, None, "file", "{}"), delta({}, "tool_calls")]
    assert calls_of(assemble(pieces))[0][1] == "read_file"
    repeated = [call_delta(0, "c", "search", "{"), call_delta(0, "c", "search", "}"), delta({}, "tool_calls")]
    assert calls_of(assemble(repeated)) == [("c", "search", {})]


def test_text_deltas_usage_in_a_last_chunk_without_choices() -> None:
    seen: list[str] = []
    assembler = ChatStreamAssembler(seen.append)
    for chunk in [delta({"role": "assistant", "content": ""}), delta({"content": "Hel"}), delta({"content": "lo"}),
                  delta({}, "stop"), {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2}}]:
        assembler.add(chunk)
    body = assembler.result()
    assert seen == ["Hel", "lo"]
    assert body["choices"][0]["message"]["content"] == "Hello"
    assert body["usage"] == {"prompt_tokens": 7, "completion_tokens": 2}


def test_a_stream_without_finish_or_with_an_error_is_refused() -> None:
    with pytest.raises(StreamInterrupted, match="without a finish_reason"):
        assemble([delta({"content": "half"})])
    with pytest.raises(StreamInterrupted, match="the server sent an error in the stream: out of memory"):
        assemble([delta({"content": "half"}), {"error": {"message": "out of memory"}}])


# --- through the SDK and the test server ---------------------------------------------------------


def test_a_streamed_reply_with_awkward_splits_through_the_sdk(server: FakeOpenAIServer) -> None:
    a = _split_awkwardly(ARGS_A)
    chunks: list[dict[str, Any] | str] = [delta({"role": "assistant", "content": "Look"}), delta({"content": "ing."}),
                                          call_delta(0, "call_a", "search", ""), call_delta(1, "call_b", "read_file")]
    chunks += [call_delta(0, args=p) for p in a[:2]] + [call_delta(1, args=ARGS_B)]
    chunks += [call_delta(0, args=p) for p in a[2:]]
    chunks += [delta({}, "tool_calls"), {"object": "chat.completion.chunk", "choices": [],
                                         "usage": {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}}]
    server.add(stream_reply(chunks))
    events = Events()
    out = ask(client(server), events)
    body = server.posts[0].json
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert out.message == "Looking."
    assert [(c.id, c.name, c.arguments) for c in out.tool_calls] == [
        ("call_a", "search", json.loads(ARGS_A)), ("call_b", "read_file", json.loads(ARGS_B))]
    assert out.usage is not None and (out.usage.input_tokens, out.usage.output_tokens) == (11, 4)
    assert events.of("message.delta") == [{"text": "Look", "attempt": 1}, {"text": "ing.", "attempt": 1}]


@pytest.mark.parametrize("cut", ["reset", "eof"])
def test_a_stream_cut_in_the_middle_is_retried_and_never_half_used(server: FakeOpenAIServer, cut: str) -> None:
    first = completion_chunks(chat_completion("The first answer, never finished."), include_usage=True)
    second = chat_reply("The second answer.", tool_calls=[("search", {"q": "x"}, "c9")])
    server.add(stream_reply(first, cut=cut, cut_after=4), second)  # type: ignore[arg-type]
    events = Events()
    out = ask(client(server), events)
    assert len(server.posts) == 2
    assert out.message == "The second answer." and [c.id for c in out.tool_calls] == ["c9"]
    (retry,) = events.of("model.retry")
    assert retry["reason"].startswith("stream interrupted: ")
    attempts = {d["attempt"] for d in events.of("message.delta")}
    assert attempts == {1, 2}  # the console was shown attempt 1's text; the retry event says it is void
    assert "".join(d["text"] for d in events.of("message.delta") if d["attempt"] == 2) == "The second answer."


def test_cut_streams_spend_the_attempts_then_fail_clearly(server: FakeOpenAIServer) -> None:
    chunks = completion_chunks(chat_completion("never whole"), include_usage=False)
    server.default = stream_reply(chunks, cut="reset", cut_after=2)  # type: ignore[arg-type]
    with pytest.raises(ModelError) as info:
        ask(client(server, max_attempts=3))
    assert len(server.posts) == 3
    assert "failed 3 times" in str(info.value) and "stream interrupted: the connection broke after" in str(info.value)


def test_the_same_error_event_twice_is_not_retried_again(server: FakeOpenAIServer) -> None:
    bad = stream_reply([delta({"content": "x"}), {"error": {"message": "CUDA error"}}])
    server.default = bad
    with pytest.raises(ModelError) as info:
        ask(client(server))
    assert len(server.posts) == 2
    assert "the same answer twice in a row" in str(info.value) and "CUDA error" in str(info.value)


def test_a_server_that_refuses_stream_options_is_asked_again_without(server: FakeOpenAIServer) -> None:
    with FakeOpenAIServer(default=chat_reply("ok"), behaviour=ServerBehaviour(refuse_stream_options=True)) as old:
        c = client(old)
        assert ask(c).message == "ok" and ask(c).message == "ok"
        sent = [r.json for r in old.posts]
    assert ["stream_options" in b for b in sent] == [True, False, False]  # refused once, then never sent


def test_a_server_that_ignores_stream_true_and_answers_whole(server: FakeOpenAIServer) -> None:
    # Not "chat.completion": the test server then sends it as it is, not as a stream.
    server.add(Reply(body={**chat_completion("whole reply"), "object": "chat.completion.whole"}))
    assert ask(client(server)).message == "whole reply"


def test_no_stream_asks_for_a_whole_reply(server: FakeOpenAIServer) -> None:
    server.add(chat_reply("ok"))
    events = Events()
    assert ask(client(server, stream=False), events).message == "ok"
    assert "stream" not in server.posts[0].json and events.of("message.delta") == []


# --- through the loop: deltas are events, the events file keeps only the whole reply --------------


def test_deltas_reach_the_sinks_but_not_the_events_file(server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.add(chat_reply("All good, nothing to change."))
    agent, memory, _, _ = make_agent([])
    agent.model = client(server)
    path = tmp_path / "events.jsonl"
    agent.sink = FanoutSink(memory, JsonlSink(path))
    report = agent.run(task())
    agent.sink.close()
    assert report.final_message == "All good, nothing to change."
    deltas = [e.data["text"] for e in memory.events if e.type == "message.delta"]
    assert "".join(deltas) == "All good, nothing to change." and len(deltas) > 1
    in_file = [json.loads(line)["type"] for line in path.read_text().splitlines()]
    assert "message.delta" not in in_file and "message" in in_file
    assert isinstance(memory, MemorySink)


def test_a_run_that_stops_mid_stream_hangs_up_and_emits_nothing_after_its_end() -> None:
    long_reply = chat_reply(" ".join(f"w{i}" for i in range(400)))  # 20 s at 0.05 s a token
    with FakeOpenAIServer([long_reply], behaviour=ServerBehaviour(seconds_per_token=0.05)) as slow:
        agent, memory, _, _ = make_agent([], limits=Limits(timeout_s=0.5))
        agent.model = client(slow)
        report = agent.run(task())
        deadline = time.monotonic() + 10
        while slow.hangups == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert slow.hangups == 1  # the generation was abandoned, not left running for the next request
    assert report.stop_reason == "timeout"
    assert memory.events[-1].type == "turn.end"
    assert any(e.type == "message.delta" for e in memory.events)
