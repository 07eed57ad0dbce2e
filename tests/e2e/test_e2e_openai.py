"""A whole `codebox run`: real openai SDK against a local fake server, real sandbox, real patch + test."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent.cli.parser import main
from tests.fake_openai_behaviour import (
    LLAMA_CPP_PYTHON,
    ServerBehaviour,
    completion_chunks,
    problem,
    validation_message,
)
from tests.fake_openai_server import FakeOpenAIServer, chat_completion, chat_reply, error_reply, stream_reply

pytestmark = pytest.mark.docker

DEMO_REPO = Path(__file__).resolve().parents[2] / "agent" / "cli" / "demo_data" / "repo"
FIX = (
    "*** Begin Patch\n*** Update File: backoff.py\n@@\n-    for n in range(1, attempts):\n"
    "+    for n in range(attempts):\n*** End Patch\n"
)


@pytest.fixture(scope="module", autouse=True)
def _image() -> None:
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()


def test_openai_client_drives_a_real_sandbox_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_REPO, repo)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    replies = [
        chat_reply(tool_calls=[("read_file", {"path": "backoff.py"}, "call_read")]),
        chat_reply(text="Fixing the loop.", tool_calls=[("apply_patch", {"input": FIX}, "call_patch")]),
        error_reply(503, "overloaded"),  # retried by the client
        chat_reply(tool_calls=[("run_test", {"args": ["-q"]}, "call_test")]),
        chat_reply("Fixed: delays() now starts at base; 4 tests pass."),
    ]
    report_path, events_path = tmp_path / "report.json", tmp_path / "events.jsonl"
    with FakeOpenAIServer(replies) as server:
        code = main([
            "run", "--repo", str(repo), "--model", "fake-model", "--base-url", server.url,
            "--policy", "workspace-write", "--allow", "*.py", "--test-cmd", "python3 -m pytest",
            "--report", str(report_path), "--events", str(events_path), "--quiet",
            "Fix the retry delays",
        ])
        requests = [r.json for r in server.posts]
    report = json.loads(report_path.read_text())
    assert code == 0, report
    assert report["status"] == "completed" and report["files_changed"] == ["backoff.py"]
    assert report["last_test"]["outcome"] == "ok" and report["last_test"]["exit_code"] == 0
    assert report["usage"]["total_tokens"] > 0
    assert "for n in range(attempts):" in (repo / "backoff.py").read_text()

    # What the model was sent: the history grows with each tool result, keyed by call id.
    assert len(requests) == 5
    last = requests[-1]["messages"]
    tool_messages = {m["tool_call_id"]: m["content"] for m in last if m["role"] == "tool"}
    assert set(tool_messages) == {"call_read", "call_patch", "call_test"}
    assert "range(1, attempts)" in tool_messages["call_read"]
    assert "4 passed" in tool_messages["call_test"]
    assert {t["function"]["name"] for t in requests[0]["tools"]} == {"read_file", "search", "apply_patch", "run_test"}

    # The event log alone audits the run: arguments in, results out, the retry.
    events = [json.loads(line) for line in events_path.read_text().splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "turn.start" and types[-1] == "turn.end" and "model.retry" in types
    ends = {e["data"]["call_id"]: e["data"]["content"] for e in events if e["type"] == "tool.end"}
    assert ends == tool_messages
    patch_start = next(e for e in events if e["type"] == "tool.start" and e["data"]["name"] == "apply_patch")
    assert patch_start["data"]["arguments"] == {"input": FIX} and patch_start["data"]["decision"] == "allow"
    assert "sk-test-not-a-real-key" not in events_path.read_text()


# --- against a server as strict and slow as llama-cpp-python's ----------------------------------


def _run(server_url: str, repo: Path, tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
    report_path, events_path = tmp_path / "report.json", tmp_path / "events.jsonl"
    code = main([
        "run", "--repo", str(repo), "--model", "fake-model", "--base-url", server_url,
        "--policy", "workspace-write", "--allow", "*.py", "--test-cmd", "python3 -m pytest",
        "--report", str(report_path), "--events", str(events_path), "--quiet", *extra,
        "Fix the retry delays",
    ])
    events = [json.loads(line) for line in events_path.read_text().splitlines()]
    return code, json.loads(report_path.read_text()), events


def test_a_run_against_a_strict_server_like_llama_cpp_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_REPO, repo)
    replies = [
        chat_reply(tool_calls=[("read_file", {"path": "backoff.py"}, "call_read")]),
        chat_reply(tool_calls=[("apply_patch", {"input": FIX}, "call_patch")]),  # no text: content "" next time
        chat_reply(tool_calls=[("run_test", {"args": ["-q"]}, "call_test")]),
        chat_reply("Fixed."),
    ]
    with FakeOpenAIServer(replies, behaviour=LLAMA_CPP_PYTHON) as server:
        code, report, events = _run(server.url, repo, tmp_path, "--max-tokens", "512")
        bodies = [r.json for r in server.posts]
    assert code == 0, report
    assert report["status"] == "completed" and report["files_changed"] == ["backoff.py"]
    # The first request, streamed, meets the server's empty stream and goes again unstreamed at
    # once; the rest of the run is unstreamed: no 500, no retry, no prose instead of tool calls.
    assert [b.get("stream", False) for b in bodies] == [True, False, False, False, False]
    for body in bodies:
        assert body["tool_choice"] == "auto" and body["max_tokens"] == 512
        assert all(isinstance(m["content"], str) for m in body["messages"])
    types = [e["type"] for e in events]
    assert types.count("model.fallback") == 1 and "model.retry" not in types


@pytest.mark.parametrize("mode", ["empty", "error"])
def test_a_server_that_cannot_stream_tools_costs_one_request_and_one_console_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_REPO, repo)
    replies = [
        chat_reply(tool_calls=[("read_file", {"path": "backoff.py"}, "call_read")]),
        chat_reply(tool_calls=[("search", {"query": "def delays"}, "call_search")]),
        chat_reply("It starts at 1."),
    ]
    behaviour = dataclasses.replace(LLAMA_CPP_PYTHON, stream_with_tools=mode)
    report_path = tmp_path / "report.json"
    with FakeOpenAIServer(replies, behaviour=behaviour) as server:
        code = main(["run", "--repo", str(repo), "--model", "fake-model", "--base-url", server.url,
                     "--report", str(report_path), "Why is the first delay doubled?"])
        posts = len(server.posts)
    out = capsys.readouterr().out
    report = json.loads(report_path.read_text())
    assert code == 0 and report["final_message"] == "It starts at 1." and report["steps"] == 3
    assert posts == 4  # one request more than the three replies, not six retries
    assert out.count("note: the server cannot stream replies to requests with tools") == 1
    assert "model retry" not in out


def test_a_validation_500_ends_the_run_once_with_the_whole_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_REPO, repo)
    roles = [problem("literal_error", ("messages", 2, f"ChatCompletionRequest{r}Message", "role"),
                     f"Input should be '{r.lower()}'", "assistant") for r in ("System", "User", "Tool", "Function")]
    content = problem("string_type", ("messages", 2, "ChatCompletionRequestAssistantMessage", "content"),
                      "Input should be a valid string")
    message = validation_message([*roles, content])
    with FakeOpenAIServer([error_reply(500, message)]) as server:
        code, report, events = _run(server.url, repo, tmp_path)
        posts = len(server.posts)
    assert code == 1 and report["stop_reason"] == "model_error"
    assert posts == 1  # a validation error: never retried
    assert "'ChatCompletionRequestAssistantMessage', 'content')" in report["error"]
    assert report["error"].startswith("request 1 (POST ")
    (error,) = [e["data"] for e in events if e["type"] == "model.error"]
    assert error["status"] == 500 and error["body"] == message


def test_slow_generation_cut_by_max_tokens_and_the_note_is_in_the_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_REPO, repo)
    rambling = " ".join(f"thought{i}" for i in range(200))
    slow = ServerBehaviour(seconds_per_token=0.002, refuse_null_content=True, validation_status=500)
    with FakeOpenAIServer([chat_reply(rambling), chat_reply("Nothing to fix.")], behaviour=slow) as server:
        code, report, events = _run(server.url, repo, tmp_path, "--max-tokens", "20")
    assert code == 0 and report["final_message"] == "Nothing to fix."
    (note,) = [e["data"] for e in events if e["type"] == "note"]
    assert note["reason"] == "cut_off" and "cut off by the output token limit" in note["text"]
    cut = next(e["data"] for e in events if e["type"] == "message")
    assert cut["finish_reason"] == "length" and len(cut["text"].split()) == 20


# --- streaming and budgets, whole runs ------------------------------------------------------------


def test_a_streamed_run_survives_a_cut_stream_and_keeps_deltas_out_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_REPO, repo)
    read = chat_completion("Reading the file first.", [("read_file", {"path": "backoff.py"}, "call_read")],
                           usage=(1500, 30))
    replies = [
        stream_reply(completion_chunks(read, include_usage=True), cut="reset", cut_after=3),  # type: ignore[arg-type]
        chat_reply("Reading the file first.", tool_calls=[("read_file", {"path": "backoff.py"}, "call_read")],
                   usage=(1500, 30)),
        chat_reply("It starts at 1: the first delay is skipped.", usage=(1600, 30)),
    ]
    streams_tools = dataclasses.replace(LLAMA_CPP_PYTHON, stream_with_tools="stream")  # a chat format that can
    with FakeOpenAIServer(replies, behaviour=streams_tools) as server:
        code, report, events = _run(server.url, repo, tmp_path)
        bodies = [r.json for r in server.posts]
    assert code == 0 and report["final_message"] == "It starts at 1: the first delay is skipped."
    assert all(b["stream"] is True for b in bodies) and len(bodies) == 3
    types = [e["type"] for e in events]
    assert "model.retry" in types and "message.delta" not in types
    first = next((e["data"]["text"] for e in events if e["type"] == "message"), None)
    assert first == "Reading the file first."
    assert report["usage"] == {"input_tokens": 3100, "output_tokens": 60, "total_tokens": 3160, "source": "server"}
    # the two whole replies, the cut one not at all


def test_a_run_stops_at_its_token_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_REPO, repo)
    read = ("read_file", {"path": "backoff.py"})
    replies = [chat_reply(tool_calls=[read], usage=(2000, 100)) for _ in range(5)]
    with FakeOpenAIServer(replies) as server:
        code, report, events = _run(server.url, repo, tmp_path, "--max-total-tokens", "5000",
                                    "--price-input", "1", "--price-output", "4")
        posts = len(server.posts)
    assert code == 1 and report["stop_reason"] == "budget" and report["status"] == "stopped"
    assert posts == 2 and report["usage"]["total_tokens"] == 4200  # a third request would pass 5000
    assert report["cost"] == pytest.approx((4000 * 1 + 200 * 4) / 1e6)
    assert events[-1]["data"]["reason"] == "budget"
