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

A light boot, because a task waits for it: when the command is ``python3 -m
sandbox.server ...``, the forked child runs the server in-process instead of
exec'ing a second interpreter (no second interpreter start-up; the pages of
this one are shared copy-on-write), and init itself imports nothing beyond
what it uses (no argparse). Run it as ``python3 -S``: the image's site hooks
are not needed by stdlib-only code and cost more than the rest of the boot.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import sys
import time

from sandbox import flags

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


USAGE = "usage: python3 -m sandbox.container_init --alarm-s N [--hup-grace-s G] -- COMMAND..."
SERVER_MODULE = "sandbox.server"
# Interpreter flags that change nothing for the stdlib server run in-process; any other: exec.
_IN_PROCESS_FLAGS = ("-I", "-S", "-s", "-B", "-u")


class _Usage(Exception):
    """A bad command line (exit 2, like argparse)."""


class _Options:
    def __init__(self, alarm_s: int, hup_grace_s: float, command: list[str]) -> None:
        self.alarm_s = alarm_s
        self.hup_grace_s = hup_grace_s
        self.command = command


def _parse(argv: list[str]) -> _Options:
    """The command line (sandbox.flags: argparse would be most of init's own start-up)."""
    try:
        values, command = flags.parse(argv, {"--alarm-s": (int, None), "--hup-grace-s": (float, 2.0)},
                                      stop_at_dashes=True)
    except flags.FlagError as exc:
        raise _Usage(f"{exc}\n{USAGE}") from None
    if values["alarm_s"] is None:
        raise _Usage(f"--alarm-s is required\n{USAGE}")
    if not command:
        raise _Usage(f"no command\n{USAGE}")
    return _Options(values["alarm_s"], values["hup_grace_s"], command)


def _server_argv(command: list[str]) -> list[str] | None:
    """The server's own arguments when ``command`` is ``python3 [-I|-S|-s|-B|-u]... -m sandbox.server ...``
    (any ``python``, ``python3`` or ``python3.X``: the injected runtime's is ``/.codebox/bin/python3.11``)."""
    name = os.path.basename(command[0]) if command else ""
    if not (name in ("python3", "python") or name.startswith("python3.")):
        return None
    at = 1
    while at < len(command) and command[at] in _IN_PROCESS_FLAGS:
        at += 1
    if command[at : at + 2] != ["-m", SERVER_MODULE]:
        return None
    return command[at + 2 :]


def _run_child(command: list[str]) -> None:
    """In the forked child: become the command (never returns)."""
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(0)
    server_argv = _server_argv(command)
    if server_argv is not None:
        code = 1
        try:
            from sandbox import server

            code = server.main(server_argv)
        except SystemExit as exc:  # argparse: bad options
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException as exc:  # never fall back into init's loop
            _log(f"the server failed: {type(exc).__name__}: {exc}")
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
        os._exit(code)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        _log(f"cannot run {command[0]!r}: {exc}")
    os._exit(127)


def main(argv: list[str] | None = None) -> int:
    try:
        ns = _parse(sys.argv[1:] if argv is None else argv)
    except flags.HelpWanted:
        print(USAGE)
        return 0
    except _Usage as exc:
        _log(str(exc))
        return 2
    command = ns.command

    def on_alarm(signum: int, frame: object) -> None:
        _log(f"lifetime of {ns.alarm_s} s reached: ending the container")
        os._exit(124)

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(max(1, ns.alarm_s))
    _set_undumpable()

    # The child's collector would otherwise write to every object of ours it walks, and so
    # copy the pages it shares with us.
    gc.freeze()
    child = os.fork()
    if child == 0:
        _run_child(command)

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
