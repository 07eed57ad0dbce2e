"""One task's page data from what its run left: report (a dict: newer or older report shapes
both load), events and patch. Missing pieces leave their part of the page empty."""

from __future__ import annotations

import math
from typing import Any

from agent.console.net_diff import NetDiff
from agent.languages.registry import failing_tests
from agent.view.diff import split_diff
from agent.view.models import PatchView, StepView, TaskView, TestView, ToolCallView
from agent.view.timeline import build_timeline, clip, event_time, number, text

MAX_DIFF_LINES = 20_000

# Report keys the page shows in their own place; every other key goes to the environment table.
_SHOWN = {
    "task_id", "goal", "repo", "model", "status", "stop_reason", "final_message", "error", "steps",
    "tool_calls", "files_changed", "last_test", "usage", "started_at", "duration_s", "patch", "cost",
    "cost_usd", "input_tokens", "output_tokens", "total_tokens",
}  # fmt: skip


def build_task(
    task_id: str,
    report: dict[str, Any] | None,
    events: list[dict[str, Any]],
    patch_text: str | None = None,
    patch_source: str = "",
) -> TaskView:
    start = _first(events, "turn.start")
    if report is None:  # the run's last event carries the report when report.json is missing
        end = _first(events, "turn.end", last=True)
        embedded = end.get("report") if end else None
        report = embedded if isinstance(embedded, dict) else None
    r = report or {}
    timeline = build_timeline(events)
    view = TaskView(
        id=text(r.get("task_id")) or task_id,
        goal=clip(text(r.get("goal") or start.get("goal"))),
        repo=text(r.get("repo") or start.get("repo")),
        model=text(r.get("model") or start.get("model")),
        policy=text(start.get("policy")),
        status=text(r.get("status")) or ("running" if events else "unknown"),
        stop_reason=text(r.get("stop_reason")),
        error=clip(text(r.get("error"))) or None,
        final_message=_final_message(r, timeline),
        steps=int(number(r.get("steps"), len(timeline))),
        tool_calls=_count_calls(r, timeline),
        files_changed=[text(f) for f in r.get("files_changed") or [] if f is not None],
        started_at=number(r.get("started_at"), _first_time(events)) or None,
        duration_s=number(r.get("duration_s"), _span(events)),
        timeline=timeline or _calls_from_report(r),
        events=len(events),
    )
    _usage(view, r)
    view.test = _test(r, timeline, start)
    if patch_text is None:  # a `codebox run` in place leaves no patch.diff: its events hold its changes
        patch_text, patch_source = _net_diff(events)
    view.patch = _patch(r, patch_text, patch_source)
    view.environment = _environment(r, start)
    if report is None:
        view.warnings.append("no report: the run is still going, or it ended without writing one")
    if not events:
        view.warnings.append("no events: the timeline shows the report's tool calls, without times")
    return view


def _first(events: list[dict[str, Any]], kind: str, last: bool = False) -> dict[str, Any]:
    matching = [e for e in events if e.get("type") == kind and isinstance(e.get("data"), dict)]
    if not matching:
        return {}
    data: dict[str, Any] = (matching[-1] if last else matching[0])["data"]
    return data


def _first_time(events: list[dict[str, Any]]) -> float:
    times = [t for e in events if (t := event_time(e)) is not None]
    return min(times) if times else 0.0


def _span(events: list[dict[str, Any]]) -> float:
    times = [t for e in events if (t := event_time(e)) is not None]
    return max(times) - min(times) if times else 0.0


def _final_message(report: dict[str, Any], timeline: list[StepView]) -> str | None:
    if report.get("final_message"):
        return clip(text(report["final_message"]))
    finals = [m for step in timeline if step.final for m in step.messages]
    return finals[-1] if finals else None


def _count_calls(report: dict[str, Any], timeline: list[StepView]) -> int:
    calls = report.get("tool_calls")
    if isinstance(calls, list):
        return len(calls)
    return int(number(calls, sum(len(s.calls) for s in timeline)))


def _calls_from_report(report: dict[str, Any]) -> list[StepView]:
    """Without events, the report's call records are all there is: one step holds them."""
    records = [c for c in report.get("tool_calls") or [] if isinstance(c, dict)]
    if not records:
        return []
    calls = [
        ToolCallView(
            call_id=text(c.get("call_id")),
            name=text(c.get("name")) or "?",
            step=0,
            decision=text(c.get("decision")) or "allow",
            is_error=not c.get("ok", True),
            outcome="ok" if c.get("ok", True) else "error",
            content=text(c.get("error")),
            duration_s=number(c.get("duration_s")),
        )
        for c in records
    ]
    return [StepView(number=0, calls=calls, tool_s=sum(c.duration_s for c in calls))]


def _usage(view: TaskView, report: dict[str, Any]) -> None:
    """Token and cost figures, from the report's usage or its top level (newer reports)."""
    usage = report.get("usage")
    sources = [usage if isinstance(usage, dict) else {}, report]
    for source in sources:
        for key in ("input_tokens", "output_tokens", "total_tokens"):
            value = source.get(key)
            if getattr(view, key) is None and isinstance(value, int) and not isinstance(value, bool):
                setattr(view, key, value)
        for key in ("cost_usd", "cost"):
            cost = number(source.get(key), math.nan)
            if view.cost is None and not math.isnan(cost):
                view.cost = cost
    if view.total_tokens is None and view.input_tokens is not None:
        view.total_tokens = view.input_tokens + (view.output_tokens or 0)


def _last_run_test(timeline: list[StepView]) -> ToolCallView | None:
    runs = [c for step in timeline for c in step.calls if c.name == "run_test" and c.decision == "allow"]
    return runs[-1] if runs else None


def _test(report: dict[str, Any], timeline: list[StepView], start: dict[str, Any]) -> TestView | None:
    last = report.get("last_test")
    call = _last_run_test(timeline)
    if not isinstance(last, dict) and call is None:
        return None
    last = last if isinstance(last, dict) else {}
    command = last.get("command")
    output = call.content if call else ""
    listed = last.get("failing") or last.get("failed_tests")
    # An empty list from the report (TestRun.failed_tests' default) still lets the output speak.
    failing = [text(t) for t in listed] if isinstance(listed, list) and listed else failing_tests(output)
    outcome = text(last.get("outcome")) or (call.outcome if call else "")
    return TestView(
        command=" ".join(text(a) for a in command) if isinstance(command, list) else text(command),
        outcome=outcome,
        exit_code=last["exit_code"] if isinstance(last.get("exit_code"), int) else None,
        duration_s=number(last.get("duration_s")) or (call.duration_s if call else 0.0),
        failing=failing,
        error=_test_error(last, outcome, output),
        chosen=text(start.get("tests")),
        output=output,
    )


def _test_error(last: dict[str, Any], outcome: str, output: str) -> str:
    """Why the run did not pass: the report's (newer reports), else the first line the model read (older ones)."""
    if outcome in ("", "ok"):
        return ""
    said = text(last.get("error"))
    if said:
        return clip(said, 500)
    first = next((line.strip() for line in output.splitlines() if line.strip()), "")
    return clip(first, 500)


def _net_diff(events: list[dict[str, Any]]) -> tuple[str | None, str]:
    """The run's net change from its apply_patch results (agent.console.net_diff), and its source."""
    net = NetDiff()
    for event in events:
        net.add_event(text(event.get("type")), event.get("data"))
    diff = net.text()
    if not diff:
        return None, ""
    return diff, "the run's patches, one after the other" if net.by_patch else "the run's patches (net change)"


def _patch(report: dict[str, Any], patch_text: str | None, source: str) -> PatchView | None:
    given = report.get("patch")
    summary: dict[str, Any] = given if isinstance(given, dict) else {}
    if patch_text is None and not summary:
        return None
    split = split_diff(patch_text or "")
    lines = split.lines
    if len(lines) > MAX_DIFF_LINES:
        cut = len(lines) - MAX_DIFF_LINES
        lines = [*lines[:MAX_DIFF_LINES], ("note", f"[… {cut} more lines cut by the viewer; {source} has them all]")]
    files = [text(f) for f in summary.get("files") or []] or split.files
    return PatchView(
        lines=lines,
        files=files,
        added=int(number(summary.get("added"), split.added)) if patch_text is None else split.added,
        removed=int(number(summary.get("removed"), split.removed)) if patch_text is None else split.removed,
        source=source,
    )


def _environment(report: dict[str, Any], start: dict[str, Any]) -> dict[str, str]:
    env: dict[str, str] = {}
    for key in ("policy", "max_steps"):
        if key in start:
            env[key] = text(start[key])
    for key, value in report.items():
        if key in _SHOWN:
            continue
        if isinstance(value, dict):  # e.g. env: {"image": ..., "python": ...}
            for sub, inner in value.items():
                env[f"{key}.{sub}"] = clip(text(inner), 4000)
        elif value is not None:
            env[key] = clip(text(value), 4000)
    return env
