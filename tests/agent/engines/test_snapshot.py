"""Snapshots: the base a task starts from, packed on the driver and unpacked into a source on a node."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent.engines.snapshot import make_snapshot, shared_source, sweep_sources, unpack_snapshot
from agent.env.install.project import highest_tag
from agent.env.resolve.asof import choose, commit_date
from agent.task.workspace import WorkspaceError, create_workspace
from tests.repos import fingerprint, sh


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """Two commits, an uncommitted edit and an untracked file."""
    repo = tmp_path / "repo"
    repo.mkdir()
    sh("git", "init", "-q", cwd=repo)
    (repo / "a.py").write_text("a = 1\n")
    sh("git", "add", ".", cwd=repo)
    sh("git", "commit", "-qm", "one", cwd=repo)
    (repo / "b.py").write_text("b = 1\n")
    sh("git", "add", ".", cwd=repo)
    sh("git", "commit", "-qm", "two", cwd=repo)
    (repo / "a.py").write_text("a = 2  # wip\n")
    (repo / "notes.txt").write_text("mine\n")
    return repo


def tree(root: Path) -> dict[str, str]:
    return {name: (root / name).read_text() for name in sorted(os.listdir(root)) if name != ".git"}


def test_the_default_base_travels_with_the_uncommitted_changes_and_no_history(tmp_path: Path, user_repo: Path) -> None:
    before = fingerprint(user_repo)
    snap = make_snapshot(user_repo)
    assert snap.kind == "bundle" and snap.dirty and snap.source_commit == sh("git", "rev-parse", "HEAD", cwd=user_repo)
    assert fingerprint(user_repo) == before  # nothing written to the user's repo or .git
    (tmp_path / "node").mkdir()
    source = unpack_snapshot(snap.kind, snap.data, tmp_path / "node")
    assert sh("git", "rev-list", "--count", "HEAD", cwd=source) == "1"  # one parentless commit
    workspace = create_workspace(source)
    assert tree(workspace.path) == {"a.py": "a = 2  # wip\n", "b.py": "b = 1\n", "notes.txt": "mine\n"}


def test_a_base_commit_travels_as_that_commit_s_tree(tmp_path: Path, user_repo: Path) -> None:
    first = sh("git", "rev-list", "--max-parents=0", "HEAD", cwd=user_repo)
    snap = make_snapshot(user_repo, first)
    assert snap.source_commit == first and not snap.dirty
    root = tmp_path / "sources"
    with shared_source(snap.kind, snap.data, snap.digest, "batch1", root) as source:
        workspace = create_workspace(source)
        assert tree(workspace.path) == {"a.py": "a = 1\n"}
        assert sh("git", "rev-parse", "HEAD^{tree}", cwd=workspace.path) == sh(
            "git", "rev-parse", f"{first}^{{tree}}", cwd=user_repo)  # the patch applies to the real base
        with shared_source(snap.kind, snap.data, snap.digest, "batch1", root) as again:
            assert again == source  # unpacked once per batch on a node
        assert sweep_sources(root, keep_scope="batch2") == 0  # in use: kept
    assert sweep_sources(root, keep_scope="batch1") == 0 and source.exists()  # its own batch: kept
    assert sweep_sources(root, keep_scope="batch2") == 1 and not source.exists()  # an ended batch's: gone
    with pytest.raises(WorkspaceError, match="not a commit"):
        make_snapshot(user_repo, "0" * 40)


def test_a_node_workspace_has_the_as_of_date_and_version_tag_of_the_users_base(tmp_path: Path, user_repo: Path) -> None:
    # The snapshot's parentless commit and a dirty tree's base commit are made now; a workspace's as-of
    # date was then now on a Ray node (and for uncommitted changes), where the local engine on a clean
    # tree used HEAD's: every structlog, markupsafe... task of a Ray batch got a new environment
    # resolved with newer packages (pytest's PytestRemovedIn10Warning in structlog's run).
    when = {"GIT_AUTHOR_DATE": "2020-01-02T03:04:05Z", "GIT_COMMITTER_DATE": "2020-01-02T03:04:05Z"}
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "three"], cwd=user_repo,
                   check=True, env={**os.environ, **when})
    (user_repo / "a.py").write_text("a = 3  # wip\n")
    sh("git", "tag", "v1.2", "HEAD~1", cwd=user_repo)
    sh("git", "tag", "v1.3rc1", cwd=user_repo)  # a pre-release is no version for it
    first = sh("git", "rev-list", "--max-parents=0", "HEAD", cwd=user_repo)
    local = create_workspace(user_repo)
    assert local.dirty and commit_date(local.path) == commit_date(user_repo) == "2020-01-02T03:04:05Z"
    (tmp_path / "node").mkdir()
    for base in (None, first):
        snap = make_snapshot(user_repo, base)
        node = tmp_path / "node" / (base or "head")
        node.mkdir()
        workspace = create_workspace(unpack_snapshot(snap.kind, snap.data, node))
        assert choose(None, workspace.path) == choose(None, user_repo, base_commit=base)
        # the version the project builds as, where nothing states it: the base's own release, as locally
        # (1.2 at HEAD; none at the first commit, which no version tag reaches)
        here = create_workspace(user_repo, base)
        assert highest_tag(workspace.path) == highest_tag(here.path) == ("1.2" if base is None else None)
        here.remove()
        assert make_snapshot(user_repo, base).digest == snap.digest  # and the same bytes every time


def test_a_plain_folder_travels_byte_for_byte_as_a_tar(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "x.txt").write_bytes(b"crlf\r\nline\r\n")
    (folder / "run.sh").write_text("#!/bin/sh\n")
    (folder / "run.sh").chmod(0o755)
    (folder / "link").symlink_to("sub/x.txt")
    snap = make_snapshot(folder)
    assert snap.kind == "tar" and snap.source_commit is None and not snap.dirty
    (tmp_path / "node").mkdir()
    source = unpack_snapshot(snap.kind, snap.data, tmp_path / "node")
    assert (source / "sub" / "x.txt").read_bytes() == b"crlf\r\nline\r\n"
    assert os.access(source / "run.sh", os.X_OK) and os.readlink(source / "link") == "sub/x.txt"
    assert create_workspace(source).source_commit is None  # a plain source, as on the driver
