"""What codebox asks of an ecosystem: does a repository belong to it, how its tests run, what the model may
add to its test command, and which tests failed. Each language is one module that answers (registry.py).

Nothing here runs repository code: detection reads a few files, capped, and never follows a link out.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import NamedTuple, Protocol

CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


class Detection(NamedTuple):
    """A repository's test command, found by its language, and what showed it."""

    language: str
    command: list[str]
    """The test command, run from the repository's root in the sandbox."""
    evidence: str
    """The file (and section) that showed it, as read from the repository: escape it before showing it."""
    missing: str | None = None
    """Why the environment cannot run the command, and what to do (None: it can), said instead of the command."""


class TestArgsError(ValueError):
    """The model's arguments do not only choose tests; the message says what is allowed."""

    __test__ = False  # not a pytest test class


class Language(Protocol):
    """One ecosystem's answers. ``name`` is what reports and the registry call it."""

    name: str

    def detect(self, repo: Path, lock: str | None) -> Detection | None:
        """The test command of ``repo`` when it shows this language's tests, else None. ``lock``: the
        environment's lock, when one was built (says whether the test runner is installed)."""
        ...

    def runs(self, test_cmd: list[str]) -> bool:
        """Whether ``test_cmd`` is this language's test runner (its argument rules then apply)."""
        ...

    def check_test_args(self, test_cmd: list[str], args: list[str], repo: Path | None) -> None:
        """Raise TestArgsError unless every argument only chooses tests."""
        ...

    def failing_tests(self, output: str) -> list[str]:
        """The failing tests a run's output names, each once, in order (at most MAX_NAMES)."""
        ...


MAX_NAMES = 50


def check_test_path(arg: str, repo: Path | None = None) -> None:
    """A test path or id (path::name[param], path:line) that stays inside the repository; with ``repo``, a path
    that leads out of it through a symlink is refused too (checked against the tree on the host)."""
    if arg.startswith("-"):
        raise TestArgsError("options are not accepted for this test command")
    if arg.startswith("@"):
        raise TestArgsError("argument files (@file) are not accepted")
    path = arg.split("::", 1)[0]
    if not path:
        raise TestArgsError("empty path")
    if path.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", path) or "\\" in path:
        raise TestArgsError("absolute paths are not accepted; paths are relative to the repository root")
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../"):
        raise TestArgsError("the path leaves the repository")
    if repo is not None:
        root = repo.resolve()
        real = (root / normal).resolve()
        if real != root and root not in real.parents:
            raise TestArgsError("the path leads out of the repository through a symlink")


def refused(arg: str, why: str, allowed: str) -> TestArgsError:
    """The one-line refusal the model reads: which argument, why, and what it may pass instead."""
    return TestArgsError(f"run_test refused the argument {arg!r}: {why}. "
                         f"args may only choose which tests run; allowed: {allowed}.")


def unique_names(names: list[str]) -> list[str]:
    """Each name once, in order, at most MAX_NAMES."""
    return list(dict.fromkeys(names))[:MAX_NAMES]
