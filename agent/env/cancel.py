"""Cancelling an environment build midway: the signal, the error, and waits that watch the signal.

A build waits on three kinds of thing: a host subprocess (uv, apt-get), a container (the
probe, the install, a step in a box) and a download. Each wait here polls the cancel signal every
``POLL_S``; on a cancel (or a KeyboardInterrupt in the waiting thread) the subprocess's whole
process group is killed, or the container removed, before ``EnvCancelled`` is raised.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from agent.env.errors import EnvError

POLL_S = 0.1


class Cancel(Protocol):
    """What a build watches: agent.cancel.CancelToken fits (set from a signal handler or another thread)."""

    @property
    def cancelled(self) -> bool: ...


class EnvCancelled(EnvError):
    """The build was cancelled: nothing of it is left (no container, no image, no partial cache file)."""

    def __init__(self, reason: str = "") -> None:
        super().__init__("the environment build was cancelled" + (f" ({reason})" if reason else ""))
        self.reason = reason


class NeverCancelled:
    cancelled = False


NEVER: Cancel = NeverCancelled()


def check(cancel: Cancel) -> None:
    """EnvCancelled when ``cancel`` is set: called between the stages of a build."""
    if cancel.cancelled:
        raise EnvCancelled(str(getattr(cancel, "reason", "") or ""))


@contextlib.contextmanager
def holding(lock: threading.Lock, cancel: Cancel) -> Iterator[None]:
    """``lock`` held; the wait for it ends on a cancel."""
    while not lock.acquire(timeout=POLL_S):
        check(cancel)
    try:
        yield
    finally:
        lock.release()


def run_process(cmd: list[str], cancel: Cancel, timeout: float, **options: Any) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(cmd, capture_output=True, text=True)`` that a cancel stops within ~POLL_S.

    The child leads its own process group, and the whole group is killed on a cancel, a
    timeout (``subprocess.TimeoutExpired``, as subprocess.run raises it) or any exception
    in this thread (KeyboardInterrupt included): no uv worker outlives the build.
    """
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **options)
    deadline = time.monotonic() + timeout
    done = False
    try:
        while True:
            check(cancel)
            try:
                out, err = proc.communicate(timeout=POLL_S)
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(cmd, timeout) from None
                continue
            done = True
            return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    finally:
        if not done:
            kill_group(proc)


def kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the process group ``proc`` leads, then reap ``proc`` (and close its pipes)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.communicate(timeout=5)


def wait_container(container: Any, cancel: Cancel, timeout: float, remove: Callable[[], None]) -> dict[str, Any]:
    """``container.wait()``'s result, watching ``cancel`` meanwhile (see ``wait_thread``)."""
    result: dict[str, Any] = {}

    def waiter() -> None:
        result["status"] = container.wait()

    wait_thread(waiter, cancel, timeout, remove)
    status: dict[str, Any] = result["status"]
    return status


def wait_thread(work: Callable[[], None], cancel: Cancel, timeout: float, abort: Callable[[], None]) -> None:
    """Run the blocking ``work`` (a container's wait, an exec's output) in a helper thread, watching ``cancel``.

    This thread polls. On a cancel, a timeout or an exception here (KeyboardInterrupt),
    ``abort`` (kill and remove the container) runs at once, which also ends the helper's
    wait. ``TimeoutError`` when the work runs longer than ``timeout``; EnvError when it raised.
    """
    result: dict[str, Any] = {}

    def helper() -> None:
        try:
            work()
        except Exception as exc:  # the container was removed under it, Docker went away
            result["error"] = exc

    thread = threading.Thread(target=helper, name="codebox-env-wait", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    finished = False
    try:
        while thread.is_alive():
            thread.join(POLL_S)
            if thread.is_alive():
                check(cancel)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the container ran longer than {timeout:g} s")
        finished = True
    finally:
        if not finished:
            abort()
    check(cancel)  # the work ended as the cancel came: still a cancel
    if "error" in result:
        raise EnvError(f"waiting for the build container failed: {result['error']}") from result["error"]
