"""How the dependencies box is made for a lock (``box_plan``), and its early start.

A cold build's host steps (uv's resolve, the downloads) take a few tenths of a second, and so
does starting a container. When a build of the dependencies image is sure before the lock is
known (``may_reuse``: no recorded image could be this lock's), ``EarlyBox`` starts the box in a
thread while uv resolves, made for the usual lock: wheels only, no Debian packages, the venv
in memory. ``deps.ensure_deps`` takes it when the lock's plan is that one; otherwise (an
sdist, a lock too big for memory) it is removed and a box of the lock's own is made. A lock
whose dependencies image is reused never gets an early box.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from agent.env.cancel import Cancel
from agent.env.install import images
from agent.env.install.box import BUILD_USER, DPKG_CAPS, SETUP_CAPS, Box, BuildLimits, Deadline, Log, Mount
from agent.env.install.layer import VENV
from agent.env.resolve.resolve import Lock, uv_binary

if TYPE_CHECKING:
    from agent.env.read.reqlines import Requirement
    from agent.sandboxes.build import Builder

BUILD = "/tmp/codebox-build"
PREFIX = "codebox-deps-"
# The venv is written in memory (a tmpfs; ~2x faster than fuse-overlayfs) when the lock's files, unpacked
# (~UNPACKED times their size), take at most this share of the box's memory limit.
UNPACKED = 3
TMPFS_SHARE = 0.4


class BoxPlan(NamedTuple):
    """How the dependencies box is made for one lock."""

    caps: list[str]  # what root holds in it
    root_step: bool  # root's setup runs (dpkg, or the venv folder on the image's file system)
    limits: BuildLimits
    tmpfs: bool  # the venv in memory


def box_plan(lock: Lock, debs: bool, tmpfs: bool, limits: BuildLimits) -> BoxPlan:
    """The box for ``lock``: root only where it has work, the CPU quota only where package code runs.

    No repository file is ever in this box. With only wheels and no Debian packages, no package
    code runs either: uv unpacks the wheels and the base image's interpreter compiles their
    bytecode without its site module (no ``.pth`` of theirs runs). That box keeps the memory,
    pids and time limits and gets the CPU the host's own install has; an sdist's build or dpkg's
    maintainer scripts keep the quota. On the tmpfs, which the build user owns, root has nothing
    to do: no root step, no capability.
    """
    runs_package_code = debs or bool(lock.sdists())
    root_step = debs or not tmpfs
    caps = DPKG_CAPS if debs else SETUP_CAPS if root_step else []
    return BoxPlan(caps=caps, root_step=root_step, tmpfs=tmpfs,
                   limits=limits if runs_package_code else limits.model_copy(update={"cpus": 0.0}))


def fits_in_memory(wheels: Path, limits: BuildLimits) -> bool:
    """Whether the lock's files, unpacked, fit well in the memory limit (see TMPFS_SHARE)."""
    from agent.sandboxes.config import size_bytes

    unpacked = UNPACKED * sum(path.stat().st_size for path in wheels.iterdir())
    return unpacked <= TMPFS_SHARE * size_bytes(limits.memory, "memory limit")


def tmpfs(limits: BuildLimits) -> dict[str, str]:
    """The venv's tmpfs: the build user's, as large as the memory limit (which counts it)."""
    from agent.sandboxes.config import size_bytes

    uid, _, gid = BUILD_USER.partition(":")
    return {VENV: f"rw,exec,nosuid,uid={uid},gid={gid},mode=755,size={size_bytes(limits.memory, 'memory limit')}"}


def mounts(folder: Path, debs: bool) -> list[Mount]:
    """The build folder's parts (read-only) and uv."""
    found = [Mount(host=str(folder / "stage"), target=f"{BUILD}/stage"),
             Mount(host=str(folder / "wheels"), target=f"{BUILD}/wheels"),
             Mount(host=uv_binary(), target=f"{BUILD}/uv")]
    return found + ([Mount(host=str(folder / "debs"), target=f"{BUILD}/debs")] if debs else [])


def may_reuse(base_id: str, requirements: list[Requirement], project: str | None) -> bool:
    """Whether a recorded dependencies image could be the one ``requirements`` resolve to: one on this
    base holding every requirement that has no marker (each is in any lock of them, the project's
    own name aside). When none could, a build is sure."""
    from packaging.requirements import InvalidRequirement
    from packaging.requirements import Requirement as Parsed
    from packaging.utils import canonicalize_name

    own = canonicalize_name(project) if project else None
    names = set()
    for requirement in requirements:
        try:
            parsed = Parsed(requirement.text)
        except InvalidRequirement:
            continue
        if parsed.marker is None and canonicalize_name(parsed.name) != own:
            names.add(canonicalize_name(parsed.name))
    return any(entry.kind == "deps" and entry.base_id == base_id
               and names <= {canonicalize_name(p.partition("==")[0]) for p in entry.packages}
               for entry in images.entries())


class EarlyBox:
    """The dependencies box of the usual lock, started in a thread, with the build folder it mounts."""

    def __init__(self, client: Builder, image: str, limits: BuildLimits, deadline: Deadline,
                 cancel: Cancel, log: Log) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix=PREFIX)
        self.folder = Path(self._folder.name)
        for part in ("stage", "wheels"):  # mounted now, filled once the lock is known
            (self.folder / part).mkdir()
        self.plan = box_plan(Lock(pins=[]), debs=False, tmpfs=True, limits=limits)
        self.box = Box(client, image, "deps", mounts(self.folder, debs=False), self.plan.limits, deadline, cancel,
                       caps=self.plan.caps, log=log, tmpfs=tmpfs(limits), root_steps=False)
        self._error: BaseException | None = None
        self._removing: threading.Thread | None = None
        self._thread = threading.Thread(target=self._start, name="codebox-env-early-box", daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            self.box.__enter__()
        except BaseException as exc:  # given to the build by take()
            self._error = exc

    def take(self) -> Box:
        """The started box (its start's error, raised here)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self.box

    def discard(self) -> None:
        """Not the box this lock needs: removed in the background."""
        self._thread.join()
        self._removing = self.box.close_in_background()

    def close(self) -> None:
        """The box removed (if nothing took it) and the build folder with it."""
        self._thread.join()
        self.box.close()
        if self._removing is not None:
            self._removing.join()
        self._folder.cleanup()
