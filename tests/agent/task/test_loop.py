"""The agent loop with a scripted model and a fake sandbox: events, errors, every stop condition."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from agent.cancel import CancelToken
from agent.model.base import ModelError
from agent.model.scripted import ScriptedModel
from agent.protocol import ToolResultMessage
from agent.sandboxes.result import ToolResult
from agent.task.loop import Limits
from agent.task.policy import WorkspaceWritePolicy
from tests.fakes import FakeSandbox, make_agent, task


def first_result(model: ScriptedModel) -> ToolResultMessage:
    """The first tool result the model was sent in its second request."""
    return next(m for m in model.requests[1][1] if isinstance(m, ToolResultMessage))


PATCH = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"


def test_seed_event_order_for_one_tool_call() -> None:
    agent, sink, _, sandbox = make_agent(
        [{"tool_calls": [{"name": "search", "arguments": {"query": "retry"}}]}, {"message": "done"}]
    )
    report = agent.run(task())
    assert sink.types() == ["turn.start", "tool.start", "tool.end", "message", "turn.end"]
    assert [e.data.get("name") for e in sink.events[1:3]] == ["search", "search"]
    assert sink.events[1].data["decision"] == "allow"
    assert sandbox.calls == [("search", {"query": "retry", "regex": False})]
    assert report.status == "completed" and report.stop_reason == "final_message"
    assert report.final_message == "done" and report.steps == 2
    assert [(c.name, c.decision, c.ok) for c in report.tool_calls] == [("search", "allow", True)]
    assert [e.seq for e in sink.events] == [1, 2, 3, 4, 5]


def test_tool_end_carries_the_result_exactly_as_the_model_saw_it() -> None:
    sandbox = FakeSandbox({"read_file": lambda a: ToolResult(output="1\tprint('hi')\n")})
    agent, sink, model, _ = make_agent(
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]}, {"message": "ok"}], sandbox
    )
    agent.run(task())
    end = next(e for e in sink.events if e.type == "tool.end")
    sent = [m for m in model.requests[1][1] if isinstance(m, ToolResultMessage)]
    assert end.data["content"] == sent[0].content == "1\tprint('hi')\n"


def test_denied_write_goes_back_and_the_loop_continues() -> None:
    agent, sink, model, sandbox = make_agent(
        [{"tool_calls": [{"name": "apply_patch", "arguments": {"patch": PATCH}}]}, {"message": "could not"}]
    )
    report = agent.run(task())
    start = next(e for e in sink.events if e.type == "tool.start")
    assert start.data["decision"] == "deny"
    result = first_result(model)
    assert result.is_error and result.content.startswith("Denied by policy")
    assert sandbox.calls == []  # never reached the sandbox
    assert report.stop_reason == "final_message"
    assert report.tool_calls[0].decision == "deny" and not report.tool_calls[0].ok


def test_allowed_write_records_changed_files() -> None:
    sandbox = FakeSandbox(
        {"apply_patch": lambda a: ToolResult(output="M src/a.py", data={"changed_paths": ["src/a.py"]})}
    )
    agent, _, _, _ = make_agent(
        [{"tool_calls": [{"name": "apply_patch", "arguments": {"input": PATCH}}]}, {"message": "fixed"}],
        sandbox,
        policy=WorkspaceWritePolicy(),
    )
    report = agent.run(task())
    assert report.files_changed == ["src/a.py"]
    assert sandbox.calls[0][0] == "apply_patch"


def test_tool_exception_becomes_an_error_result() -> None:
    def boom(args: dict[str, Any]) -> ToolResult:
        raise RuntimeError("disk on fire")

    agent, _, model, _ = make_agent(
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": "x"}}]}, {"message": "ok"}],
        FakeSandbox({"read_file": boom}),
    )
    report = agent.run(task())
    result = first_result(model)
    assert result.is_error and "disk on fire" in result.content
    assert report.stop_reason == "final_message" and not report.tool_calls[0].ok


def test_sandbox_error_result_goes_back() -> None:
    sandbox = FakeSandbox(
        {"read_file": lambda a: ToolResult(ok=False, output="", error="path escapes the repository: ../x")}
    )
    agent, _, model, _ = make_agent(
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": "../x"}}]}, {"message": "ok"}], sandbox
    )
    agent.run(task())
    result = first_result(model)
    assert result.is_error and "escapes" in result.content


def test_unknown_tool_is_an_error_result_not_a_crash() -> None:
    agent, sink, model, _ = make_agent(
        [{"tool_calls": [{"name": "rm_rf", "arguments": {}}]}, {"message": "ok"}]
    )
    report = agent.run(task())
    result = first_result(model)
    assert result.is_error and "Unknown tool 'rm_rf'" in result.content and "read_file" in result.content
    assert report.tool_calls[0].decision == "invalid"
    assert sink.types() == ["turn.start", "tool.start", "tool.end", "message", "turn.end"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("this is not json", "not valid JSON"),
        ('["a", "b"]', "must be a JSON object"),
        ({}, "path: Field required"),
        ({"path": 3}, "path: Input should be a valid string"),
        ({"path": "a", "start_line": "ten"}, "start_line"),
        ({"path": "a", "start_line": 0}, "start_line: Input should be greater than or equal to 1"),
        ({"path": "a", "colour": "red"}, "colour: Extra inputs are not permitted"),
    ],
)
def test_invalid_arguments_name_the_problem(arguments: Any, expected: str) -> None:
    agent, _, model, sandbox = make_agent(
        [{"tool_calls": [{"name": "read_file", "arguments": arguments}]}, {"message": "ok"}]
    )
    agent.run(task())
    result = first_result(model)
    assert result.is_error and expected in result.content, result.content
    assert sandbox.calls == []


def test_double_encoded_arguments_are_accepted() -> None:
    agent, _, _, sandbox = make_agent(
        [{"tool_calls": [{"name": "read_file", "arguments": '"{\\"path\\": \\"a.py\\"}"'}]}, {"message": "ok"}]
    )
    agent.run(task())
    assert sandbox.calls == [("read_file", {"path": "a.py"})]


def test_malformed_patch_is_refused_before_policy_with_the_parse_error() -> None:
    agent, sink, model, sandbox = make_agent(
        [{"tool_calls": [{"name": "apply_patch", "arguments": {"patch": "*** Begin Patch\n*** Frobnicate: x\n"}}]},
         {"message": "ok"}],
        policy=WorkspaceWritePolicy(),
    )
    agent.run(task())
    result = first_result(model)
    assert result.is_error and sandbox.calls == []
    assert next(e for e in sink.events if e.type == "tool.start").data["decision"] == "invalid"


def test_patch_into_git_is_denied_even_with_workspace_write() -> None:
    patch = "*** Begin Patch\n*** Add File: src/../.git/hooks/pre-commit\n+#!/bin/sh\n*** End Patch\n"
    agent, _, model, sandbox = make_agent(
        [{"tool_calls": [{"name": "apply_patch", "arguments": {"patch": patch}}]}, {"message": "ok"}],
        policy=WorkspaceWritePolicy(),
    )
    agent.run(task())
    result = first_result(model)
    assert result.is_error and "Denied by policy" in result.content
    assert sandbox.calls == []


# --- stop conditions -----------------------------------------------------------------------------


def test_stop_max_steps() -> None:
    turns = [{"tool_calls": [{"name": "search", "arguments": {"query": f"q{i}"}}]} for i in range(10)]
    agent, sink, _, _ = make_agent(turns, limits=Limits(max_steps=3))
    report = agent.run(task())
    assert report.stop_reason == "max_steps" and report.status == "stopped" and report.steps == 3
    assert sink.events[-1].type == "turn.end" and sink.events[-1].data["reason"] == "max_steps"


def test_task_max_steps_is_honoured_too() -> None:
    turns = [{"tool_calls": [{"name": "search", "arguments": {"query": f"q{i}"}}]} for i in range(10)]
    agent, _, _, _ = make_agent(turns)
    assert agent.run(task(max_steps=2)).stop_reason == "max_steps"


def test_stop_timeout_during_a_slow_tool() -> None:
    sandbox = FakeSandbox()
    died = ToolResult(output="", ok=False, outcome="container_died")
    sandbox.handlers["run_test"] = lambda a: (sandbox.closed.wait(30), died)[1]
    agent, _, _, _ = make_agent(
        [{"tool_calls": [{"name": "run_test", "arguments": {}}]}, {"message": "never"}],
        sandbox,
        limits=Limits(timeout_s=0.5),
    )
    started = time.monotonic()
    report = agent.run(task())
    assert report.stop_reason == "timeout" and time.monotonic() - started < 5
    assert sandbox.closed.is_set()  # the sandbox was closed: the running command is killed


def test_stop_loop_guard_on_identical_failing_calls() -> None:
    call = {"tool_calls": [{"name": "read_file", "arguments": {"path": "missing.py"}}]}
    sandbox = FakeSandbox({"read_file": lambda a: ToolResult(output="", ok=False, error="no such file: missing.py")})
    agent, _, _, _ = make_agent([call] * 10, sandbox)
    report = agent.run(task())
    assert report.stop_reason == "loop_guard" and len(report.tool_calls) == 3
    assert "3 times" in (report.error or "")


def test_the_same_failing_test_after_each_edit_does_not_trip_the_guard() -> None:
    outcomes = iter(["failed", "failed", "failed", "ok"])

    def run_test(args: dict[str, Any]) -> ToolResult:
        outcome = next(outcomes)
        return ToolResult(ok=outcome == "ok", outcome=outcome, output=outcome)

    sandbox = FakeSandbox({"run_test": run_test})
    edit = {"tool_calls": [{"name": "apply_patch", "arguments": {"patch": PATCH}}]}
    test = {"tool_calls": [{"name": "run_test", "arguments": {}}]}
    agent, _, _, _ = make_agent([edit, test] * 4 + [{"message": "fixed"}], sandbox, policy=WorkspaceWritePolicy())
    report = agent.run(task())
    assert report.stop_reason == "final_message" and report.last_test is not None
    assert report.last_test.outcome == "ok"


def test_the_same_failing_test_without_edits_trips_the_guard() -> None:
    sandbox = FakeSandbox({"run_test": lambda a: ToolResult(ok=False, outcome="failed", output="1 failed")})
    test = {"tool_calls": [{"name": "run_test", "arguments": {}}]}
    agent, _, _, _ = make_agent([test] * 5, sandbox)
    assert agent.run(task()).stop_reason == "loop_guard"


def test_different_failing_calls_do_not_trip_the_guard() -> None:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": f"m{i}.py"}}]} for i in range(5)
    ]
    sandbox = FakeSandbox({"read_file": lambda a: ToolResult(output="", ok=False, error="no such file")})
    agent, _, _, _ = make_agent([*turns, {"message": "gave up"}], sandbox)
    assert agent.run(task()).stop_reason == "final_message"


def test_stop_model_error_when_script_runs_out() -> None:
    agent, sink, _, _ = make_agent([{"tool_calls": [{"name": "search", "arguments": {"query": "x"}}]}])
    report = agent.run(task())
    assert report.stop_reason == "model_error" and report.status == "error"
    assert "ran out of turns" in (report.error or "")
    assert "model.error" in sink.types()


def test_model_client_crash_is_a_model_error() -> None:
    agent, _, model, _ = make_agent([])

    def broken(*a: Any) -> Any:
        raise KeyError("choices")

    model.complete = broken  # type: ignore[method-assign]
    report = agent.run(task())
    assert report.stop_reason == "model_error" and "KeyError" in (report.error or "")


def test_model_error_raised_by_client() -> None:
    agent, _, model, _ = make_agent([])

    def refused(*a: Any) -> Any:
        raise ModelError("authentication failed: set OPENAI_API_KEY")

    model.complete = refused  # type: ignore[method-assign]
    report = agent.run(task())
    assert report.stop_reason == "model_error" and "OPENAI_API_KEY" in (report.error or "")


def test_cut_off_reply_is_not_final_and_the_model_is_told() -> None:
    agent, _, model, _ = make_agent(
        [{"message": "I will now expl", "finish_reason": "length"}, {"message": "short answer"}]
    )
    report = agent.run(task())
    assert report.final_message == "short answer"
    last_user = model.requests[1][1][-1]
    assert last_user.role == "user" and "cut off" in last_user.content


def test_repeated_empty_replies_end_the_run() -> None:
    agent, _, _, _ = make_agent([{}, {}, {}, {"message": "late"}])
    report = agent.run(task())
    assert report.stop_reason == "model_error" and "empty" in (report.error or "")


def test_text_with_tool_calls_keeps_both() -> None:
    agent, sink, model, _ = make_agent(
        [{"message": "let me look", "tool_calls": [{"name": "search", "arguments": {"query": "x"}}]},
         {"message": "done"}]
    )
    agent.run(task())
    assert sink.types() == ["turn.start", "message", "tool.start", "tool.end", "message", "turn.end"]
    assistant = model.requests[1][1][1]
    assert assistant.role == "assistant" and assistant.content == "let me look" and assistant.tool_calls


def test_cancel_mid_tool_call_stops_the_call_and_reports() -> None:
    sandbox = FakeSandbox()
    started = threading.Event()

    def slow(args: dict[str, Any]) -> ToolResult:
        started.set()
        sandbox.closed.wait(30)  # only close() ends it, as a killed container would
        return ToolResult(output="", ok=False, outcome="container_died", error="container killed")

    sandbox.handlers["run_test"] = slow
    agent, sink, _, _ = make_agent(
        [{"tool_calls": [{"name": "run_test", "arguments": {}}]}, {"message": "never"}], sandbox
    )
    cancel = CancelToken()
    threading.Thread(target=lambda: (started.wait(5), cancel.cancel("user pressed Ctrl-C"))).start()
    t0 = time.monotonic()
    report = agent.run(task(), cancel)
    assert time.monotonic() - t0 < 5
    assert report.stop_reason == "cancelled" and report.status == "cancelled"
    assert sandbox.closed.is_set()
    assert sink.events[-1].type == "turn.end" and sink.events[-1].data["reason"] == "cancelled"
    end = next(e for e in sink.events if e.type == "tool.end")
    assert end.data["is_error"] and "interrupted" in end.data["content"]


def test_a_patch_the_cancel_catches_mid_call_is_let_finish_and_reported_as_landed() -> None:
    sandbox = FakeSandbox()
    cancel = CancelToken()

    def landing(args: dict[str, Any]) -> ToolResult:
        cancel.cancel("user pressed Ctrl-C")  # arrives while the write is under way
        time.sleep(0.3)
        return ToolResult(output="Done!", data={"changed_paths": ["a.py"]})

    def stuck(args: dict[str, Any]) -> ToolResult:
        cancel.cancel("user pressed Ctrl-C")
        sandbox.closed.wait(30)  # a write that never ends is still stopped, after the grace
        return ToolResult(output="", ok=False, outcome="container_died", error="container killed")

    patch = "*** Begin Patch\n*** Add File: a.py\n+x = 1\n*** End Patch\n"
    turns = [{"tool_calls": [{"name": "apply_patch", "arguments": {"patch": patch}}]}, {"message": "never"}]
    sandbox.handlers["apply_patch"] = landing
    agent, _, _, _ = make_agent(turns, sandbox, policy=WorkspaceWritePolicy())
    report = agent.run(task(), cancel)
    assert report.status == "cancelled" and report.files_changed == ["a.py"] and report.tool_calls[0].ok
    assert not sandbox.closed.is_set()  # the write was not killed half-way

    sandbox = FakeSandbox({"apply_patch": stuck})
    cancel = CancelToken()
    agent, _, _, _ = make_agent(turns, sandbox, policy=WorkspaceWritePolicy(),
                                   limits=Limits(interrupt_grace_s=0.3))
    report = agent.run(task(), cancel)
    assert report.status == "cancelled" and report.files_changed == [] and sandbox.closed.is_set()


def test_cancel_before_start() -> None:
    agent, _, model, _ = make_agent([{"message": "x"}])
    cancel = CancelToken()
    cancel.cancel()
    report = agent.run(task(), cancel)
    assert report.stop_reason == "cancelled" and model.requests == []


def test_usage_is_summed_into_the_report_and_events() -> None:
    usage = {"input_tokens": 1000, "output_tokens": 5, "total_tokens": 1005}
    agent, sink, _, _ = make_agent(
        [{"tool_calls": [{"name": "search", "arguments": {"query": "x"}}], "usage": usage},
         {"message": "done", "usage": usage}]
    )
    report = agent.run(task())
    assert report.usage is not None and report.usage.total_tokens == 2010 and report.usage.source == "server"
    assert sink.events[1].data["usage"] == {**usage, "source": "server"}
    assert sink.events[3].data["usage"]["output_tokens"] == 5


def test_a_reply_without_usage_is_counted_by_codebox_and_the_report_says_so() -> None:
    agent, sink, _, _ = make_agent(
        [{"tool_calls": [{"name": "search", "arguments": {"query": "x"}}]},
         {"message": "done", "usage": {"input_tokens": 1000, "output_tokens": 5, "total_tokens": 1005}}]
    )
    report = agent.run(task())
    first = sink.events[1].data["usage"]
    assert first["source"] == "estimated" and first["input_tokens"] > 700  # the instructions and tools alone
    assert report.usage is not None and report.usage.source == "mixed"
    assert report.usage.total_tokens == first["total_tokens"] + 1005
    assert "usage.estimated" not in sink.types()  # no count at all is not a forgery: the source says it


def test_an_implausible_usage_is_replaced_and_the_event_says_why() -> None:
    forged = {"input_tokens": -5, "output_tokens": 0, "total_tokens": 0}
    agent, sink, _, _ = make_agent([{"message": "done", "usage": forged}])
    report = agent.run(task())
    (event,) = [e.data for e in sink.events if e.type == "usage.estimated"]
    assert event["reason"] == "negative input tokens (-5)" and event["reported"]["input_tokens"] == -5
    assert report.usage is not None and report.usage.source == "estimated" and report.usage.input_tokens > 700


def test_run_test_without_test_command_is_a_clear_error() -> None:
    agent, _, model, sandbox = make_agent([{"tool_calls": [{"name": "run_test", "arguments": {}}]}, {"message": "k"}])
    agent.ctx.test_cmd = []
    agent.run(task())
    result = first_result(model)
    assert result.is_error and "No test command" in result.content and sandbox.calls == []


def test_run_test_composes_argv_and_records_last_test() -> None:
    sandbox = FakeSandbox(
        {"run_test": lambda a: ToolResult("", ok=False, outcome="failed", data={"exit_code": 1, "duration_s": 0.3})}
    )
    agent, _, _, _ = make_agent(
        [{"tool_calls": [{"name": "run_test", "arguments": {"args": ["-k", "retry"], "timeout_s": 9999}}]},
         {"message": "k"}],
        sandbox,
    )
    report = agent.run(task())
    _, args = sandbox.calls[0]
    assert args["argv"] == ["pytest", "-q", "-k", "retry"]
    assert args["timeout_s"] == agent.ctx.max_test_timeout_s  # clamped
    assert report.last_test is not None and report.last_test.outcome == "failed"
    assert report.last_test.exit_code == 1


def test_a_test_that_writes_into_the_read_only_repo_gets_a_note_on_test_in_copy() -> None:
    """tomlkit's TOMLFile test writes its example file back: in the read-only /repo it fails."""
    wrote = "E       OSError: [Errno 30] Read-only file system: '/repo/tests/examples/example.toml'\n"
    for in_copy, noted in ((False, True), (True, False)):
        sandbox = FakeSandbox({"run_test": lambda a: ToolResult(wrote, ok=False, outcome="failed",
                                                                 data={"exit_code": 1})})
        agent, _, model, _ = make_agent([{"tool_calls": [{"name": "run_test", "arguments": {}}]}, {"message": "k"}],
                                        sandbox)
        agent.ctx.test_in_copy = in_copy
        agent.run(task())
        content = first_result(model).content
        assert ("--test-in-copy" in content) is noted and wrote.strip() in content


def test_a_read_only_error_that_names_no_path_gets_a_hedged_note() -> None:
    """jinja's mtime test calls os.utime on its template under /repo: the OSError names no path."""
    for output, note in (("E       OSError: [Errno 30] Read-only file system\n", "a test hit a read-only file "
                          "system (the error names no path)"),
                         ("E       OSError: [Errno 30] Read-only file system: '/usr/x'\n", None)):
        sandbox = FakeSandbox({"run_test": lambda a, o=output: ToolResult(o, ok=False, outcome="failed",
                                                                          data={"exit_code": 1})})
        agent, _, model, _ = make_agent([{"tool_calls": [{"name": "run_test", "arguments": {}}]}, {"message": "k"}],
                                        sandbox)
        agent.run(task())
        content = first_result(model).content
        assert (note in content if note else "--test-in-copy" not in content), content


def test_a_call_that_breaks_the_checks_is_an_error_result_not_a_crash() -> None:
    nested = "*** Begin Patch\n*** Add File: a.py\n+x\n*** End Patch\n"
    for _ in range(1200):  # deeper than Python's recursion limit
        nested = f"```\n{nested}\n```"
    agent, _, model, sandbox = make_agent(
        [{"tool_calls": [{"name": "apply_patch", "arguments": {"patch": nested}}]}, {"message": "ok"}],
        policy=WorkspaceWritePolicy(),
    )
    report = agent.run(task())
    assert report.stop_reason == "final_message" and sandbox.calls == []
    assert first_result(model).is_error


def test_a_policy_that_fails_denies() -> None:
    from agent.task.policy import ApproveOncePolicy

    def ask(call: Any) -> Any:
        raise OSError("the terminal went away")

    agent, _, model, sandbox = make_agent(
        [{"tool_calls": [{"name": "apply_patch", "arguments": {"patch": PATCH}}]}, {"message": "ok"}],
        policy=ApproveOncePolicy(ask),
    )
    report = agent.run(task())
    assert report.stop_reason == "final_message" and report.tool_calls[0].decision == "deny"
    assert "terminal went away" in first_result(model).content and sandbox.calls == []


def test_a_bug_in_codebox_ends_the_run_with_internal_error_and_a_report() -> None:
    from agent.tools import ReadFileTool, RunEffects, ToolRegistry

    class BrokenReadFile(ReadFileTool):
        def note_effects(self, write_paths: list[str], result: ToolResult, effects: RunEffects) -> None:
            raise RuntimeError("boom")

    agent, sink, _, _ = make_agent(
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]}, {"message": "never"}]
    )
    agent.registry = ToolRegistry([BrokenReadFile()])
    report = agent.run(task())
    assert report.status == "error" and report.stop_reason == "internal_error"
    assert report.error == "RuntimeError: boom"
    assert sink.types()[-1] == "turn.end"


def test_events_carry_the_system_prompt_and_every_note_sent_to_the_model() -> None:
    agent, sink, model, _ = make_agent([{}, {"message": "done"}])
    agent.run(task())
    start = sink.events[0]
    assert start.type == "turn.start" and start.data["instructions"] == agent.instructions
    notes = [e for e in sink.events if e.type == "note"]
    sent = model.requests[1][1][-1]
    assert len(notes) == 1 and notes[0].data["text"] == sent.content and "empty" in sent.content


def test_failing_tests_are_named_in_the_report() -> None:
    output = "..F\nFAILED tests/test_a.py::test_x - AssertionError\nFAILED tests/test_a.py::test_y\n1 passed\n"
    sandbox = FakeSandbox({"run_test": lambda a: ToolResult(ok=False, output=output, outcome="failed",
                                                           data={"exit_code": 1})})
    agent, _, _, _ = make_agent([{"tool_calls": [{"name": "run_test", "arguments": {}}]}, {"message": "ok"}], sandbox)
    report = agent.run(task())
    assert report.last_test is not None
    assert report.last_test.failed_tests == ["tests/test_a.py::test_x", "tests/test_a.py::test_y"]
