"""A long preparation (an environment's build or install) as a person sees it: each step the
build logs is a line, as before, and on a terminal a live line under them says which step runs,
for how long, how long the whole preparation has taken, and how to stop it.

It hooks into the build's log callback only (``log(text)``), never into the build itself. On a
pipe, a file or with NO_COLOR the same lines come as plain text and there is no live line.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

from agent.console.terminal import Styled, Writer
from agent.escape import one_line

if TYPE_CHECKING:
    from agent.console.live import StatusLine


class StepProgress:
    """Use as a context manager; hand ``log`` to the build as its log callback."""

    def __init__(self, stream: TextIO, prefix: str = "codebox: env: ", what: str = "env",
                 styled: bool | None = None) -> None:
        self.writer = Writer(stream, styled)
        self.prefix = prefix
        self.what = what
        self._lock = threading.RLock()
        self._status: StatusLine | None = None
        self._live: Any = None

    @property
    def styled(self) -> bool:
        return self.writer.styled

    def log(self, text: str) -> None:
        """One step of the build: its line now, and (on a terminal) the live line follows it."""
        with self._lock:
            self.writer.line(Styled(self.prefix + one_line(text, 300)))
            if self.writer.console is None:
                return
            from rich.text import Text

            status = self._start()
            status.set(Text(f"{self.what}: ", style="magenta") + Text(one_line(text, 80)))
            self._live.refresh()

    def _start(self) -> StatusLine:
        if self._status is None:
            from rich.live import Live

            from agent.console.live import StatusLine

            self._status = StatusLine(self.what)
            self._live = Live(self._status, console=self.writer.console, refresh_per_second=8, transient=True,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start()
        return self._status

    def write(self, text: str) -> int:
        """Lines of codebox's own (a cancel notice) above the live line."""
        with self._lock:
            for part in text.strip("\n").split("\n"):
                if part.strip():
                    self.writer.line(Styled(part, style="yellow"))
        return len(text)

    def close(self) -> None:
        with self._lock:
            if self._live is not None:
                self._live.stop()
                self._live = None

    def __enter__(self) -> StepProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
