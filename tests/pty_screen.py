"""`codebox` on a pseudo-terminal, and what a person's screen shows afterwards.

``on_a_pty`` runs the command with a pty as its stdin, stdout and stderr (so it draws its live
lines), optionally sends it a signal once some text has appeared, and returns every byte it
wrote and its exit code. ``final_screen`` replays those bytes through pyte, a VT100 emulator:
the lines left on the screen once every redraw, erase and cursor move has been applied, which
is what the user is left looking at (a status line that did not clean up after itself shows).
"""

from __future__ import annotations

import os
import pty
import signal
import struct
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fcntl import ioctl
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[1]
COLUMNS, ROWS = 400, 400  # wide: a long one-line message stays one screen line; tall: nothing scrolls


def pty_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A terminal that takes colours, codebox's caches and config under tmp_path."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "CI_NO_TTY")}
    return {**env, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"), "TERM": "xterm-256color",
            "COLUMNS": str(COLUMNS), "LINES": str(ROWS), **extra}


def on_a_pty(
    args: list[str],
    env: dict[str, str],
    *,
    seconds: float = 180,
    signal_when: bytes | None = None,
    signum: int = signal.SIGINT,
    cwd: Path = ROOT,
    program: list[str] | None = None,
) -> tuple[bytes, int]:
    """Run `python -m agent.cli.parser ARGS` (or ``program`` and ARGS) on a pty; all it wrote, and its exit
    code. With ``signal_when``, ``signum`` goes to it once those bytes have appeared in its output."""
    argv = [*(program or [sys.executable, "-m", "agent.cli"]), *args]
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    seen = b""
    sent = False
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if signal_when is not None and not sent and signal_when in seen:
                os.kill(pid, signum)
                sent = True
    finally:
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return seen, os.waitstatus_to_exitcode(status)


def final_screen(raw: bytes) -> list[str]:
    """The screen's lines after all of ``raw`` is drawn (trailing blanks dropped)."""
    import pyte

    screen = pyte.Screen(COLUMNS, ROWS)
    stream = pyte.ByteStream(screen)
    stream.feed(raw)  # the pty's line discipline already turned each \n into \r\n
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return lines


@contextmanager
def terminal(columns: int = COLUMNS, rows: int = ROWS) -> Iterator[tuple[TextIO, Callable[[], bytes]]]:
    """A pty of this size for a console object in this process: its slave side as a text
    stream, and a function that returns all written to it so far."""
    master, slave = os.openpty()
    ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    stream = open(slave, "w", encoding="utf-8", closefd=True)  # noqa: SIM115 - closed below
    chunks: list[bytes] = []

    def drain() -> None:  # the pty's buffer is small: read while the console writes
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()

    def written() -> bytes:
        stream.flush()
        time.sleep(0.2)  # let the reader catch up with what is already written
        return b"".join(chunks)

    try:
        yield stream, written
    finally:
        stream.close()
        reader.join(timeout=5)
        os.close(master)
