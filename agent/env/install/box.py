"""The environment build container: no network, every capability dropped, the task's limits, a
deadline, and repository code never as root.

A box is one container of the task's backend (``Backend.builder()``, agent.sandboxes.build) whose
first process only keeps it alive and reaps what the steps leave behind (no engine's init is
needed: Podman's may be missing); the work happens in steps, each an ``exec``:

- ``root(script)``: setup that runs no repository or package code (creating the folders the
  build user owns, ``dpkg`` of host-downloaded Debian packages). Root holds only the
  capabilities the box was created with (``caps``), which is none unless dpkg runs. A box made
  with ``root_steps=False`` has none of these: everything in it, its keep-alive included, runs
  as ``BUILD_USER``.
- ``run(script)``: everything else (setup.py, PEP 517 hooks, sdist builds, recipe commands) as
  ``BUILD_USER``, an unprivileged uid with no effective capability; ``no-new-privileges``
  keeps setuid programs from giving any back.

A cancel, or the deadline passing, removes the container at once (which ends the step).
Files come out through the engine: a small one into memory (a tar of it), a layer as a step's
standard output into a host file codebox chose: a name the repository controls never becomes
a host path. Every stream out of a box is counted on the host: a step whose output passes its
cap (``max_bytes``: a layer's; ENV_STEP_LOG_MAX_BYTES: its log), or a file read past its limit,
removes the box and fails the build saying which cap it passed.

codebox's own steps after repository or package code ran (collecting the project layer, the
venv's install and bytecode) run no program that code could replace: ``/bin/sh``, the base
image's interpreter by its absolute path (probed before anything ran, not writable by the build
user) with ``-I -S``, absolute tools, a fixed system PATH; and they first end whatever the build
user left running (``REAP``). The keep-alive is the box's PID 1: no signal from inside the box
ends it (the kernel drops them for a namespace's init, and ``kill -1`` passes it by), so the build
user, whose uid a box without root steps runs it as, cannot end the box either.
"""

from __future__ import annotations

import collections
import io
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from pydantic import BaseModel

from agent import defaults
from agent.env.cancel import NEVER, Cancel, check, wait_thread
from agent.env.errors import EnvError
from agent.errors import SandboxError
from agent.sandboxes.owner import owner_labels

if TYPE_CHECKING:  # annotations only: a cache hit imports this module for BuildLimits, and no box
    from agent.sandboxes.build import BoxOptions, BuildBox, Builder

BUILD_USER = "65534:65534"  # nobody:nogroup: what repository and package code runs as
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # root's folders only
# The first line of codebox's own steps that follow repository or package code: every process of the build user
# but this shell ends (a daemon a build left behind could write into the step's output otherwise).
REAP = "kill -9 -1 2>/dev/null || :"
ROLE_BUILD = "env-build"
DPKG_CAPS = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"]  # what dpkg -i needs as root, nothing more
SETUP_CAPS = ["CHOWN"]  # root's only power in a box without dpkg: giving BUILD_USER its folders
TAIL_BYTES = 64 * 1024
LOG_PREFIX = "codebox: "  # lines of our own scripts that are progress for the user
# PID 1 of a box: sleeps until a child ends, then reaps every one that has (a build's daemon would fill the
# pids limit otherwise). SIGCHLD is blocked for sigwait; a step's processes do not inherit it (the engine
# starts them, not this process).
KEEP_ALIVE = ["python3", "-c", "import os, signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})\n"
               "while True:\n    signal.sigwait({signal.SIGCHLD})\n    try:\n"
               "        while os.waitpid(-1, os.WNOHANG)[0]:\n            pass\n"
               "    except ChildProcessError:\n        pass\n"]
Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


class BuildLimits(BaseModel):
    """The build container's limits: the task's sandbox limits, and a deadline for the whole build."""

    memory: str = defaults.DEFAULT_MEMORY
    pids: int = defaults.DEFAULT_PIDS
    cpus: float = defaults.DEFAULT_CPUS  # 0: no quota (only a box that runs no repository or package code)
    timeout_s: float = defaults.DEFAULT_ENV_BUILD_TIMEOUT_S


class Deadline:
    """The moment the whole build must end by (every box and host step shares it)."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.end = time.monotonic() + timeout_s

    def remaining(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise DeadlinePassed(f"the environment build did not finish in {self.timeout_s:g} s (the build deadline)")
        return left


class DeadlinePassed(EnvError):
    """A build step found its deadline passed."""


class StepFailed(EnvError):
    """A step exited non-zero: its exit status and the end of its output."""

    def __init__(self, purpose: str, status: int, tail: str) -> None:
        super().__init__(f"the {purpose} step failed (exit {status}); the end of its log:\n{tail}")
        self.status = status
        self.tail = tail


class Mount(BaseModel):
    """A host path (codebox's own: a temp folder, the cache, the user's repository) seen read-only in the box."""

    host: str
    target: str


class Box:
    """One build container; see the module docstring. Use it as a context manager."""

    def __init__(self, client: Builder, image: str, purpose: str, mounts: list[Mount],
                 limits: BuildLimits, deadline: Deadline, cancel: Cancel = NEVER, caps: list[str] | None = None,
                 log: Log = _quiet, tmpfs: dict[str, str] | None = None, root_steps: bool = True) -> None:
        self.client = client
        self.image = image
        self.purpose = purpose
        self.mounts = mounts
        self.limits = limits
        self.deadline = deadline
        self.cancel = cancel
        self.caps = list(caps if caps is not None else SETUP_CAPS)
        self.log = log
        self.tmpfs = dict(tmpfs or {})  # path -> mount options (in memory: counted in the memory limit)
        self.root_steps = root_steps  # False: nothing in the box ever runs as root, its keep-alive included
        self.container: BuildBox | None = None

    def create_options(self) -> BoxOptions:
        """Every option the container is created with (the tests read them)."""
        expires = time.time() + self.deadline.remaining() + 60
        return {
            "command": KEEP_ALIVE,  # it reaps what a step leaves behind (a build's daemon), so no init is needed
            # the keep-alive only: root's steps need it, BUILD_USER's steps never get it
            # (as the build user: Podman gives the box user's tmpfs to that uid, with its U option)
            "user": "0:0" if self.root_steps else BUILD_USER,
            "network_mode": "none",
            "cap_drop": ["ALL"],
            "cap_add": self.caps,
            "security_opt": ["no-new-privileges"],
            "mem_limit": self.limits.memory,
            "memswap_limit": self.limits.memory,  # no swap beyond the memory limit
            "pids_limit": self.limits.pids,
            "nano_cpus": int(self.limits.cpus * 1e9),  # 0: no CPU quota (see BuildLimits)
            "volumes": {m.host: {"bind": m.target, "mode": "ro"} for m in self.mounts},
            "tmpfs": self.tmpfs,
            "labels": owner_labels(f"env-{self.purpose}", ROLE_BUILD, expires),
            "working_dir": "/",
            "environment": {"HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"},
        }

    def __enter__(self) -> Box:
        check(self.cancel)
        options = self.create_options()
        try:
            self.container = self.client.create_box(self.image, options)
        except SandboxError as exc:
            raise EnvError(f"the {self.purpose} container did not start: {exc}") from exc
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.container is not None:
            self.container.remove()
            self.container = None

    def close_in_background(self) -> threading.Thread:
        """Remove the container in a thread (its removal takes ~0.4 s on fuse-overlayfs: the image load
        that follows runs meanwhile); the caller joins it before it returns."""
        container, self.container = self.container, None

        def remove() -> None:
            if container is not None:
                container.remove()

        thread = threading.Thread(target=remove, name="codebox-env-remove", daemon=True)
        thread.start()
        return thread

    def root(self, script: str, what: str = "setup", stdout_to: Path | None = None,
             max_bytes: int = defaults.ENV_LAYER_MAX_BYTES) -> str:
        """Run ``script`` (sh) as root: only for steps that run no repository or package code."""
        if not self.root_steps:
            raise EnvError(f"the {self.purpose} container was made without root steps")
        return self._exec(script, "0:0", {}, what, stdout_to=stdout_to, max_bytes=max_bytes)

    def run(self, script: str, what: str, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,),
            stdout_to: Path | None = None, max_bytes: int = defaults.ENV_LAYER_MAX_BYTES) -> str:
        """Run ``script`` (sh) as BUILD_USER; StepFailed when it exits with a status not in ``ok``.

        ``stdout_to``: a host file (codebox's) that gets the step's standard output, e.g. a layer
        tar written to stdout (never a file in the container: on fuse-overlayfs writing it and
        reading it back costs seconds); the log is then its standard error. ``max_bytes``: what
        that file may hold (StreamCapExceeded past it, the box removed).
        """
        return self._exec(script, BUILD_USER, env or {}, what, ok, stdout_to, max_bytes)

    def _exec(self, script: str, user: str, env: dict[str, str], what: str, ok: tuple[int, ...] = (0,),
              stdout_to: Path | None = None, max_bytes: int = defaults.ENV_LAYER_MAX_BYTES) -> str:
        check(self.cancel)
        box = self.container
        if box is None:
            raise EnvError(f"the {self.purpose} container is gone (it was in the {what} step)")
        tail: collections.deque[bytes] = collections.deque()
        size = [0]
        pending = [b""]
        statuses: list[int | None] = []
        counted = _Counted(max_bytes, defaults.ENV_STEP_LOG_MAX_BYTES)

        def logged(chunk: bytes) -> None:
            if not counted.take_log(len(chunk)):
                raise _CapPassed
            tail.append(chunk)
            size[0] += len(chunk)
            while size[0] > TAIL_BYTES and len(tail) > 1:
                size[0] -= len(tail.popleft())
            # a line longer than the tail is not progress
            *lines, pending[0] = ((pending[0] + chunk)[-TAIL_BYTES:]).split(b"\n")
            for line in lines:
                text = line.decode("utf-8", "replace")
                if text.startswith(LOG_PREFIX):
                    self.log(text[len(LOG_PREFIX):])

        def run(out: IO[bytes] | None) -> None:
            def on_output(stream: int, data: bytes) -> None:
                if out is not None and stream == 1:
                    if not counted.take_output(len(data)):
                        raise _CapPassed
                    out.write(data)
                else:
                    logged(data)

            statuses.append(box.exec(["/bin/sh", "-c", script], user, {"HOME": "/tmp", **env}, on_output))

        def pump() -> None:
            try:
                if stdout_to is None:
                    run(None)
                    return
                with stdout_to.open("wb") as out:
                    run(out)
            except _CapPassed:  # counted.over says which cap: the box goes below
                pass

        try:
            wait_thread(pump, self.cancel, self.deadline.remaining(), self.close)
        except TimeoutError:
            raise EnvError(f"the environment build did not finish in {self.deadline.timeout_s:g} s "
                           f"(the build deadline; it was in the {what} step)") from None
        if counted.over:
            self.close()  # the step is still writing: the box goes, with whatever it runs
            raise StreamCapExceeded(f"the {what} step of the {self.purpose} build wrote more than {counted.over}; "
                                    "the build container was removed")
        status = statuses[0] if statuses else None
        output = b"".join(tail).decode("utf-8", "replace")
        if status not in ok:
            lines = output.splitlines()[-40:]
            raise StepFailed(what, -1 if status is None else int(status), "\n".join(lines))
        return output

    def read(self, path: str, limit: int) -> bytes:
        """The file at ``path`` in the box, into memory; EnvError when it is missing or over ``limit`` bytes."""
        return _first_member(self._archive(path), limit, path)

    def _archive(self, path: str) -> Iterator[bytes]:
        try:
            chunks = self.container.archive(path) if self.container is not None else None
        except SandboxError as exc:
            raise EnvError(str(exc)) from exc
        if chunks is None:
            raise EnvError(f"the {self.purpose} container did not write {path}")
        return chunks


class StreamCapExceeded(EnvError):
    """A box's step wrote more than its cap (a layer, a log): the box was removed."""


class _CapPassed(Exception):
    """Raised inside a step's output callback when a cap is passed: it stops reading the step."""


class _Counted:
    """The bytes a step sent so far, against its caps; ``over`` names the first cap passed."""

    def __init__(self, max_output: int, max_log: int) -> None:
        self.output = self.logged = 0
        self.max_output, self.max_log = max_output, max_log
        self.over = ""

    def take_output(self, size: int) -> bool:
        self.output += size
        if self.output > self.max_output:
            self.over = self.over or f"{self.max_output} bytes of output (its layer)"
        return not self.over

    def take_log(self, size: int) -> bool:
        self.logged += size
        if self.logged > self.max_log:
            self.over = self.over or f"{self.max_log} bytes of log"
        return not self.over


def _first_member(chunks: Iterator[bytes], limit: int, path: str) -> bytes:
    buffer = io.BytesIO()
    for chunk in chunks:
        buffer.write(chunk)
        if buffer.tell() > limit + 64 * 1024:
            raise EnvError(f"{path} in the build container is larger than {limit} bytes; refused")
    buffer.seek(0)
    with tarfile.open(fileobj=buffer, mode="r:") as archive:  # a plain tar: no decompression of the box's bytes
        member = archive.next()
        data = archive.extractfile(member) if member is not None and member.isfile() else None
        if data is None or member is None or member.size > limit:
            raise EnvError(f"{path} in the build container is not a regular file of at most {limit} bytes")
        return data.read()
