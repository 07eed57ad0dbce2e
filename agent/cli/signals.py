"""Ctrl-C and SIGTERM as a cancel: the run stops cleanly, its sandbox is removed, a report is written."""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Protocol

from agent.cancel import CancelToken


class Writes(Protocol):
    """Where the notice goes: stderr, or a live console that prints it above its own lines."""

    def write(self, text: str, /) -> object: ...


@contextlib.contextmanager
def cancel_on_signals(cancel: CancelToken, stream: Writes = sys.stderr) -> Iterator[None]:
    """Ctrl-C or SIGTERM cancels the run cleanly; a second Ctrl-C exits at once.

    ``stream``: a live console (RunConsole, BatchView) takes the notice above its status line or
    board; written straight to the terminal under it, it would leave pieces of them behind.
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if cancel.cancelled and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stream.write(f"\ncodebox: {name} received: stopping (the sandbox is being removed)\n")
        cancel.cancel(f"{name} received")

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
