"""Reads what runs left on disk into the viewer's data: a batch --out folder, one task's folder,
an events file (one run or several appended) or a report file.

Reading is lenient: unknown report keys are kept (they show in the environment table), a torn
or foreign line is skipped with a warning, a missing file leaves its part of the page empty.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from agent.errors import CodeboxError
from agent.view.models import BatchView, TaskView, Totals
from agent.view.task import build_task
from agent.view.timeline import text

Event = dict[str, Any]
MAX_WARNINGS = 20


class ViewError(CodeboxError):
    """The path holds nothing the viewer can show."""


def load(path: Path) -> BatchView:
    path = path.expanduser()
    if not path.exists():
        raise ViewError(f"{path} does not exist")
    if path.is_dir():
        if (path / "report.json").is_file() or (path / "events.jsonl").is_file():
            view = _view(path.name, path, "run", [_task_dir(path, path.name, {})])
        else:
            view = _batch(path)
    elif path.suffix == ".jsonl":
        view = _events_file(path)
    else:
        view = _report_file(path)
    view.totals = totals(view.tasks)
    return view


def default_output(path: Path) -> Path:
    """Where the page goes without --out: view.html in a folder, FILE.html next to a file."""
    return path / "view.html" if path.is_dir() else path.with_suffix(".html")


def _view(title: str, source: Path, kind: str, tasks: list[TaskView]) -> BatchView:
    _unique_ids(tasks)
    return BatchView(title=title, source=str(source), kind=kind, tasks=tasks, generated_at=time.time())


def _unique_ids(tasks: list[TaskView]) -> None:
    """Each task page needs its own address: a second "t1" (a rerun appended to an events
    file, or a report claiming another folder's id) becomes "t1 (2)"."""
    seen: dict[str, int] = {}
    taken = {t.id for t in tasks}
    for task in tasks:
        seen[task.id] = seen.get(task.id, 0) + 1
        if seen[task.id] > 1:
            n = seen[task.id]
            while f"{task.id} ({n})" in taken:
                n += 1
            task.id = f"{task.id} ({n})"
            taken.add(task.id)


# --- files ---------------------------------------------------------------------------------------


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def read_events(path: Path) -> tuple[list[Event], list[str]]:
    """Every line that is an event; the others are counted in one warning each."""
    content = _read_text(path)
    if content is None:
        return [], [f"{path.name}: cannot be read"]
    events: list[Event] = []
    warnings: list[str] = []
    # "\n" only: str.splitlines() would also cut at U+2028, form feeds ... inside JSON strings
    for number, line in enumerate(content.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if isinstance(event, dict) and isinstance(event.get("type"), str):
            events.append(event)
        elif len(warnings) < MAX_WARNINGS:
            warnings.append(f"{path.name} line {number}: not an event (a torn last line?), skipped")
    return events, warnings


def read_report(path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    content = _read_text(path)
    if content is None:
        return None, []
    try:
        report = json.loads(content)
    except ValueError as exc:
        return None, [f"{path.name}: not JSON ({exc})"]
    if not isinstance(report, dict):
        return None, [f"{path.name}: not a JSON object"]
    return report, []


def _jsonl_objects(path: Path) -> list[dict[str, Any]]:
    content = _read_text(path) or ""
    rows = []
    for line in content.split("\n"):
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


# --- shapes --------------------------------------------------------------------------------------


def _task_dir(folder: Path, task_id: str, predictions: dict[str, str]) -> TaskView:
    report, warnings = read_report(folder / "report.json")
    events: list[Event] = []
    if (folder / "events.jsonl").is_file():
        events, more = read_events(folder / "events.jsonl")
        warnings += more
    patch_text = _read_text(folder / "patch.diff") if (folder / "patch.diff").is_file() else None
    source = "patch.diff"
    if patch_text is None and task_id in predictions:
        patch_text, source = predictions[task_id], "predictions.jsonl"
    view = build_task(task_id, report, events, patch_text, source)
    view.warnings[:0] = warnings
    return view


def _batch(folder: Path) -> BatchView:
    summary = _jsonl_objects(folder / "summary.jsonl")
    predictions = {
        text(row.get("instance_id")): text(row.get("model_patch"))
        for row in _jsonl_objects(folder / "predictions.jsonl")
        if isinstance(row.get("model_patch"), str)
    }
    dirs = {
        d.name: d
        for d in sorted(folder.iterdir())
        if d.is_dir() and ((d / "report.json").is_file() or (d / "events.jsonl").is_file())
    }
    # summary.jsonl's order is the task file's; folders it does not list (still running) follow
    order = [text(row.get("task_id")) for row in summary if row.get("task_id")]
    order += [name for name in dirs if name not in order]
    tasks: list[TaskView] = []
    for task_id in order:
        if task_id in dirs:
            tasks.append(_task_dir(dirs[task_id], task_id, predictions))
        else:
            row = next(r for r in summary if text(r.get("task_id")) == task_id)
            view = build_task(task_id, row, [])
            view.warnings.append(f"no folder {task_id}/: only its summary.jsonl line is known")
            tasks.append(view)
    if not tasks:
        raise ViewError(
            f"{folder} holds no runs: expected a batch --out folder (<id>/report.json, <id>/events.jsonl), "
            "a task folder, an events .jsonl file or a report .json file"
        )
    return _view(folder.name, folder, "batch", tasks)


def split_runs(events: list[Event]) -> list[list[Event]]:
    """An events file may hold several runs (--events appends): one list per run, in order."""
    runs: dict[tuple[str, int], list[Event]] = {}
    starts: dict[str, int] = {}
    for event in events:
        task_id = text(event.get("task_id"))
        if event.get("type") == "turn.start":
            starts[task_id] = starts.get(task_id, 0) + 1
        runs.setdefault((task_id, starts.get(task_id, 1)), []).append(event)
    return list(runs.values())


def _events_file(path: Path) -> BatchView:
    events, warnings = read_events(path)
    runs = split_runs(events)
    if not runs:
        raise ViewError(f"{path} holds no codebox events")
    tasks = [build_task(text(run[0].get("task_id")) or "run", None, run) for run in runs]
    view = _view(path.name, path, "run" if len(tasks) == 1 else "batch", tasks)
    view.warnings = warnings
    return view


def _report_file(path: Path) -> BatchView:
    report, warnings = read_report(path)
    if report is None:
        raise ViewError(warnings[0] if warnings else f"{path} cannot be read")
    events: list[Event] = []
    sibling = path.parent / "events.jsonl"
    if sibling.is_file():
        events, warnings = read_events(sibling)
        wanted = text(report.get("task_id"))
        events = [e for e in events if text(e.get("task_id")) == wanted]
    task = build_task(text(report.get("task_id")) or path.stem, report, events)
    task.warnings[:0] = warnings
    return _view(path.name, path, "run", [task])


def totals(tasks: list[TaskView]) -> Totals:
    starts = [t.started_at for t in tasks if t.started_at]
    ends = [t.started_at + t.duration_s for t in tasks if t.started_at]
    costs = [t.cost for t in tasks if t.cost is not None]
    tokens = [t.total_tokens for t in tasks if t.total_tokens is not None]
    return Totals(
        tasks=len(tasks),
        completed=sum(t.status == "completed" for t in tasks),
        failed=sum(t.status in ("stopped", "cancelled") for t in tasks),
        error=sum(t.status == "error" for t in tasks),
        tests_ok=sum(1 for t in tasks if t.test and t.test.outcome == "ok"),
        tests_not_passing=sum(1 for t in tasks if t.status == "completed" and t.test and t.test.outcome != "ok"),
        tokens=sum(tokens) if tokens else None,
        cost=sum(costs) if costs else None,
        task_time_s=sum(t.duration_s for t in tasks),
        wall_time_s=max(ends) - min(starts) if starts else 0.0,
    )
