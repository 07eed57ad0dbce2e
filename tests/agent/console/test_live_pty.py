"""The run console and the batch view on a real pseudo-terminal: colours and a live status line
there; not one escape sequence when NO_COLOR is set or the output is not a terminal."""

from __future__ import annotations

import os
import time

import pytest

from agent.console.batch_view import BatchView, print_table
from agent.console.live import RunConsole
from agent.console.render import ChangeLog, print_summary
from agent.protocol import AgentEvent
from tests.hostile_text import HOSTILE, hostile_events, hostile_report, raw_attacks_in
from tests.pty_screen import terminal


def event(type_: str, step: int, **data: object) -> AgentEvent:
    return AgentEvent(type=type_, task_id="t1", seq=step, step=step, data=data)


def test_on_a_terminal_lines_are_coloured_and_a_status_line_shows_what_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    with terminal() as (stream, written):
        console = RunConsole(stream)
        assert console.styled
        console.emit(event("turn.start", 0, goal="fix it", model="m", policy="read-only", repo="/r"))
        time.sleep(0.5)  # the status line redraws itself while the model thinks
        thinking = written()
        console.emit(event("tool.start", 1, name="run_test", decision="allow", summary="-k slow"))
        time.sleep(0.5)
        running = written()
        console.emit(event("tool.end", 1, name="run_test", decision="allow", is_error=True, outcome="failed",
                           summary="-k slow", duration_s=0.5, content="FAILED tests/a.py::test_x - boom\n"))
        console.emit(event("message", 2, text="done", final=True))
        console.emit(event("turn.end", 2, reason="final_message", status="completed"))
        console.close()
        print_summary(hostile_report(), stream, ChangeLog())
        for e in hostile_events():
            console.emit(e)
        console.close()
        out = written()
    assert b"model thinking" in thinking
    assert b"run_test" in running and b"running" in running
    assert b"\x1b[" in out  # colours (SGR) and the status line's redraws
    assert b"1 failing: tests/a.py::test_x" in out
    assert raw_attacks_in(out) == []


@pytest.mark.parametrize("how", ["NO_COLOR", "TERM=dumb"])
def test_no_color_on_a_terminal_is_plain_text(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    name, _, value = how.partition("=")
    monkeypatch.setenv(name, value or "1")
    with terminal() as (stream, written):
        console = RunConsole(stream)
        for e in hostile_events():
            console.emit(e)
        console.close()
        print_summary(hostile_report(), stream, ChangeLog())
        view = BatchView(1, stream)
        view.started("t1")
        view.finished(hostile_report())
        view.close()
        print_table([hostile_report()], stream)
        out = written()
    assert b"\x1b" not in out
    assert b"apply_patch" in out and b"final message:" in out and b"it broke" in out


def test_a_pipe_gets_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    read, write = os.pipe()
    with open(write, "w", encoding="utf-8") as stream:
        console = RunConsole(stream)
        assert not console.styled
        for e in hostile_events():
            console.emit(e)
        console.close()
        print_summary(hostile_report(), stream, ChangeLog())
    with open(read, "rb") as pipe:
        out = pipe.read()
    assert b"\x1b" not in out and HOSTILE.encode() not in out
    assert b"files changed:" in out


def test_the_batch_view_on_a_terminal_shows_each_running_task(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    with terminal() as (stream, written):
        view = BatchView(3, stream)
        view.started("alpha")
        view.started("beta")
        view.sink("alpha").emit(AgentEvent(type="tool.start", task_id="alpha", seq=3, step=4,
                                           data={"name": "run_test", "decision": "allow", "summary": "-x"}))
        time.sleep(0.6)  # a refresh of the board
        board = written()
        report = hostile_report().model_copy(update={"task_id": "beta"})
        view.finished(report)
        view.close()
        print_table([report], stream)
        out = written()
    assert b"alpha" in board and b"run_test -x" in board and b"0/3 done" in board
    assert b"it broke" in out and b"\x1b[" in out
    assert raw_attacks_in(out) == []


def test_the_model_text_shows_as_it_streams_in_escaped_and_only_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    with terminal() as (stream, written):
        console = RunConsole(stream)
        console.emit(event("turn.start", 0, goal="g", model="m", policy="read-only", repo="/r"))
        console.emit(event("message.delta", 1, text="Looking at the retry ", attempt=1))
        console.emit(event("message.delta", 1, text="delays now", attempt=1))
        time.sleep(0.5)  # the status line redraws with the newest text
        first = written()
        console.emit(event("message.delta", 1, text=HOSTILE, attempt=1))
        time.sleep(0.5)
        streaming = written()
        console.emit(event("model.retry", 1, attempt=2, wait_s=0.1, reason="stream broke"))
        console.emit(event("message.delta", 1, text="Second try", attempt=2))
        time.sleep(0.5)
        retried = written()[len(streaming):]
        console.emit(event("turn.end", 1, reason="final_message", status="completed"))
        console.close()
    assert b"model: " in first and b"retry delays now" in first
    assert raw_attacks_in(streaming) == []
    assert b"Second try" in retried and b"retry " not in retried.split(b"Second try")[-1]


def test_streamed_text_adds_no_line_to_plain_output() -> None:
    read, write = os.pipe()
    with open(write, "w", encoding="utf-8") as stream:
        console = RunConsole(stream)
        console.emit(event("message.delta", 1, text="partial text", attempt=1))
        console.close()
    with open(read, "rb") as pipe:
        assert b"partial text" not in pipe.read()  # the summary prints the final message, once
