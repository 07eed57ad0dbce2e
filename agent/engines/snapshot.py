"""A task's starting tree packed into bytes on the driver and unpacked on a worker node.

A git source travels as a git bundle of ONE parentless commit whose tree is the workspace's
base (task.base_commit, or HEAD plus the uncommitted changes: workspace.py decides, the same
as for the local engine); history stays home, so a snapshot costs about one compressed
checkout. A plain folder travels as a tar archive, taken byte for byte. On the node the bytes
become a source that create_workspace takes as it takes a user's repository: a bare clone
for a bundle, a folder for a tar.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import shutil
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from agent.env.install.project import highest_tag
from agent.task.workspace import create_workspace, dated_as, git

SNAPSHOT_REF = "codebox-snapshot"

SnapshotKind = Literal["bundle", "tar"]


@dataclass(frozen=True)
class Snapshot:
    """The base of a task as bytes, and what the report must say about where it came from."""

    kind: SnapshotKind
    data: bytes
    digest: str
    """sha256 of ``data``: names the snapshot in logs and on the node."""
    source_commit: str | None
    """The source's commit the base was made from (None for a plain folder)."""
    dirty: bool
    """True when the base is source_commit plus the source's uncommitted changes."""


def make_snapshot(source: Path, base_commit: str | None = None) -> Snapshot:
    """Pack the tree a task on ``source`` starts from; nothing is written to ``source``.

    Raises WorkspaceError (not a directory, unknown base commit, git failed).
    """
    workspace = create_workspace(source, base_commit)
    kind: SnapshotKind
    try:
        if workspace.source_commit is None:
            data, kind = _tar(workspace.source), "tar"
        else:
            data, kind = _bundle(workspace.path, workspace.base_commit), "bundle"
    finally:
        workspace.remove()
    return Snapshot(kind=kind, data=data, digest=hashlib.sha256(data).hexdigest(),
                    source_commit=workspace.source_commit, dirty=workspace.dirty)


def _bundle(workspace: Path, base: str) -> bytes:
    tree = git("rev-parse", f"{base}^{{tree}}", cwd=workspace).stdout.decode().strip()
    commit = git("commit-tree", tree, "-m", "codebox snapshot", cwd=workspace,
                 env=dated_as(base, workspace)).stdout.decode().strip()
    git("update-ref", f"refs/heads/{SNAPSHOT_REF}", commit, cwd=workspace)
    refs = [SNAPSHOT_REF]
    # The project's version, where nothing states it, is its highest tag (agent.env.install.project): the
    # tag travels too, on the snapshot's commit, or a node would build the project as 0.0.0.
    version = highest_tag(workspace)
    if version is not None:
        git("update-ref", f"refs/tags/{version}", commit, cwd=workspace)
        refs.append(f"refs/tags/{version}")
    return git("bundle", "create", "--quiet", "-", *refs, cwd=workspace).stdout


def _tar(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as archive:
        archive.add(str(folder), arcname=".", recursive=True)  # symlinks stay symlinks
    return buffer.getvalue()


def unpack_snapshot(kind: SnapshotKind, data: bytes, into: Path) -> Path:
    """Turn snapshot bytes into a source folder under ``into`` (which must exist); return it."""
    if kind == "bundle":
        bundle = into / "snapshot.bundle"
        bundle.write_bytes(data)
        repo = into / "source.git"
        try:
            git("clone", "--quiet", "--bare", "--branch", SNAPSHOT_REF, "--", str(bundle), str(repo), cwd=into)
        finally:
            bundle.unlink(missing_ok=True)
        return repo
    folder = into / "source"
    folder.mkdir()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        # The driver made this archive from the user's folder: keep it as it was (links, modes),
        # but never let a member land outside ``folder``.
        archive.extractall(folder, filter="tar")
    return folder


@contextlib.contextmanager
def shared_source(kind: SnapshotKind, data: bytes, digest: str, scope: str, root: Path) -> Iterator[Path]:
    """The snapshot unpacked once under ``root`` for every task of ``scope`` (a batch run) on
    this machine; yields the source while a shared lock keeps it from being swept.

    Tasks share it at once; the first unpacks it (the others wait for that, not for each
    other). A workspace cloned from it reads its objects, so a workspace that must outlive
    the batch (keep_workspace) takes a private copy (unpack_snapshot) instead.
    """
    root.mkdir(parents=True, exist_ok=True)
    folder = root / f"{_safe(scope)}.{digest[:24]}"
    with _locked(root / f"{folder.name}.lock", fcntl.LOCK_SH):
        if not (folder / "ready").exists():
            with _locked(root / f"{folder.name}.unpack", fcntl.LOCK_EX):
                if not (folder / "ready").exists():
                    shutil.rmtree(folder, ignore_errors=True)
                    folder.mkdir()
                    unpack_snapshot(kind, data, folder)
                    (folder / "ready").touch()
        yield folder / ("source.git" if kind == "bundle" else "source")


@contextlib.contextmanager
def _locked(path: Path, mode: int) -> Iterator[IO[str]]:
    """The lock file at ``path``, held in ``mode``; taken again when a sweep unlinked it meanwhile."""
    while True:
        lock = path.open("a")
        fcntl.flock(lock, mode)
        try:
            same = os.fstat(lock.fileno()).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        lock.close()
    try:
        yield lock
    finally:
        lock.close()


def sweep_sources(root: Path, keep_scope: str) -> int:
    """Remove the shared sources of other scopes that no task holds (their batch ended or died)."""
    removed = 0
    if not root.is_dir():
        return 0
    for lock_path in root.glob("*.lock"):
        folder = lock_path.with_suffix("")
        if folder.name.startswith(_safe(keep_scope) + "."):
            continue
        with lock_path.open("a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # in use by a live batch
            if folder.exists():
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
            # No task holds either lock now; one that opened the old file sees it unlinked and retries.
            (root / f"{folder.name}.unpack").unlink(missing_ok=True)
            lock_path.unlink(missing_ok=True)
    return removed


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
