"""Event sinks: where the agent's events go (memory, a JSONL file, the console, a callback)."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TextIO

from agent.protocol import TRANSIENT_EVENTS, AgentEvent


class EventSink(Protocol):
    def emit(self, event: AgentEvent) -> None: ...

    def close(self) -> None: ...


class MemorySink:
    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def emit(self, event: AgentEvent) -> None:
        self.events.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def close(self) -> None:
        pass


class CallbackSink:
    def __init__(self, fn: Callable[[AgentEvent], Any]) -> None:
        self.fn = fn

    def emit(self, event: AgentEvent) -> None:
        self.fn(event)

    def close(self) -> None:
        pass


class JsonlSink:
    """One event a line, flushed at once: safe to `tail -f` while the run goes on.

    Transient events (text deltas of a streamed reply) are left out unless asked for: the
    whole reply follows as one ``message`` event, and a file of deltas would be mostly noise.
    """

    def __init__(self, path: Path | str, stream: TextIO | None = None, *, include_transient: bool = False) -> None:
        self.path = Path(path)
        self.include_transient = include_transient
        if stream is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            stream = self.path.open("a", encoding="utf-8")
            self._owned = True
        else:
            self._owned = False
        self._stream = stream
        self._lock = threading.Lock()

    @classmethod
    def to_stream(cls, stream: TextIO) -> JsonlSink:
        return cls(Path("-"), stream=stream)

    def emit(self, event: AgentEvent) -> None:
        if event.type in TRANSIENT_EVENTS and not self.include_transient:
            return
        line = event.model_dump_json()
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()

    def close(self) -> None:
        if self._owned:
            self._stream.close()


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    # What the model or the repository wrote reaches a terminal: no escape sequence gets through.
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ConsoleSink:
    """Readable progress: each tool call with its decision and duration, then the final message."""

    def __init__(self, stream: TextIO | None = None, prefix: str = "") -> None:
        self.stream = stream or sys.stderr
        self.prefix = prefix

    def _line(self, text: str) -> None:
        self.stream.write(f"{self.prefix}{text}\n")
        self.stream.flush()

    def emit(self, event: AgentEvent) -> None:
        d = event.data
        if event.type == "turn.start":
            self._line(f"▶ task {event.task_id}: {_short(d.get('goal', ''), 120)}")
            self._line(f"  model {d.get('model')} · policy {d.get('policy')} · repo {d.get('repo')}")
        elif event.type == "tool.start":
            if d.get("decision") != "allow":
                self._line(
                    f"  [{event.step}] {d.get('name')} ✗ {d.get('decision')}: {_short(d.get('reason', ''))}"
                )
        elif event.type == "tool.end":
            if d.get("decision", "allow") != "allow":
                return
            mark = "✓" if not d.get("is_error") else "✗"
            self._line(
                f"  [{event.step}] {d.get('name')} {_short(d.get('summary', ''), 60)} "
                f"{mark} {d.get('outcome')} {d.get('duration_s', 0):.2f}s"
                + ("" if not d.get("is_error") else f" — {_short(d.get('content', ''), 90)}")
            )
        elif event.type == "message":
            if d.get("final"):
                self._line("■ final message:")
                for line in str(d.get("text", "")).splitlines():
                    self._line(f"  {line}")
            else:
                self._line(f"  … {_short(d.get('text', ''), 110)}")
        elif event.type == "model.retry":
            self._line(f"  model retry {d.get('attempt')} in {d.get('wait_s', 0):.1f}s: {d.get('reason')}")
        elif event.type == "model.error":
            self._line(f"  model error: {d.get('error')}")
        elif event.type == "context.trimmed":
            self._line(f"  context: shortened {d.get('results')} old tool results")
        elif event.type == "turn.end":
            self._line(f"■ {d.get('status')} ({d.get('reason')})")

    def close(self) -> None:
        pass


class FanoutSink:
    """Sends each event to several sinks; one failing sink does not stop the run or the others."""

    def __init__(self, *sinks: EventSink) -> None:
        self.sinks = list(sinks)
        self.errors: list[str] = []

    def emit(self, event: AgentEvent) -> None:
        for sink in self.sinks:
            try:
                sink.emit(event)
            except Exception as exc:  # a broken sink must not end the run
                if len(self.errors) < 10:
                    self.errors.append(f"{type(sink).__name__}: {exc}")
                    print(f"codebox: event sink {type(sink).__name__} failed: {exc}", file=sys.stderr)

    def close(self) -> None:
        for sink in self.sinks:
            try:
                sink.close()
            except Exception as exc:
                print(f"codebox: closing {type(sink).__name__} failed: {exc}", file=sys.stderr)
