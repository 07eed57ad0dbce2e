"""The batch on the console: fed by task events and reports, it shows one row per running task
(id, step, current tool, elapsed), the finished count, and at the end a table with each error (a task's
own, else why its last test run did not pass).

On a terminal it redraws in place with rich; elsewhere it writes one plain line per finished
task. It knows nothing of how tasks run: engines call started / sink / finished / skipped.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TextIO

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.live import Live
from rich.table import Table
from rich.text import Text

from agent.console.render import STATUS_STYLE, test_reason, tests_passed_or_none
from agent.console.terminal import Writer, safe_styled
from agent.escape import one_line
from agent.protocol import AgentEvent, Report

MAX_ROWS = 20  # running tasks shown at once; the rest are counted
ERROR_WIDTH = 80


@dataclass
class _Running:
    started: float = field(default_factory=time.monotonic)
    step: int = 0
    tool: str = "model thinking"


class _TaskSink:
    """One task's events, turned into its row."""

    def __init__(self, view: BatchView, task_id: str) -> None:
        self.view = view
        self.task_id = task_id

    def emit(self, event: AgentEvent) -> None:
        self.view.on_event(self.task_id, event)

    def close(self) -> None:
        pass


class BatchView:
    """The lock guards the view's state only. Nothing holding it calls the console: rich's refresh
    thread holds the console's lock while it draws the board, and the board reads that state, so a
    print under the view's lock could wait on the refresh while the refresh waits on the lock (a
    batch's screen froze that way, and with it the batch)."""

    def __init__(self, total: int, stream: TextIO | None = None, styled: bool | None = None) -> None:
        self.total = total
        self.writer = Writer(stream or sys.stderr, styled)
        self.running: dict[str, _Running] = {}
        self.done = self.failed = self.cancelled = self.resumed = 0
        self.tests_not_passing = 0  # completed tasks whose last test run did not pass
        self._lock = threading.RLock()
        self._live: Live | None = None
        if self.writer.console is not None:
            self._live = Live(
                _Board(self), console=self.writer.console, refresh_per_second=4, transient=True,
                redirect_stdout=False, redirect_stderr=False,
            )
            self._live.start()

    # --- what the engine calls -------------------------------------------------------------------

    def sink(self, task_id: str) -> _TaskSink:
        return _TaskSink(self, task_id)

    def started(self, task_id: str) -> None:
        with self._lock:
            self.running[task_id] = _Running()

    def skipped(self, report: Report) -> None:
        """A task finished by an earlier run of the batch (resumed)."""
        with self._lock:
            self.done += 1
            self.resumed += 1
            self._count(report)
            line = self._note(report, resumed=True)
        self.writer.line(line)

    def finished(self, report: Report) -> None:
        with self._lock:
            self.running.pop(report.task_id, None)
            self.done += 1
            self._count(report)
            line = self._note(report)
        self.writer.line(line)

    def on_event(self, task_id: str, event: AgentEvent) -> None:
        with self._lock:
            row = self.running.get(task_id)
            if row is None:
                return
            row.step = event.step
            d = event.data
            if event.type == "tool.start" and d.get("decision") == "allow":
                row.tool = f"{d.get('name')} {one_line(d.get('summary', ''), 40)}".strip()
            elif event.type in ("tool.end", "turn.start", "note") or (event.type == "message" and not d.get("final")):
                row.tool = "model thinking"

    def close(self) -> None:
        with self._lock:
            live, self._live = self._live, None
        if live is not None:  # outside the lock: stopping waits for the refresh thread, which takes it
            live.stop()

    # --- drawing ---------------------------------------------------------------------------------

    def _count(self, report: Report) -> None:
        if report.status == "cancelled":
            self.cancelled += 1
        elif report.status != "completed":
            self.failed += 1
        elif not tests_passed_or_none(report):
            self.tests_not_passing += 1

    def counts(self) -> str:
        line = f"{self.done}/{self.total} done · {self.failed} failed · {len(self.running)} running"
        if self.tests_not_passing:
            line += f" · {self.tests_not_passing} completed with tests not passing"
        if self.cancelled:
            line += f" · {self.cancelled} cancelled"
        if self.resumed:
            line += f" · {self.resumed} resumed"
        return line

    def write(self, text: str) -> int:
        """Lines of codebox's own (the cancel notice) above the board, not through it."""
        for part in text.strip("\n").split("\n"):
            if part.strip():
                self.writer.line(Text(part, style="yellow"))
        return len(text)

    def env_line(self, line: str) -> None:
        """A progress line of an environment build (agent.task.runner.env_progress's, for a batch): above the
        board, where a line written to stderr by a preparing thread would be drawn over by it."""
        self.writer.line(safe_styled(f"codebox: env: {line}"))

    def _note(self, report: Report, resumed: bool = False) -> Text:
        """The line of a finished task (made under the lock: it reads the counts)."""
        tests_failed = report.status == "completed" and not tests_passed_or_none(report)
        mark = "✓" if report.status == "completed" and not tests_failed else "✗"
        style = "bold yellow" if tests_failed else STATUS_STYLE.get(report.status, "bold")
        line = Text(f"{mark} ", style=style)
        line.append(one_line(report.task_id), style="bold")
        line.append(f" {report.status} ({report.stop_reason}) {report.duration_s:.1f}s")
        if tests_failed and report.last_test is not None:
            line.append(f" · last test {one_line(report.last_test.outcome)}", style="yellow")
            reason = test_reason(report.last_test)
            if reason:
                line.append(": " + one_line(reason, ERROR_WIDTH), style="yellow")
        if resumed:
            line.append(" (resumed: finished earlier)", style="dim")
        if report.error:
            line.append(" — " + one_line(report.error, ERROR_WIDTH), style="red")
        if self._live is None:
            line.append(f"   [{self.counts()}]", style="dim")
        return line

    def rows(self) -> list[tuple[str, str, str, str]]:
        now = time.monotonic()
        with self._lock:
            items = list(self.running.items())[:MAX_ROWS]
        return [(one_line(tid, 40), str(r.step), one_line(r.tool, 50), f"{now - r.started:.0f}s") for tid, r in items]


class _Board:
    """The live part: the counts and one row per running task."""

    def __init__(self, view: BatchView) -> None:
        self.view = view

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        parts: list[Text | Table] = [Text(self.view.counts(), style="bold")]
        rows = self.view.rows()
        if rows:  # no running task: no header over an empty table (a cancelled batch's last frame)
            table = Table(box=None, pad_edge=False, show_edge=False, header_style="dim")
            for name in ("task", "step", "now", "elapsed"):
                table.add_column(name, no_wrap=True, overflow="ellipsis")
            for row in rows:
                table.add_row(*row)
            parts.append(table)
        hidden = len(self.view.running) - MAX_ROWS
        if hidden > 0:
            parts.append(Text(f"… and {hidden} more running", style="dim"))
        yield Group(*parts)


# --- the final table -----------------------------------------------------------------------------

HEADER = ("task", "status", "reason", "steps", "calls", "files", "test", "time", "tokens", "cost", "error")


def table_rows(reports: list[Report]) -> list[tuple[str, ...]]:
    return [
        (
            one_line(r.task_id),
            r.status,
            r.stop_reason,
            str(r.steps),
            str(len(r.tool_calls)),
            str(len(r.files_changed)),
            one_line(r.last_test.outcome) if r.last_test else "-",
            f"{r.duration_s:.1f}s",
            str(r.usage.total_tokens) if r.usage else "-",
            f"{r.cost:.4f}" if r.cost is not None else "-",
            one_line(r.error or _test_error(r), ERROR_WIDTH),
        )
        for r in reports
    ]


def _test_error(report: Report) -> str:
    """The error column of a task with no error of its own whose last test run did not pass: why."""
    test = report.last_test
    reason = test_reason(test) if test is not None else None
    return f"last test {test.outcome}: {reason}" if test is not None and reason else ""


def table_text(reports: list[Report]) -> str:
    """The final table as aligned plain text (every cell escaped)."""
    body = table_rows(reports)
    widths = [max([len(h), *(len(b[i]) for b in body)]) for i, h in enumerate(HEADER)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)).rstrip() for b in body]
    return "\n".join(lines)


def print_table(reports: list[Report], stream: TextIO, styled: bool | None = None) -> None:
    writer = Writer(stream, styled)
    if writer.console is None:
        stream.write(table_text(reports) + "\n")
        return
    # One space between columns, none at the edges: on a 100-column terminal the numbers keep their
    # width and the error has room to fold into; no error column when no task has an error.
    table = Table(header_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False)
    rows = table_rows(reports)
    errors = any(row[-1] for row in rows)
    names = HEADER if errors else HEADER[:-1]
    for name in names:  # every column keeps its width; the error folds into what is left
        table.add_column(name, no_wrap=name != "error", overflow="fold" if name == "error" else "ellipsis",
                         min_width=20 if name == "error" else None)
    error_column = HEADER.index("error")
    for report, row in zip(reports, rows, strict=True):
        style = STATUS_STYLE.get(report.status, "")
        error_style = "red" if report.error else "yellow"
        table.add_row(*(Text(cell, style=style if i == 1 else (error_style if i == error_column else ""))
                        for i, cell in enumerate(row[:len(names)])))
    writer.console.print(table)
