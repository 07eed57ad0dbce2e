"""The run console: one line per tool call with its decision and outcome in colour, and a live
status line (what runs now, for how long) while the model thinks or a tool runs.

On a terminal the lines are styled by rich and the status line redraws itself; elsewhere (a
pipe, a file, NO_COLOR) the same lines come as plain text and there is no status line. The
final message is not printed here: the end-of-run summary prints it, once.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.text import Text

from agent.console.render import OUTCOME_STYLE
from agent.console.terminal import Writer, safe
from agent.escape import one_line, printable
from agent.languages.registry import failing_tests
from agent.protocol import AgentEvent

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
STREAM_KEPT_CHARS = 400  # of a streaming reply, what the console keeps
STREAM_SHOWN_CHARS = 60  # and the newest part of it it shows (a status line is one screen line)


STOP_HINT = "Ctrl-C to stop"


def clock(seconds: float) -> str:
    """A whole run's time: 42s, 3m 07s, 1h 02m."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


class StatusLine:
    """What the run is doing now, for how long, the whole run's time and how to stop it;
    rendered afresh at every refresh, so the times move."""

    def __init__(self, what: str = "run") -> None:
        self.label: Text | None = None
        self.what = what
        self.since = self.started = time.monotonic()

    def set(self, label: Text | None) -> None:
        self.label = label
        self.since = time.monotonic()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.label is None:
            return
        now = time.monotonic()
        frame = SPINNER[int(now * 10) % len(SPINNER)]
        width = max(options.max_width - 1, 10)
        times = Text(f" {now - self.since:.1f}s · {self.what} {clock(now - self.started)}", style="dim")
        hint = Text(f" · {STOP_HINT}", style="dim")
        label = self.label.copy()
        # What runs is cut before the times are, and the times before the hint: on a narrow
        # terminal the line still says how long, and how to stop.
        room = width - 2 - len(times) - len(hint)
        if room < 12:
            hint = Text("")
            room = width - 2 - len(times)
        label.truncate(max(room, 1), overflow="ellipsis")
        line = Text(f"{frame} ", style="cyan") + label + times + hint
        line.truncate(width, overflow="ellipsis")
        yield line


class RunConsole:
    """An event sink that shows a run as it happens (see the module docstring)."""

    def __init__(self, stream: TextIO | None = None, *, prefix: str = "", styled: bool | None = None) -> None:
        self.writer = Writer(stream or sys.stdout, styled)
        self.prefix = prefix
        self.status = StatusLine()
        self._live: Live | None = None
        self._lock = threading.RLock()  # write() may come from a signal handler on the emitting thread
        self._streamed = ""  # the text of the reply streaming in now (shown in the status line)

    @property
    def styled(self) -> bool:
        return self.writer.styled

    # --- the sink --------------------------------------------------------------------------------

    def emit(self, event: AgentEvent) -> None:
        with self._lock:
            for line in self.lines(event):
                self.writer.line(Text(self.prefix) + line)
            self._follow(event)

    def close(self) -> None:
        with self._lock:
            self._stop_live()

    def write(self, text: str) -> int:
        """Lines of codebox's own (the cancel notice) above the status line, not through it."""
        with self._lock:
            for part in text.strip("\n").split("\n"):
                if part.strip():
                    self.writer.line(Text(self.prefix + part, style="yellow"))
        return len(text)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No status line while something else uses the terminal (the ask policy's question)."""
        with self._lock:
            was_live = self._live is not None
            self._stop_live()
        try:
            yield
        finally:
            with self._lock:
                if was_live:
                    self._start_live()

    # --- the status line -------------------------------------------------------------------------

    def _follow(self, event: AgentEvent) -> None:
        d = event.data
        if event.type == "turn.start":
            self.status.started = time.monotonic()
            self._thinking(1)
            self._start_live()
        elif event.type == "tool.start" and d.get("decision") == "allow":
            label = Text(f"[{event.step}] ") + Text(str(d.get("name", "")), style="bold")
            label.append(" " + one_line(d.get("summary", ""), 60))
            label.append(" running", style="cyan")
            self.status.set(label)
        elif event.type in ("tool.end", "message", "note") and not d.get("final"):
            self._thinking(event.step + 1 if event.type != "note" else event.step)
        elif event.type == "message.delta":
            self._stream(event.step, str(d.get("text", "")))
        elif event.type == "model.retry":
            self._streamed = ""  # the failed attempt's text is void
            self.status.set(Text(f"model retry {d.get('attempt')}, waiting", style="yellow"))
        elif event.type in ("turn.end", "model.error") or d.get("final"):
            self.status.set(None)
            self._stop_live()
        if self._live is not None:
            self._live.refresh()  # a new state shows at once, not at the next tick

    def _thinking(self, step: int) -> None:
        self._streamed = ""
        self.status.set(Text(f"[{step}] ") + Text("model thinking", style="magenta"))

    def _stream(self, step: int, text: str) -> None:
        """The model's text as it arrives: the newest part of it, on the status line (escaped)."""
        started = not self._streamed
        self._streamed = (self._streamed + text)[-STREAM_KEPT_CHARS:]
        shown = one_line(self._streamed)[-STREAM_SHOWN_CHARS:]
        label = Text(f"[{step}] ") + Text("model: ", style="magenta") + Text("…" + shown if shown else "")
        if started:
            self.status.set(label)  # the clock restarts when the first text arrives
        else:
            self.status.label = label

    def _start_live(self) -> None:
        console = self.writer.console
        if console is None or self._live is not None:
            return
        self._live = Live(
            self.status,
            console=console,
            refresh_per_second=8,
            transient=True,  # the status line leaves nothing behind
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def _stop_live(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()

    # --- the lines -------------------------------------------------------------------------------

    def lines(self, event: AgentEvent) -> list[Text]:
        """The lines an event adds to the console (none for most)."""
        d = event.data
        handler = getattr(self, "_on_" + event.type.replace(".", "_"), None)
        return handler(event, d) if handler else []

    def _on_turn_start(self, event: AgentEvent, d: dict[str, Any]) -> list[Text]:
        head = Text("▶ task ", style="bold") + safe(event.task_id, "bold") + Text(": ")
        head.append(one_line(d.get("goal", ""), 120))
        where = " · ".join(f"{key} {one_line(d.get(key))}" for key in ("model", "policy", "repo"))
        return [head, Text("  " + where, style="dim")]

    def _on_tool_start(self, event: AgentEvent, d: dict[str, Any]) -> list[Text]:
        if d.get("decision") == "allow":
            return []
        line = self._call_head(event, d)
        line.append(f" ✗ {one_line(d.get('decision'))}: ", style="bold red")
        line.append(one_line(d.get("reason", ""), 160), style="red")
        return [line]

    def _on_tool_end(self, event: AgentEvent, d: dict[str, Any]) -> list[Text]:
        if d.get("decision", "allow") != "allow":
            return []  # its tool.start said why
        line = self._call_head(event, d)
        outcome = one_line(d.get("outcome", ""))
        if d.get("is_error"):
            line.append(f" ✗ {outcome}", style=OUTCOME_STYLE.get(outcome, "red"))
        else:
            line.append(f" ✓ {outcome}", style="green")
        line.append(f" {float(d.get('duration_s') or 0):.2f}s", style="dim")
        if d.get("is_error"):
            failing = failing_tests(str(d.get("content", ""))) if d.get("name") == "run_test" else []
            detail = _first_line(d.get("content", ""))
            if failing:
                detail = f"{len(failing)} failing: " + ", ".join(failing[:3])
            line.append(" — " + one_line(detail, 140), style="red")
        return [line]

    def _call_head(self, event: AgentEvent, d: dict[str, Any]) -> Text:
        line = Text(f"  [{event.step}] ") + Text(one_line(d.get("name", "")), style="bold")
        summary = one_line(d.get("summary", ""), 60)
        if summary:
            line.append(" " + summary)
        return line

    def _on_message(self, event: AgentEvent, d: dict[str, Any]) -> list[Text]:
        if d.get("final"):
            return []  # the summary at the end prints it, once
        return [Text("  … " + one_line(d.get("text", ""), 110), style="italic dim")]

    def _on_note(self, event: AgentEvent, d: dict[str, Any]) -> list[Text]:
        return [Text("  note to the model: " + one_line(d.get("text", ""), 110), style="dim")]

    def _on_model_retry(self, event: AgentEvent, d: dict[str, Any]) -> list[Text]:
        wait = float(d.get("wait_s") or 0)
        text = f"  model retry {one_line(d.get('attempt'))} in {wait:.1f}s: {one_line(d.get('reason'), 120)}"
        return [Text(text, style="yellow")]

    def _on_model_fallback(self, event: AgentEvent, d: dict[str, Any]) -> list[Text]:
        text = f"  note: {one_line(d.get('reason'), 120)} (the server said: {one_line(d.get('said'), 120)})"
        return [Text(text, style="yellow")]

    def _on_model_error(self, event: AgentEvent, d: dict[str, Any]) -> list[Text]:
        return [Text("  model error: " + one_line(d.get("error"), 200), style="bold red")]

    def _on_context_trimmed(self, event: AgentEvent, d: dict[str, Any]) -> list[Text]:
        return [Text(f"  context: shortened {one_line(d.get('results'))} old tool results", style="dim")]


def _first_line(text: object) -> str:
    lines = printable(text, multiline=True).strip().split("\n")
    return lines[0] if lines else ""
