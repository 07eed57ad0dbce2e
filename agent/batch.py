"""`codebox batch`: many tasks, N at a time, each in its own sandbox, resumable."""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError

from agent.budget import BatchBudget
from agent.containers.sandbox import SandboxConfig
from agent.events import FanoutSink, JsonlSink
from agent.loop import CancelToken, Limits
from agent.model.base import ModelClient, ModelError
from agent.protocol import Report, TaskSpec
from agent.runner import failed_report, run_task

ModelFactory = Callable[[TaskSpec], ModelClient]
_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass
class TaskFileError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def load_tasks(path: Path) -> tuple[list[TaskSpec], list[TaskFileError]]:
    """Read every line; report every bad one with its number (nothing runs if any is bad)."""
    tasks: list[TaskSpec] = []
    errors: list[TaskFileError] = []
    seen: dict[str, int] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [TaskFileError(0, f"cannot read {path} as UTF-8 text: {exc}")]
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            task = TaskSpec.model_validate_json(line)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'line'}: {e['msg']}" for e in exc.errors()
            )
            errors.append(TaskFileError(number, problems))
            continue
        if task.id in seen:
            errors.append(TaskFileError(number, f"duplicate task id {task.id!r} (first on line {seen[task.id]})"))
            continue
        if not Path(task.repo).expanduser().is_dir():
            errors.append(TaskFileError(number, f"repo {task.repo!r} is not a directory"))
            continue
        if not _TASK_ID.fullmatch(task.id):
            errors.append(
                TaskFileError(number, f"task id {task.id!r} must be letters, digits, '.', '_' or '-' (a folder name)")
            )
            continue
        seen[task.id] = number
        tasks.append(task)
    return tasks, errors


def finished_report(task_dir: Path) -> Report | None:
    """A report that ends a task for good (a cancelled run is not: it runs again)."""
    try:
        report = Report.model_validate_json((task_dir / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return None if report.status == "cancelled" else report


@dataclass
class Progress:
    total: int
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    done: int = 0
    failed: int = 0
    skipped: int = 0
    running: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def update(self, *, started: int = 0, finished: Report | None = None, skipped: bool = False) -> None:
        with self._lock:
            self.running += started
            if skipped:
                self.skipped += 1
                self.done += 1
            if finished is not None:
                self.running -= 1
                self.done += 1
                if finished.status != "completed":
                    self.failed += 1
            self._draw(finished)

    def _draw(self, finished: Report | None) -> None:
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        line = (
            f"[{bar}] {self.done}/{self.total} done · {self.failed} failed · {self.running} running"
            + (f" · {self.skipped} resumed" if self.skipped else "")
        )
        if self.stream.isatty():
            self.stream.write("\r" + line)
            if self.done == self.total:
                self.stream.write("\n")
        else:
            note = f"  ({finished.task_id}: {finished.status}/{finished.stop_reason})" if finished else ""
            self.stream.write(line + note + "\n")
        self.stream.flush()


def run_batch(
    tasks: list[TaskSpec],
    out_dir: Path,
    make_model: ModelFactory,
    *,
    jobs: int = 2,
    sandbox_config: SandboxConfig | None = None,
    limits: Limits | None = None,
    cancel: CancelToken | None = None,
    progress_stream: TextIO | None = None,
    budget: BatchBudget | None = None,
) -> list[Report]:
    """Run the tasks; every task that ran ends with a report on disk, whatever went wrong.

    With a ``budget``, every reply of every task spends it, and no task starts once it is spent
    (those tasks get no report: a later run with more budget picks them up).
    """
    cancel = cancel or CancelToken()
    if budget is not None:
        limits = replace(limits or Limits(), on_usage=budget.spend)
    out_dir.mkdir(parents=True, exist_ok=True)
    progress = Progress(total=len(tasks), stream=progress_stream or sys.stderr)
    reports: dict[str, Report] = {}
    started: set[str] = set()

    def one(task: TaskSpec) -> None:
        task_dir = out_dir / task.id
        previous = finished_report(task_dir)
        if previous is not None:
            reports[task.id] = previous
            progress.update(skipped=True)
            return
        if cancel.cancelled:
            return  # never started: a later run picks it up
        if budget is not None and not budget.should_start():
            return  # the batch's budget is spent: likewise
        task_dir.mkdir(parents=True, exist_ok=True)
        (task_dir / "events.jsonl").unlink(missing_ok=True)
        sink = FanoutSink(JsonlSink(task_dir / "events.jsonl"))
        started.add(task.id)
        progress.update(started=1)
        try:
            try:
                model = make_model(task)
            except ModelError as exc:
                report = failed_report(task, task.model or "?", "model_error", str(exc), sink)
            else:
                report = run_task(task, model, sink, sandbox_config=sandbox_config, cancel=cancel, limits=limits)
        except Exception as exc:  # one task's crash never stops the others
            report = failed_report(task, task.model or "?", "internal_error", f"{type(exc).__name__}: {exc}", sink)
        finally:
            sink.close()
        _write_atomic(task_dir / "report.json", report.model_dump_json(indent=2))
        reports[task.id] = report
        progress.update(finished=report)

    def guarded(task: TaskSpec) -> None:
        try:
            one(task)
        except Exception as exc:  # the task folder or its files could not be written
            report = failed_report(task, task.model or "?", "internal_error", f"{type(exc).__name__}: {exc}",
                                   FanoutSink())
            reports[task.id] = report
            print(f"codebox: task {task.id}: {report.error}", file=sys.stderr)
            progress.update(finished=report, started=0 if task.id in started else 1)

    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="codebox-task") as pool:
        futures = [pool.submit(guarded, task) for task in tasks]
        for future in futures:
            while not future.done():
                time.sleep(0.05)  # keeps the main thread free for signal handlers
    ordered = [reports[t.id] for t in tasks if t.id in reports]
    write_summary(out_dir, ordered)
    return ordered


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def summary_rows(reports: list[Report]) -> list[dict[str, object]]:
    return [
        {
            "task_id": r.task_id,
            "status": r.status,
            "stop_reason": r.stop_reason,
            "steps": r.steps,
            "tool_calls": len(r.tool_calls),
            "files_changed": len(r.files_changed),
            "last_test": r.last_test.outcome if r.last_test else None,
            "duration_s": r.duration_s,
            "tokens": r.usage.total_tokens if r.usage else None,
            "cost": r.cost,
            "error": r.error,
        }
        for r in reports
    ]


def write_summary(out_dir: Path, reports: list[Report]) -> None:
    rows = summary_rows(reports)
    _write_atomic(out_dir / "summary.jsonl", "".join(json.dumps(row) + "\n" for row in rows))


def render_table(reports: list[Report]) -> str:
    rows = summary_rows(reports)
    header = ("task", "status", "reason", "steps", "calls", "files", "test", "time", "tokens", "cost")
    body = [
        (
            str(r["task_id"]),
            str(r["status"]),
            str(r["stop_reason"]),
            str(r["steps"]),
            str(r["tool_calls"]),
            str(r["files_changed"]),
            str(r["last_test"] or "-"),
            f"{r['duration_s']:.1f}s",
            str(r["tokens"] if r["tokens"] is not None else "-"),
            f"{r['cost']:.4f}" if isinstance(r["cost"], float) else "-",
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)) for b in body]
    return "\n".join(lines)
