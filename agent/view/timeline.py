"""A run's events as steps: each step's model time and tool calls, timed from the events' clocks.

Model time of a step: from the step's last earlier event (the previous tool result, or the
run's start) to its first reply event (its text, its first tool call, or the model's error).
Tool time: each call's own measured duration (tool.end's duration_s).
"""

from __future__ import annotations

import json
import math
from typing import Any

from agent.view.models import StepView, ToolCallView

# Beyond this a tool result is cut in the middle for the page (the events file keeps it all).
MAX_TEXT = 64_000
_REPLY_EVENTS = {"message", "tool.start", "model.error"}


def clip(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[… {cut} characters cut by the viewer; events.jsonl has them all …]\n{text[-half:]}"


def text(value: Any) -> str:
    """Any JSON value as text: strings as they are, the rest as compact JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def number(value: Any, default: float = 0.0) -> float:
    """A finite number, or the default (JSON from a hostile run may say true, "3" or Infinity)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return default


def _arguments(data: dict[str, Any]) -> str:
    raw = data.get("raw_arguments")
    args = data.get("arguments")
    if isinstance(raw, str) and not args:
        return raw
    try:
        return json.dumps(args if args is not None else {}, indent=2, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return text(args)


def _call_from_start(event: dict[str, Any], t0: float | None) -> ToolCallView:
    data = _data(event)
    return ToolCallView(
        call_id=text(data.get("call_id")),
        name=text(data.get("name")) or "?",
        step=int(number(event.get("step"))),
        arguments=clip(_arguments(data)),
        decision=text(data.get("decision")) or "allow",
        reason=text(data.get("reason")),
        write_paths=[text(p) for p in data.get("write_paths") or [] if p is not None],
        start_s=_offset(event, t0),
        finished=False,
    )


def _finish_call(call: ToolCallView, event: dict[str, Any]) -> None:
    data = _data(event)
    call.outcome = text(data.get("outcome"))
    call.is_error = bool(data.get("is_error"))
    call.content = clip(text(data.get("content")))
    call.summary = text(data.get("summary"))
    call.duration_s = number(data.get("duration_s"))
    call.finished = True
    if data.get("decision"):
        call.decision = text(data.get("decision"))


def _data(event: dict[str, Any]) -> dict[str, Any]:
    data = event.get("data")
    return data if isinstance(data, dict) else {}


def event_time(event: dict[str, Any]) -> float | None:
    t = number(event.get("time"), math.nan)
    return None if math.isnan(t) else t


def _offset(event: dict[str, Any], t0: float | None) -> float | None:
    t = event_time(event)
    if t0 is None or t is None:
        return None
    return max(0.0, t - t0)


def _note(event: dict[str, Any]) -> str | None:
    data = _data(event)
    kind = event.get("type")
    if kind == "model.retry":
        return f"model retry {text(data.get('attempt'))} after {number(data.get('wait_s')):.1f}s: " + text(
            data.get("reason")
        )
    if kind == "model.error":
        return "model error: " + text(data.get("error"))
    if kind == "context.trimmed":
        return f"context: shortened {text(data.get('results'))} old tool results"
    return None


class _Builder:
    """Walks the events once, in order, and fills the steps."""

    def __init__(self, t0: float | None) -> None:
        self.t0 = t0
        self.steps: dict[int, StepView] = {}
        self.calls: dict[str, ToolCallView] = {}
        self.last_time: float | None = t0
        self.replied: set[int] = set()

    def step(self, number_: int) -> StepView:
        if number_ not in self.steps:
            self.steps[number_] = StepView(number=number_)
        return self.steps[number_]

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        n = int(number(event.get("step")))
        if kind in ("turn.start", "turn.end") or n <= 0:
            self._tick(event)
            return
        step = self.step(n)
        if kind in _REPLY_EVENTS and n not in self.replied:
            self._model_time(step, event)
        note = _note(event)
        if note:
            step.notes.append(note)
        if kind == "message":
            step.messages.append(clip(text(_data(event).get("text"))))
            step.final = step.final or bool(_data(event).get("final"))
        elif kind == "tool.start":
            call = _call_from_start(event, self.t0)
            self.calls[call.call_id] = call
            step.calls.append(call)
        elif kind == "tool.end":
            self._end(step, event)
        if kind != "model.retry":  # a retry happens inside the model call: it does not end a wait
            self._tick(event)

    def _model_time(self, step: StepView, event: dict[str, Any]) -> None:
        self.replied.add(step.number)
        t = event_time(event)
        if self.last_time is not None and t is not None and self.t0 is not None:
            step.start_s = max(0.0, self.last_time - self.t0)
            step.model_s = max(0.0, t - self.last_time)

    def _end(self, step: StepView, event: dict[str, Any]) -> None:
        call_id = text(_data(event).get("call_id"))
        call = self.calls.get(call_id)
        if call is None:  # a tool.end without its start (a torn file): show it anyway
            call = _call_from_start(event, self.t0)
            step.calls.append(call)
            self.calls[call_id] = call
        _finish_call(call, event)
        step.tool_s += call.duration_s

    def _tick(self, event: dict[str, Any]) -> None:
        t = event_time(event)
        if t is not None:
            self.last_time = t


def build_timeline(events: list[dict[str, Any]]) -> list[StepView]:
    """The steps of one run, in order; events of other kinds are skipped."""
    times = [t for e in events if (t := event_time(e)) is not None]
    builder = _Builder(min(times) if times else None)
    for event in events:  # file order is emit order (one writer, under a lock)
        builder.feed(event)
    return [builder.steps[n] for n in sorted(builder.steps)]
