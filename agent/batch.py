"""`codebox batch`: many tasks, N at a time, each in its own sandbox, resumable."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError

from agent.checks import error_message
from agent.console.batch_view import BatchView, table_text
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
            problems = "; ".join(error_message(e, {}) for e in exc.errors(include_url=False))
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
    view: BatchView | None = None,
) -> list[Report]:
    """Run the tasks; every task that ran ends with a report on disk, whatever went wrong.

    ``view`` (default: a BatchView on ``progress_stream``, stderr) is told of every start, event,
    finish and resumed task; it draws the progress and knows nothing else of the batch.
    """
    cancel = cancel or CancelToken()
    out_dir.mkdir(parents=True, exist_ok=True)
    progress = view or BatchView(len(tasks), progress_stream or sys.stderr)
    reports: dict[str, Report] = {}
    started: set[str] = set()

    def one(task: TaskSpec) -> None:
        task_dir = out_dir / task.id
        previous = finished_report(task_dir)
        if previous is not None:
            reports[task.id] = previous
            progress.skipped(previous)
            return
        if cancel.cancelled:
            return  # never started: a later run picks it up
        task_dir.mkdir(parents=True, exist_ok=True)
        (task_dir / "events.jsonl").unlink(missing_ok=True)
        sink = FanoutSink(JsonlSink(task_dir / "events.jsonl"), progress.sink(task.id))
        started.add(task.id)
        progress.started(task.id)
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
        progress.finished(report)

    def guarded(task: TaskSpec) -> None:
        try:
            one(task)
        except Exception as exc:  # the task folder or its files could not be written
            report = failed_report(task, task.model or "?", "internal_error", f"{type(exc).__name__}: {exc}",
                                   FanoutSink())
            reports[task.id] = report
            print(f"codebox: task {task.id}: {report.error}", file=sys.stderr)
            progress.finished(report)

    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="codebox-task") as pool:
            futures = [pool.submit(guarded, task) for task in tasks]
            for future in futures:
                while not future.done():
                    time.sleep(0.05)  # keeps the main thread free for signal handlers
    finally:
        if view is None:
            progress.close()
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
            "error": r.error,
        }
        for r in reports
    ]


def write_summary(out_dir: Path, reports: list[Report]) -> None:
    rows = summary_rows(reports)
    _write_atomic(out_dir / "summary.jsonl", "".join(json.dumps(row) + "\n" for row in rows))


def render_table(reports: list[Report]) -> str:
    """The final table as plain text, each task's error in its last column (escaped)."""
    return table_text(reports)
