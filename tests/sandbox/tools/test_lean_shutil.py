"""sandbox.tools.lean_shutil: rmtree removes a tree and never what a link in it points to;
mkdtemp makes a private directory where tempfile would."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sandbox.tools.lean_shutil import mkdtemp, rmtree


def test_rmtree_removes_everything_and_no_link_target(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "file").write_text("kept")
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "f.txt").write_text("x")
    (tree / ".hidden").write_text("x")
    os.symlink(outside / "keep", tree / "a" / "link_to_dir")
    os.symlink(outside / "keep" / "file", tree / "link_to_file")
    os.symlink("nowhere", tree / "dangling")
    os.mkfifo(tree / "fifo")
    rmtree(str(tree))
    assert not os.path.lexists(tree)
    assert (outside / "keep" / "file").read_text() == "kept"


def test_rmtree_of_a_link_removes_the_link_only(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_text("kept")
    os.symlink(tmp_path / "real", tmp_path / "link")
    rmtree(str(tmp_path / "link"))
    assert not os.path.lexists(tmp_path / "link") and (tmp_path / "real" / "f").read_text() == "kept"


def test_rmtree_of_a_deep_tree_needs_no_recursion(tmp_path: Path) -> None:
    top = tmp_path / "deep"
    fd = os.open(tmp_path, os.O_RDONLY)
    os.mkdir("deep", dir_fd=fd)
    here = os.open("deep", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    for _ in range(1500):  # deeper than Python's recursion limit
        os.mkdir("d", dir_fd=here)
        nxt = os.open("d", os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = nxt
    os.close(here)
    rmtree(str(top))
    assert not os.path.lexists(top)


@pytest.mark.skipif(os.getuid() == 0, reason="root reads any directory")
def test_rmtree_leaves_what_it_cannot_remove_and_raises_nothing(tmp_path: Path) -> None:
    (tmp_path / "locked" / "inner").mkdir(parents=True)
    (tmp_path / "locked" / "inner" / "f").write_text("x")
    (tmp_path / "locked").chmod(0o500)
    try:
        rmtree(str(tmp_path / "locked"))
        assert (tmp_path / "locked" / "inner" / "f").exists()
    finally:
        (tmp_path / "locked").chmod(0o700)


def test_mkdtemp_makes_a_new_private_directory_in_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    first, second = mkdtemp("codebox-x-"), mkdtemp("codebox-x-")
    assert first != second
    for made in (first, second):
        assert Path(made).parent == tmp_path and Path(made).name.startswith("codebox-x-")
        assert stat.S_IMODE(os.stat(made).st_mode) == 0o700


def test_mkdtemp_goes_on_to_the_next_folder_when_tmpdir_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    monkeypatch.setenv("TEMP", str(tmp_path))
    assert Path(mkdtemp("codebox-y-")).parent == tmp_path
