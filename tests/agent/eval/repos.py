"""Fixture repositories for the eval tests, built in the test: a small project, its fix, its tests."""

from __future__ import annotations

from pathlib import Path

from tests.repos import sh

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST_MUL = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
TEST_ADD = ("import pytest\nfrom calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
            "@pytest.mark.parametrize('x', [1, 2])\ndef test_zero(x):\n    assert add(x, 0) == x\n")


def make_repo(path: Path, files: dict[str, str]) -> str:
    """A git repository at ``path`` with ``files`` committed; returns the commit."""
    path.mkdir(parents=True, exist_ok=True)
    sh("git", "init", "-q", cwd=path)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    sh("git", "add", "-A", cwd=path)
    sh("git", "commit", "-qm", "base", cwd=path)
    return sh("git", "rev-parse", "HEAD", cwd=path)


def diff_of(repo: Path, edit: dict[str, str | None]) -> str:
    """The diff an edit makes to the repo's HEAD (None deletes a file); the repo is left as it was."""
    for name, text in edit.items():
        if text is None:
            (repo / name).unlink()
            continue
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    sh("git", "add", "-A", cwd=repo)
    patch = sh("git", "diff", "--cached", cwd=repo) + "\n"
    sh("git", "reset", "-q", "--hard", cwd=repo)
    sh("git", "clean", "-qfd", cwd=repo)
    return patch


def calc_repo(path: Path) -> str:
    return make_repo(path, {"calc.py": CALC, "tests/__init__.py": "", "tests/test_mul.py": TEST_MUL})
