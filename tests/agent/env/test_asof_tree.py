"""The as-of date (flags, created_at, commit dates read without git's configuration) and the project tree key."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.env.install.tree import read_tree
from agent.env.resolve import asof
from tests.agent.env.projects import git_tagged, write


@pytest.mark.parametrize("text, expected", [
    ("2021-06-01", "2021-06-02T00:00:00Z"),  # the day given, whole
    ("2021-06-01T12:30:00Z", "2021-06-01T12:30:00Z"),
    ("2021-06-01T14:30:00+02:00", "2021-06-01T12:30:00Z"),
    ("2021-06-01 12:30:00", "2021-06-01T12:30:00Z"),  # SWE-bench's created_at has no zone: UTC
    ("now", "now"), ("NOW", "now"),
])
def test_dates_are_normalized_to_utc(text: str, expected: str) -> None:
    assert asof.normalize(text) == expected


def test_a_bad_date_is_one_usage_error() -> None:
    with pytest.raises(EnvError, match="expected a date") as failed:
        asof.normalize("yesterday")
    assert failed.value.usage


def test_now_is_keyed_by_the_day_and_sets_no_limit() -> None:
    assert asof.exclude_newer("now") is None and asof.cache_part("now").startswith("now:20")
    assert asof.exclude_newer("2021-06-01T00:00:00Z") == "2021-06-01T00:00:00Z"


def test_the_default_is_created_at_then_the_base_commit_then_head(tmp_path: Path) -> None:
    repo = git_tagged(write(tmp_path / "repo", {"a.py": ""}), "v1")  # committed 2024-03-01T12:00:00Z
    assert asof.commit_date(repo) == "2024-03-01T12:00:00Z"
    assert asof.choose(None, repo) == "2024-03-01T12:00:00Z"
    assert asof.choose(None, repo, created_at="2023-05-05T10:00:00Z") == "2023-05-05T10:00:00Z"
    assert asof.choose("now", repo, created_at="2023-05-05T10:00:00Z") == "now"
    assert asof.choose(None, repo, base_commit="v1") == "2024-03-01T12:00:00Z"
    assert asof.choose(None, tmp_path) == "now"  # not a git repository
    assert asof.commit_date(repo, "no-such-commit") is None


def test_the_later_of_created_at_and_the_base_commit_is_taken(tmp_path: Path) -> None:
    """pylint-7114's shape: the issue opened (created_at 2022-07-03) four weeks before its base commit (2022-07-31),
    whose files pin releases of the weeks between; as of created_at those pins have no version."""
    repo = git_tagged(write(tmp_path / "repo", {"a.py": ""}), "v1")  # committed 2024-03-01T12:00:00Z
    assert asof.choose(None, repo, created_at="2024-02-02T10:00:00Z", base_commit="v1") == "2024-03-01T12:00:00Z"
    assert asof.choose(None, repo, created_at="2024-03-09T10:00:00Z", base_commit="v1") == "2024-03-09T10:00:00Z"
    assert asof.choose(None, repo, created_at="2024-02-02", base_commit="no-such-commit") == "2024-02-03T00:00:00Z"
    assert asof.choose("2020-01-01", repo, created_at="2024-02-02", base_commit="v1") == "2020-01-02T00:00:00Z"


def test_a_commit_date_runs_nothing_the_repository_configures(tmp_path: Path) -> None:
    repo = git_tagged(write(tmp_path / "repo", {"a.py": ""}), "v1")
    marker = tmp_path / "ran"
    hook = tmp_path / "monitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    subprocess.run(["git", "config", "core.fsmonitor", str(hook)], cwd=repo, check=True)
    assert asof.commit_date(repo) is not None
    from agent.env.install.tree import read_tree as tree_of

    tree_of(repo)
    assert not marker.exists()


def test_the_tree_key_changes_with_any_file_and_nothing_else(tmp_path: Path) -> None:
    repo = git_tagged(write(tmp_path / "repo", {"a.py": "A = 1\n", ".gitignore": "build/\n"}), "v1")
    first = read_tree(repo)
    assert first.git and first.files == [".gitignore", "a.py"]
    write(repo, {"build/junk.o": "x"})  # ignored: not part of the tree
    assert read_tree(repo).key == first.key
    write(repo, {"a.py": "A = 2\n"})  # an uncommitted edit
    edited = read_tree(repo)
    assert edited.key != first.key
    write(repo, {"a.py": "A = 1\n", "new.py": ""})  # an untracked file
    assert read_tree(repo).key not in (first.key, edited.key)
    (repo / "new.py").unlink()
    assert read_tree(repo).key == first.key
    (repo / "a.py").chmod(0o755)  # the mode is part of it
    assert read_tree(repo).key != first.key


def test_a_plain_folder_is_walked_without_dot_git(tmp_path: Path) -> None:
    folder = write(tmp_path / "plain", {"x.py": "", "sub/y.py": "", ".hg/store": "z"})
    os.symlink("x.py", folder / "link.py")
    tree = read_tree(folder)
    assert not tree.git and tree.files == ["link.py", "sub/y.py", "x.py"]


def test_a_huge_sparse_file_is_keyed_by_its_size_not_read(tmp_path: Path) -> None:
    folder = write(tmp_path / "repo", {"small.c": "int x;\n"})
    with (folder / "huge.c").open("wb") as f:
        f.truncate(64 * 2**30)  # 64 GiB, sparse: nothing is read from it
    first = read_tree(folder)
    assert "huge.c" in first.files
    with (folder / "huge.c").open("r+b") as f:
        f.truncate(64 * 2**30 + 1)
    assert read_tree(folder).key != first.key
