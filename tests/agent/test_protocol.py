"""Every protocol type survives a JSON round trip; sinks, context budget and scripts behave."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from agent.model.base import ModelError
from agent.model.scripted import ScriptedModel
from agent.protocol import (
    AgentEvent,
    AssistantMessage,
    MessageList,
    ModelOutput,
    Report,
    TaskSpec,
    TestRun,
    ToolCall,
    ToolCallRecord,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from agent.task.context import ContextStore
from agent.task.events import FanoutSink, JsonlSink, MemorySink
from agent.tools import ReadFileArgs, ToolRegistry

CALL = ToolCall(id="c1", name="search", arguments={"query": "ü ✓", "regex": True})
BAD_CALL = ToolCall(id="c2", name="read_file", raw_arguments="{oops", parse_error="not JSON")

SAMPLES: list[BaseModel] = [
    CALL,
    BAD_CALL,
    UserMessage(content="fix it"),
    AssistantMessage(content="looking", tool_calls=[CALL, BAD_CALL]),
    AssistantMessage(content=None),
    ToolResultMessage(call_id="c1", name="search", content="a.py:1: x", is_error=True),
    ModelOutput(message="m", tool_calls=[CALL], finish_reason="length", usage=Usage(input_tokens=3)),
    ToolSpec.from_args_model("read_file", "read", ReadFileArgs),
    AgentEvent(type="tool.start", task_id="t", seq=1, step=1, data={"name": "x", "n": [1, 2]}),
    TaskSpec(repo="/r", goal="g", policy="workspace-write", allow=["src/**"], test_cmd=["pytest"]),
    Report(
        task_id="t", goal="g", repo="/r", model="m", status="completed", stop_reason="final_message",
        final_message="ok", tool_calls=[ToolCallRecord(call_id="c", name="search", decision="allow", ok=True)],
        files_changed=["a.py"], last_test=TestRun(command=["pytest"], outcome="ok", exit_code=0),
        usage=Usage(input_tokens=1, output_tokens=2, total_tokens=3), started_at=1.5, duration_s=2.0,
    ),
]


@pytest.mark.parametrize("obj", SAMPLES, ids=lambda o: type(o).__name__)
def test_json_round_trip(obj: BaseModel) -> None:
    again = type(obj).model_validate_json(obj.model_dump_json())
    assert again == obj


def test_message_list_round_trip_keeps_the_kinds() -> None:
    history = [UserMessage(content="g"), AssistantMessage(tool_calls=[CALL]),
               ToolResultMessage(call_id="c1", name="search", content="r")]
    data = MessageList.dump_json(history)
    assert MessageList.validate_json(data) == history


def test_report_keys_are_stable() -> None:
    keys = set(json.loads(SAMPLES[-1].model_dump_json()))
    assert {"status", "stop_reason", "final_message", "steps", "tool_calls", "files_changed",
            "last_test", "usage", "duration_s"} <= keys
    assert set(json.loads(SAMPLES[-1].model_dump_json())["tool_calls"][0]) >= {
        "name", "decision", "ok", "error", "duration_s"}


def test_tool_specs_have_schemas_and_stable_argument_names() -> None:
    specs = {s.name: s.parameters for s in ToolRegistry().specs()}
    assert set(specs) == {"read_file", "search", "apply_patch", "run_test"}
    assert set(specs["read_file"]["properties"]) == {"path", "start_line", "end_line"}
    assert specs["read_file"]["required"] == ["path"]
    assert set(specs["search"]["properties"]) == {"query", "path", "glob", "regex", "max_results"}
    assert "patch" in specs["apply_patch"]["properties"]
    assert set(specs["run_test"]["properties"]) == {"args", "timeout_s"}


def test_registry_refuses_duplicate_names() -> None:
    registry = ToolRegistry()
    with pytest.raises(ValueError, match="already registered"):
        registry.register(registry._handlers["search"])


# --- context budget ------------------------------------------------------------------------------


def test_context_shortens_oldest_tool_results_first_and_keeps_goal_and_latest_turn() -> None:
    store = ContextStore("the goal " * 50, budget_chars=3500)
    for i in range(4):
        store.append(AssistantMessage(tool_calls=[ToolCall(id=f"c{i}", name="read_file", arguments={"path": "a"})]))
        store.append(ToolResultMessage(call_id=f"c{i}", name="read_file", content=f"{i}" * 1500))
    assert store.size() > 3500
    shortened = store.fit()
    assert shortened >= 1
    assert store.size() <= 3500
    contents = [m.content for m in store.messages if isinstance(m, ToolResultMessage)]
    assert "cut to fit the context budget" in contents[0]  # oldest first
    assert contents[-1] == "3" * 1500  # the latest turn is untouched
    assert store.messages[0].content == "the goal " * 50  # the goal is never touched


def test_context_within_budget_is_left_alone() -> None:
    store = ContextStore("g", budget_chars=10_000)
    store.append(ToolResultMessage(call_id="c", name="x", content="y" * 100))
    assert store.fit() == 0


# --- sinks ---------------------------------------------------------------------------------------


def _event(i: int) -> AgentEvent:
    return AgentEvent(type="tool.end", task_id="t", seq=i, step=1, data={"name": "search", "outcome": "ok"})


def test_jsonl_sink_writes_one_flushed_line_per_event(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path / "sub" / "events.jsonl")
    first = _event(1)
    sink.emit(first)
    # readable before close: flushed at once
    lines = (tmp_path / "sub" / "events.jsonl").read_text().splitlines()
    assert len(lines) == 1 and AgentEvent.model_validate_json(lines[0]) == first
    sink.emit(_event(2))
    sink.close()
    assert len((tmp_path / "sub" / "events.jsonl").read_text().splitlines()) == 2


def test_fanout_survives_a_broken_sink() -> None:
    class Broken:
        def emit(self, event: AgentEvent) -> None:
            raise OSError("disk full")

        def close(self) -> None:
            pass

    memory = MemorySink()
    fan = FanoutSink(Broken(), memory)
    fan.emit(_event(1))
    assert len(memory.events) == 1 and "disk full" in fan.errors[0]


# --- scripted model ------------------------------------------------------------------------------


def test_scripted_model_reads_the_stable_file_format(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "search", "arguments": {"query": "retry"}}]},
        {"message": "done", "expect": {"last_result_contains": "a.py"}},
    ]}))
    model = ScriptedModel.from_file(path)
    first = model.complete("i", [], [], lambda t, d: None)
    assert first.tool_calls[0].name == "search" and first.tool_calls[0].id.startswith("call_")
    with pytest.raises(ModelError, match="expectation failed"):
        model.complete("i", [ToolResultMessage(call_id="x", name="search", content="b.py:1")], [], lambda t, d: None)


def test_scripted_model_bad_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"turns": [{"tool_calls": "nope"}]}')
    with pytest.raises(ModelError, match="not a valid codebox script"):
        ScriptedModel.from_file(path)
    with pytest.raises(ModelError, match="cannot read"):
        ScriptedModel.from_file(tmp_path / "missing.json")


def test_context_size_is_kept_in_step_with_the_messages() -> None:
    from agent.task.context import message_size

    store = ContextStore("goal", budget_chars=1000)
    for i in range(5):
        store.append(AssistantMessage(content="x" * 10, tool_calls=[ToolCall(name="search", arguments={"q": i})]))
        store.append(ToolResultMessage(call_id="c", name="search", content="y" * 700))
    store.fit()
    assert store.size() == sum(message_size(m) for m in store.messages)


def test_context_shortens_old_patch_arguments_when_results_are_not_enough() -> None:
    store = ContextStore("g", budget_chars=5000)
    big_patch = "*** Begin Patch\n" + "+x\n" * 5000 + "*** End Patch\n"
    for i in range(3):
        store.append(AssistantMessage(tool_calls=[ToolCall(id=f"c{i}", name="apply_patch",
                                                           arguments={"patch": big_patch})]))
        store.append(ToolResultMessage(call_id=f"c{i}", name="apply_patch", content="ok"))
    from agent.task.context import message_size

    assert store.fit() >= 2
    assert store.size() <= 5000 + message_size(store.messages[-2])  # only the latest turn may stay whole
    old = store.messages[1]
    assert isinstance(old, AssistantMessage) and "cut to fit" in old.tool_calls[0].arguments["patch"]
    latest = store.messages[-2]
    assert isinstance(latest, AssistantMessage) and latest.tool_calls[0].arguments["patch"] == big_patch
