"""What the server needs of /proc and prctl at boot, without run_test's heavier imports.

Stdlib only, python3 >= 3.9. ``sandbox.tools.run_test`` uses the same helpers; the
server imports this module at boot and run_test only on the first run_test call.
"""

from __future__ import annotations

import os
import sys
from collections import namedtuple

# Not `from typing import ...` at run time: typing is the largest import of the server's boot
# (~2 MB of an idle sandbox); mypy reads these names, the interpreter never needs them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


class ProcInfo(namedtuple("ProcInfo", "pid ppid pgid sid state")):
    """One line of /proc/<pid>/stat: the ids and the state letter."""

    __slots__ = ()
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str


def read_stat(pid: int) -> Optional[ProcInfo]:
    # os-level calls: open, read, close (a buffered file adds fstat, ioctl, lseek and a second
    # read), for each process at each scan; under gVisor each call is a trip through its kernel
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)  # the kernel gives the whole line at once
    except OSError:
        return None
    finally:
        os.close(fd)
    end = data.rfind(b")")  # the command name may itself hold spaces and parentheses
    fields = data[end + 2 :].split()
    try:
        return ProcInfo(pid, int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode())
    except (IndexError, ValueError):
        return None


def scan() -> dict[int, ProcInfo]:
    procs: dict[int, ProcInfo] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return procs
    for name in names:
        if name.isdigit():
            info = read_stat(int(name))
            if info is not None:
                procs[info.pid] = info
    return procs


def become_subreaper() -> bool:
    """PR_SET_CHILD_SUBREAPER: orphans of our descendants are re-parented to us."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(36, 1, 0, 0, 0)) == 0
    except Exception:  # no ctypes in this python, no prctl: host mode loses orphans
        return False


def set_undumpable() -> bool:
    """PR_SET_DUMPABLE 0: processes of our uid can no longer open /proc/<us>/fd/*
    (the protocol pipes) nor ptrace us. Children get it back when they exec."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(4, 0, 0, 0, 0)) == 0
    except Exception:
        return False


def in_host_pid_namespace() -> bool:
    """Kernel threads (kthreadd: ppid 0, pid 2) are visible only from the host's namespace."""
    return any(p.ppid == 0 and pid != 1 for pid, p in scan().items())


def tmpfs_mounts(also: tuple[str, ...] = ()) -> set[str]:
    """Mount points of tmpfs file systems, from /proc/self/mountinfo; and those of ``also`` that are
    mount points of any type (Podman under gVisor shows the container's own /dev/shm as a bind)."""
    found: set[str] = set()
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 4 and (" - tmpfs " in line or fields[4] in also):
                    found.add(fields[4])
    except OSError:
        pass
    return found


def tmp_is_private_tmpfs() -> bool:
    """In a container (/.dockerenv, /run/.containerenv, or the ``container`` variable that codebox's
    create body sets: Podman's read-only containers have neither file), and /tmp is a tmpfs mounted
    at /tmp itself: the container's own, not a host's shared directory."""
    marked = os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv")
    if not (marked or os.environ.get("container")):  # noqa: SIM112 -- the convention's own lower-case name
        return False
    return "/tmp" in tmpfs_mounts()
