"""Processes a test run leaves behind: found in /proc, signalled, reaped; and the cgroup's OOM counter.

Used by run_test after every run (see its docstring for host mode and ``--reap-all``) and by the
server at exit. What the server needs at boot (subreaper, non-dumpable, /proc scan) is in the
lighter ``sandbox.tools.procs``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

from sandbox.tools.procs import ProcInfo, scan

# Not `from typing import ...` at run time (a first run_test would pay for it).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

KILL_ROUNDS_S = 5.0


# -- /proc ------------------------------------------------------------------------------


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(4096)
    except OSError:
        raw = b""
    text = " ".join(p.decode("utf-8", "replace") for p in raw.split(b"\x00") if p)
    text = text.replace("\r", "\\r").replace("\n", "\\n")  # one line, whatever the arguments
    if not text:
        try:
            with open(f"/proc/{pid}/comm", "rb") as f:
                text = "[" + f.read().strip().decode("utf-8", "replace") + "]"
        except OSError:
            text = "?"
    return text if len(text) <= 300 else text[:300] + "..."


def _real_uid(pid: int) -> Optional[int]:
    """From /proc/<pid>/status (the owner of /proc/<pid> lies for non-dumpable processes)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


class Reaper:
    def __init__(self, reap_all: bool) -> None:
        self.reap_all = reap_all
        self.me = os.getpid()
        self.uid = os.getuid()

    def targets(self, sid: Optional[int]) -> dict[int, ProcInfo]:
        procs = scan()
        out: dict[int, ProcInfo] = {}
        if self.reap_all:
            keep = {self.me}
            cur = procs.get(self.me)
            while cur is not None and cur.ppid not in keep and cur.ppid != 0:
                keep.add(cur.ppid)
                cur = procs.get(cur.ppid)
            for pid, p in procs.items():
                if pid in keep or p.state in ("Z", "X") or _real_uid(pid) != self.uid:
                    continue
                out[pid] = p
            return out
        children: dict[int, list[int]] = {}
        for pid, p in procs.items():
            children.setdefault(p.ppid, []).append(pid)
        desc: set[int] = set()
        stack = [self.me]
        while stack:
            for c in children.get(stack.pop(), ()):
                if c not in desc:
                    desc.add(c)
                    stack.append(c)
        for pid, p in procs.items():
            if pid == self.me or p.state in ("Z", "X"):
                continue
            if pid in desc or (sid is not None and (p.sid == sid or p.pgid == sid)):
                out[pid] = p
        return out

    def reap_zombies(self, skip: Optional[int]) -> None:
        """waitpid our zombie children, except ``skip`` (the Popen child, not yet waited)."""
        for pid, p in scan().items():
            if p.ppid == self.me and p.state == "Z" and pid != skip:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)

    def _signal(self, pid: int, sig: int, killed: dict[int, str]) -> None:
        if pid not in killed:
            killed[pid] = cmdline(pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)

    def terminate(self, proc: subprocess.Popen[bytes], killed: dict[int, str]) -> None:
        """SIGTERM the command's group and everything else that is ours."""
        targets = self.targets(proc.pid)  # before any signal: dead processes have no cmdline
        for pid in targets:
            killed.setdefault(pid, cmdline(pid))
        if proc.returncode is None:  # the group id cannot be reused while the leader is unwaited
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGTERM)
        for pid in targets:
            self._signal(pid, signal.SIGTERM, killed)

    def kill_all(self, proc: Optional[subprocess.Popen[bytes]], killed: dict[int, str]) -> None:
        """SIGKILL, in rounds until none is left (a fork loop loses the race), then reap."""
        sid = proc.pid if proc is not None else None
        end = time.monotonic() + KILL_ROUNDS_S
        while True:
            targets = self.targets(sid)
            if not targets:
                break
            for pid in targets:
                killed.setdefault(pid, cmdline(pid))
            if proc is not None and proc.returncode is None:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
            for pid in targets:
                self._signal(pid, signal.SIGKILL, killed)
            if self.reap_all and (os.getpid() == 1 or os.getppid() == 1):  # no other ancestor
                # everything we may signal, but init and us: one atomic sweep
                with contextlib.suppress(OSError):
                    os.kill(-1, signal.SIGKILL)
            self._reap(proc)
            if time.monotonic() > end:
                print(
                    f"codebox-server: {len(targets)} processes survive SIGKILL",
                    file=sys.stderr,
                )
                break
            time.sleep(0.002)
        self._reap(proc)

    def _reap(self, proc: Optional[subprocess.Popen[bytes]]) -> None:
        skip = None
        if proc is not None:
            proc.poll()
            if proc.returncode is None:
                skip = proc.pid
        self.reap_zombies(skip)


# -- cgroup OOM counter -----------------------------------------------------------------


def _cgroup_files() -> list[str]:
    files: list[str] = []
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        path = path if path != "/" else ""
        if controllers == "":
            files.append(f"/sys/fs/cgroup{path}/memory.events")
        elif "memory" in controllers.split(","):
            files.append(f"/sys/fs/cgroup/memory{path}/memory.oom_control")
    files += ["/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"]
    return files


def oom_kill_count() -> Optional[int]:
    for path in _cgroup_files():
        try:
            with open(path) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return None
