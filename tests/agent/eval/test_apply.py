"""SWE-bench's apply chain (which command took the patch is recorded), and the reset of the test_patch's files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agent.eval.apply import GNU_PATCH, apply_patch, reset_to_base
from agent.eval.changed import patch_paths
from agent.eval.diffs import touched_paths
from agent.task.workspace import create_workspace
from tests.agent.eval.repos import CALC, calc_repo, diff_of, make_repo
from tests.repos import sh

GOLD_EDIT = {"calc.py": CALC.replace("a - b", "a + b")}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    calc_repo(tmp_path / "repo")
    return tmp_path / "repo"


def workspace_of(repo: Path) -> Path:
    return create_workspace(repo, "HEAD").path


def test_a_clean_patch_applies_with_the_first_command(repo: Path) -> None:
    ws = workspace_of(repo)
    record = apply_patch(ws, diff_of(repo, GOLD_EDIT))
    assert record.command == "git apply --verbose" and record.tried == []
    assert "a + b" in (ws / "calc.py").read_text()


@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed on this machine")
def test_a_context_line_altered_in_the_patch_applies_with_fuzz(repo: Path) -> None:
    """The gold patch with one context line altered: git refuses it three ways, GNU patch's fuzz takes it."""
    gold = diff_of(repo, GOLD_EDIT).replace(" def add(a, b):", " def add(a,  b):")
    ws = workspace_of(repo)
    record = apply_patch(ws, gold)
    assert record.command == GNU_PATCH and [t.split(":")[0] for t in record.tried] == [
        "git apply --verbose", "git apply --verbose --3way", "git apply --verbose --reject"]
    assert "a + b" in (ws / "calc.py").read_text()
    assert sh("git", "status", "--porcelain", cwd=ws) == "M calc.py"  # no .orig, no .rej left behind


def test_a_tree_that_moved_near_the_hunk_applies_by_three_way_merge(tmp_path: Path) -> None:
    lines = [f"line{n}\n" for n in range(1, 8)]
    make_repo(tmp_path / "r", {"f.txt": "".join(lines)})
    patch = diff_of(tmp_path / "r", {"f.txt": "".join([*lines[:3], "LINE4\n", *lines[4:]])})
    ws = workspace_of(tmp_path / "r")
    (ws / "f.txt").write_text("".join(["LINE1\n", *lines[1:]]))  # the context's first line differs
    sh("git", "commit", "-qam", "moved", cwd=ws)
    record = apply_patch(ws, patch)
    assert record.command == "git apply --verbose --3way"
    assert (ws / "f.txt").read_text().startswith("LINE1\nline2\nline3\nLINE4\n")


def test_nothing_applies_and_the_tree_is_left_at_the_base(repo: Path) -> None:
    ws = workspace_of(repo)
    broken = diff_of(repo, GOLD_EDIT).replace("-    return a - b", "-    return a ** b")
    broken = broken.replace(" def add(a, b):", " def nothing_like_it():")
    record = apply_patch(ws, broken)
    assert record.command is None and not record.applied
    assert [t.split(":")[0] for t in record.tried][:3] == ["git apply --verbose", "git apply --verbose --3way",
                                                         "git apply --verbose --reject"]
    assert sh("git", "status", "--porcelain", "--ignored", cwd=ws) == ""
    assert apply_patch(ws, "this is not a diff").command is None


def test_a_patch_already_in_counts_as_applied(repo: Path) -> None:
    gold = diff_of(repo, GOLD_EDIT)  # with its blob ids a three-way merge takes it; without, only the check does
    gold = "\n".join(line for line in gold.splitlines() if not line.startswith("index ")) + "\n"
    ws = workspace_of(repo)
    (ws / "calc.py").write_text(GOLD_EDIT["calc.py"])
    sh("git", "commit", "-qam", "already", cwd=ws)
    assert (apply_patch(ws, gold).command or "").startswith("git apply --check --reverse")


@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed on this machine")
def test_gnu_patch_is_not_given_paths_through_a_symlink(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.py").write_text("a\n")
    os.symlink(outside, repo / "link")
    sh("git", "add", "link", cwd=repo)
    sh("git", "commit", "-qm", "link", cwd=repo)
    patch = "--- a/link/x.py\n+++ b/link/x.py\n@@ -1 +1 @@\n-b\n+c\n"
    record = apply_patch(workspace_of(repo), patch)
    assert record.command is None and not any(t.startswith("patch") for t in record.tried)
    assert (outside / "x.py").read_text() == "a\n"


def test_reset_puts_every_touched_path_back_to_the_base(repo: Path) -> None:
    test_patch = diff_of(repo, {"tests/test_mul.py": "def test_mul():\n    assert True\n",
                                "tests/test_new.py": "def test_new():\n    pass\n"})
    ws = workspace_of(repo)
    (ws / "tests" / "test_mul.py").write_text("def test_mul():\n    pass  # the model's\n")
    (ws / "tests" / "test_new.py").write_text("def test_new():\n    pass  # pre-empted by the model\n")
    (ws / "calc.py").write_text("kept\n")
    paths = reset_to_base(ws, "HEAD", patch_paths(ws, test_patch))
    assert sorted(paths) == ["tests/test_mul.py", "tests/test_new.py"]
    assert (ws / "tests" / "test_mul.py").read_text() == (repo / "tests" / "test_mul.py").read_text()
    assert not (ws / "tests" / "test_new.py").exists() and (ws / "calc.py").read_text() == "kept\n"
    assert apply_patch(ws, test_patch).command == "git apply --verbose"
    assert reset_to_base(ws, "HEAD", ["../../etc/passwd", "link/../x"]) == []


def test_touched_paths_reads_git_spelling() -> None:
    diff = ('diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n'
            'diff --git "a/caf\\303\\251 z.py" "b/caf\\303\\251 z.py"\nnew file mode 100644\n--- /dev/null\n'
            '+++ "b/caf\\303\\251 z.py"\n@@ -0,0 +1 @@\n+x\n'
            'diff --git a/old.py b/new.py\nsimilarity index 100%\nrename from old.py\nrename to new.py\n'
            'diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n'
            '--- a/tab.py\t2024-01-01\n+++ b/tab.py\t2024-01-01\n')
    assert touched_paths(diff) == ["x.py", "café z.py", "old.py", "new.py", "img.png", "tab.py"]
    # a traditional diff's date after a space: both readings count for the check before GNU patch runs
    date = " 2020-01-01 00:00:00.000000000 +0000"
    dated = f"--- a/t/conftest.py{date}\n+++ b/t/conftest.py{date}\n"
    assert touched_paths(dated) == ["t/conftest.py 2020-01-01 00:00:00.000000000 +0000", "t/conftest.py"]
