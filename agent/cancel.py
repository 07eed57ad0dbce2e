"""CancelToken: a run's (or a batch's, a build's) stop flag, set from any thread or a signal handler."""

from __future__ import annotations

import threading


class CancelToken:
    """Set from any thread (a signal handler, a UI) to stop a run at once."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def cancel(self, reason: str = "cancelled") -> None:
        self.reason = reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)
