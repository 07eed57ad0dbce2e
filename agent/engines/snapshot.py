"""A task's starting tree packed into bytes on the driver and unpacked on a worker node.

A git source travels as a git bundle of ONE parentless commit whose tree is the workspace's
base (task.base_commit, or HEAD plus the uncommitted changes: workspace.py decides, the same
as for the local engine); history stays home, so a snapshot costs about one compressed
checkout. A plain folder travels as a tar archive, taken byte for byte. On the node the bytes
become a source that create_workspace takes as it takes a user's repository: a bare clone
for a bundle, a folder for a tar.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent.workspace import create_workspace, git

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
    commit = git("commit-tree", tree, "-m", "codebox snapshot", cwd=workspace).stdout.decode().strip()
    git("update-ref", f"refs/heads/{SNAPSHOT_REF}", commit, cwd=workspace)
    return git("bundle", "create", "--quiet", "-", SNAPSHOT_REF, cwd=workspace).stdout


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


def unpacked(kind: SnapshotKind, data: bytes, root: Path | None = None) -> _Unpacked:
    """A context manager: the snapshot unpacked into a fresh temporary folder, removed at exit."""
    return _Unpacked(kind, data, root)


class _Unpacked:
    def __init__(self, kind: SnapshotKind, data: bytes, root: Path | None) -> None:
        self._kind, self._data, self._root = kind, data, root
        self._dir: Path | None = None

    def __enter__(self) -> Path:
        if self._root is not None:
            self._root.mkdir(parents=True, exist_ok=True)
        self._dir = Path(tempfile.mkdtemp(prefix="codebox-src-", dir=self._root))
        try:
            return unpack_snapshot(self._kind, self._data, self._dir)
        except BaseException:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise

    def __exit__(self, *exc: object) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
