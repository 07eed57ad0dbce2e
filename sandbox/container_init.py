"""PID 1 of a sandbox container: start the server, reap zombies, and end the container on time.

    python3 -m sandbox.container_init --alarm-s N [--hup-grace-s G] -- python3 -m sandbox.server ...

Stdlib only, python3 >= 3.9 (it runs inside the container, from the read-only
/opt/codebox mount). It does what docker's ``--init`` (tini) does: runs the
command as its child, forwards SIGTERM / SIGINT / SIGHUP / SIGQUIT to it, reaps
every orphan, and exits with the child's status. It does two more things that
no process inside the container can stop, because the kernel protects a PID
namespace's init: SIGKILL and SIGSTOP sent from inside the namespace are
ignored, and it makes itself non-dumpable, so a process of the same uid can
neither ptrace it nor open its descriptors:

- a lifetime cap: a kernel alarm ends the container after ``--alarm-s``;
- the owner watch: when the host's attach connection closes (the host process
  ended, even by SIGKILL; docker then closes the container's stdin because of
  StdinOnce), stdin reports POLLHUP. The server normally sees EOF and exits by
  itself; if it has not within ``--hup-grace-s`` (it was stopped with SIGSTOP by
  repository code of the same uid, or is wedged), init exits anyway.

When init exits, the kernel kills every process in the container's PID
namespace, the container stops, and ``auto_remove`` deletes it.
init never reads stdin: it only polls for the hang-up, the server owns the data.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import signal
import sys
import time

WAKE_S = 0.25  # a check of the hang-up grace at least this often
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def _log(message: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"codebox-init: {message}\n".encode())


def _set_undumpable() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except Exception:  # no ctypes in this python: the kernel's init protection still holds
        pass


def _status_code(status: int) -> int:
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m sandbox.container_init")
    parser.add_argument("--alarm-s", type=int, required=True, help="end the container after this many seconds")
    parser.add_argument("--hup-grace-s", type=float, default=2.0, help="after stdin hangs up, wait this long")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run (the server)")
    ns = parser.parse_args(argv)
    command = ns.command[1:] if ns.command[:1] == ["--"] else ns.command
    if not command:
        parser.error("no command")

    def on_alarm(signum: int, frame: object) -> None:
        _log(f"lifetime of {ns.alarm_s} s reached: ending the container")
        os._exit(124)

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(max(1, ns.alarm_s))
    _set_undumpable()

    child = os.fork()
    if child == 0:
        try:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(0)
            os.execvp(command[0], command)
        except OSError as exc:
            _log(f"cannot run {command[0]!r}: {exc}")
        os._exit(127)

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(child, signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)

    # SIGCHLD wakes the poll below through the wakeup pipe: no reaping delay.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    poller = select.poll()
    poller.register(wake_r, select.POLLIN)
    # Watch stdin for the hang-up without reading it (events=0: only POLLHUP / POLLERR report).
    watching = True
    try:
        poller.register(0, 0)
    except (OSError, ValueError):
        watching = False
    hup_at: float | None = None

    while True:
        while True:  # reap every exited child: the server, and orphans re-parented to us
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return 0
            if pid == 0:
                break
            if pid == child:
                return _status_code(status)
        if hup_at is not None and time.monotonic() - hup_at > ns.hup_grace_s:
            _log("the host hung up and the server did not exit in time: ending the container")
            return 0
        for fd, events in poller.poll(WAKE_S * 1000):
            if fd == wake_r:
                try:
                    while os.read(wake_r, 512):
                        pass
                except OSError:
                    pass
            elif watching and events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                hup_at = time.monotonic()
                poller.unregister(0)
                watching = False


if __name__ == "__main__":
    sys.exit(main())
