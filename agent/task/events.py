"""Event sinks: where the agent's events go (memory, a JSONL file, a callback; the console is agent.console)."""

from __future__ import annotations

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
