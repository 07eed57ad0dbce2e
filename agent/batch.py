"""`codebox batch`: many tasks, each in its own workspace and sandbox; a patch out of each; resumable."""

from __future__ import annotations

import json
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from agent.cancel import CancelToken
from agent.console.batch_view import BatchView, table_text
from agent.engines import Engine, JobLimits, LocalEngine, TaskJob, TaskOutcome
from agent.protocol import AgentEvent, Report, TaskSpec, Usage
from agent.sandboxes.config import SandboxConfig
from agent.settings.checks import error_message
from agent.task.budget import BatchBudget
from agent.task.events import EventSink, FanoutSink, JsonlSink

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


def finished_report(task_dir: Path, cancelled_too: bool = False) -> Report | None:
    """A report that ends a task for good (a cancelled run is not: it runs again)."""
    try:
        report = Report.model_validate_json((task_dir / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return None if report.status == "cancelled" and not cancelled_too else report


def select_tasks(tasks: list[TaskSpec], pattern: str | None) -> list[TaskSpec]:
    """The tasks whose id matches ``pattern`` anywhere (re.search); all of them for None."""
    if not pattern:
        return list(tasks)
    regex = re.compile(pattern)
    return [t for t in tasks if regex.search(t.id)]


def run_batch(
    tasks: list[TaskSpec],
    out_dir: Path,
    *,
    model: str | None = None,
    model_options: dict[str, Any] | None = None,
    jobs: int = 2,
    engine: Engine | None = None,
    sandbox_config: SandboxConfig | None = None,
    limits: JobLimits | None = None,
    cancel: CancelToken | None = None,
    progress_stream: TextIO | None = None,
    retry_errors: bool = False,
    keep_workspaces: bool = False,
    selected: list[TaskSpec] | None = None,
    view: BatchView | None = None,
    budget: BatchBudget | None = None,
    warm: bool = True,
) -> list[Report]:
    """Run the tasks (or the ``selected`` few of them), each in its own workspace; return the reports.

    Every task that ran ends with report.json, events.jsonl and patch.diff in out/<id>/,
    whatever went wrong. A finished task is not run again (a cancelled one is; an errored
    one with ``retry_errors``). Only this driver writes ``out_dir``; the engine (default: a
    local thread pool of ``jobs``) only hands outcomes back. predictions.jsonl and
    summary.jsonl cover every task of ``tasks`` that has a report. ``view`` (default: a
    BatchView on ``progress_stream``, stderr) is told of every start, event, finish and
    resumed task; it draws the progress and knows nothing else of the batch. With a
    ``budget``, every reply of every task spends it, and no task starts once it is spent (those
    tasks get no report: a later run with more budget picks them up). ``warm``: the default
    engine prepares the next queued tasks (workspace, environment, started sandbox) while
    earlier ones run.
    """
    cancel = cancel or CancelToken()
    out_dir.mkdir(parents=True, exist_ok=True)
    chosen = tasks if selected is None else selected
    progress = view or BatchView(len(chosen), progress_stream or sys.stderr)
    reports: dict[str, Report] = {}
    to_run: list[TaskJob] = []
    for task in chosen:
        previous = finished_report(out_dir / task.id)
        if previous is not None and not (retry_errors and previous.status == "error"):
            reports[task.id] = previous
            progress.skipped(previous)
            continue
        to_run.append(_job(task, model, model_options or {}, sandbox_config, limits, keep_workspaces, out_dir))
    driver = _Driver(out_dir, reports, progress, budget)
    if engine is None:
        engine = LocalEngine(jobs, live_sink=driver.live_sink, warm=warm, env_log=progress.env_line)
    admit = (lambda _job: budget.should_start()) if budget is not None else None
    try:
        engine.run(to_run, driver.on_outcome, cancel, on_start=driver.on_start, admit=admit)
    finally:
        if view is None:
            progress.close()
    write_outputs(out_dir, tasks)
    return [reports[t.id] for t in chosen if t.id in reports]


def _job(
    task: TaskSpec,
    model: str | None,
    model_options: dict[str, Any],
    sandbox_config: SandboxConfig | None,
    limits: JobLimits | None,
    keep: bool,
    out_dir: Path,
) -> TaskJob:
    return TaskJob(task=task, model=task.model or model or "", model_options=model_options,
                   sandbox=sandbox_config or SandboxConfig(), limits=limits or JobLimits(),
                   attempt=_attempts(out_dir / task.id) + 1, keep_workspace=keep)


def _attempts(task_dir: Path) -> int:
    try:
        return int(json.loads((task_dir / "run.json").read_text(encoding="utf-8"))["attempt"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


class _Driver:
    """The only writer of ``--out``: clears a task's folder when it starts, writes its outcome when it ends."""

    def __init__(
        self, out_dir: Path, reports: dict[str, Report], progress: BatchView, budget: BatchBudget | None = None
    ) -> None:
        self.out_dir = out_dir
        self.reports = reports
        self.progress = progress
        self.budget = budget
        self.live: set[str] = set()  # tasks whose events.jsonl is written as they happen
        self._lock = threading.Lock()

    def on_start(self, job: TaskJob) -> None:
        task_dir = self.out_dir / job.task.id
        try:
            task_dir.mkdir(parents=True, exist_ok=True)
            # A run that starts has no result yet: if it is killed, the next batch runs it again.
            for name in ("report.json", "events.jsonl", "patch.diff"):
                (task_dir / name).unlink(missing_ok=True)
        except OSError:
            pass  # on_outcome reports the folder's problem
        self.progress.started(job.task.id)

    def live_sink(self, job: TaskJob) -> EventSink:
        """The events file, written as events happen, and the progress view (which shows them)."""
        view: EventSink = self.progress.sink(job.task.id)
        if self.budget is not None:  # each reply spends the batch's budget as it comes
            view = FanoutSink(view, _BudgetSink(self.budget))
        try:
            events = JsonlSink(self.out_dir / job.task.id / "events.jsonl")
        except OSError:
            return view  # the file is written from the outcome instead (or reported as unwritable there)
        with self._lock:
            self.live.add(job.task.id)
        return FanoutSink(events, view)

    def on_outcome(self, outcome: TaskOutcome) -> None:
        report = outcome.report
        if self.budget is not None and outcome.task_id not in self.live and report.usage is not None:
            self.budget.spend(report.usage)  # an engine with no live events: spent when the task ends
        try:
            self._write(outcome)
        except OSError as exc:  # the task folder or its files could not be written
            report = report.model_copy(update={"status": "error", "stop_reason": "internal_error",
                                               "error": f"its results could not be written: {exc}"})
            print(f"codebox: task {outcome.task_id}: {report.error}", file=sys.stderr)
        self.reports[outcome.task_id] = report
        self.progress.finished(report)

    def _write(self, outcome: TaskOutcome) -> None:
        task_dir = self.out_dir / outcome.task_id
        task_dir.mkdir(parents=True, exist_ok=True)
        if outcome.task_id not in self.live:
            _write_atomic(task_dir / "events.jsonl", "".join(line + "\n" for line in outcome.events))
        _write_atomic(task_dir / "patch.diff", outcome.patch)
        run = {"attempt": outcome.attempt, "node": outcome.node, "workspace": outcome.workspace}
        _write_atomic(task_dir / "run.json", json.dumps(run, indent=2))
        _write_atomic(task_dir / "report.json", outcome.report.model_dump_json(indent=2))  # last: the task is done


class _BudgetSink:
    """Spends a batch's budget with the usage each reply's event carries."""

    def __init__(self, budget: BatchBudget) -> None:
        self.budget = budget

    def emit(self, event: AgentEvent) -> None:
        usage = event.data.get("usage") if event.type in ("message", "tool.start") else None
        if isinstance(usage, dict):
            self.budget.spend(Usage.model_validate(usage))

    def close(self) -> None:
        pass


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
            "lines_added": r.patch.added if r.patch else 0,
            "lines_removed": r.patch.removed if r.patch else 0,
            "base_commit": r.base_commit,
            "last_test": r.last_test.outcome if r.last_test else None,
            "last_test_error": r.last_test.error if r.last_test else None,
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


def write_outputs(out_dir: Path, tasks: list[TaskSpec]) -> None:
    """summary.jsonl for every task with a report, predictions.jsonl for every one that did not
    end in error (SWE-bench's keys; the patch may be empty)."""
    reports: list[Report] = []
    predictions: list[str] = []
    for task in tasks:
        task_dir = out_dir / task.id
        report = finished_report(task_dir, cancelled_too=True)
        if report is None:
            continue
        reports.append(report)
        if report.status in ("completed", "stopped"):
            try:
                patch = (task_dir / "patch.diff").read_text(encoding="utf-8", errors="surrogateescape")
            except OSError:
                patch = ""
            line = {"instance_id": task.prediction_id, "model_name_or_path": report.model, "model_patch": patch}
            predictions.append(json.dumps(line) + "\n")
    write_summary(out_dir, reports)
    _write_atomic(out_dir / "predictions.jsonl", "".join(predictions))


def render_table(reports: list[Report]) -> str:
    """The final table as plain text, each task's error in its last column (escaped)."""
    return table_text(reports)
