"""What codebox asks of an ecosystem: does a repository belong to it, how its tests run, what the model may
add to its test command, and which tests failed. Each language is one module that answers (registry.py).

Nothing here runs repository code: detection reads a few files, capped, and never follows a link out.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:
    from agent.env.cancel import Cancel
    from agent.env.info import EnvInfo

Log = Callable[[str], None]

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

    def detect(self, repo: Path, env: EnvInfo | None) -> Detection | None:
        """The test command of ``repo`` when it shows this language's tests, else None. ``env``: the environment
        the command runs in, when one was chosen (its lock says whether Python's test runner is installed; its
        toolchain, which form of cargo test's options a Rust repository gets)."""
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


# What a language may answer beyond Language's questions (the registry asks whether it does).


@runtime_checkable
class ArrangesArgs(Protocol):
    """A runner whose own options and its tests' options go on either side of a ``--`` (cargo test)."""

    def test_argv(self, test_cmd: list[str], args: list[str]) -> list[str]:
        """The argv that runs ``test_cmd`` with the model's (checked) ``args``."""
        ...


@runtime_checkable
class ReadsOutcomes(Protocol):
    """A runner whose machine output says each test's outcome (libtest's JSON, go test -json, TAP)."""

    def outcomes(self, output: str) -> dict[str, str]:
        """Each test's outcome (passed, failed, skipped) by its name, as the runner names it."""
        ...


class NamedTestsRun(NamedTuple):
    """How an evaluation runs a repository's tests in the sandbox and gets its machine output back whole."""

    argv: list[str]
    report_file: str
    """Where the run writes the runner's machine output (under /tmp): read back whole, not from the capped output."""
    shown: list[str]
    """The command as a user would type it (eval.json says it)."""


@runtime_checkable
class RunsNamedTests(Protocol):
    """A runner an evaluation can grade by test name (SWE-bench Multilingual's FAIL_TO_PASS / PASS_TO_PASS)."""

    name: str
    """What eval.json records as the runner: a regrade finds the language by it."""

    def is_test_id(self, name: str) -> bool:
        """Whether ``name`` is a test name this runner writes (a row's FAIL_TO_PASS entry)."""
        ...

    def named_tests_run(self, repo: Path, names: list[str], env: EnvInfo | None) -> NamedTestsRun:
        """The run that reports (at least) the tests ``names`` of ``repo`` in the environment ``env`` (None: not
        known)."""
        ...

    def outcomes(self, output: str) -> dict[str, str]: ...


@runtime_checkable
class BuildsEnvironment(Protocol):
    """An ecosystem whose toolchain and dependencies are its own (not agent/env's Python environments)."""

    def environment(self, repo: Path, image: str | None, backend: str, log: Log, cancel: Cancel,
                    repo_name: str) -> EnvInfo:
        """The image its tests run in, built on the host and kept (``image``: the user's own toolchain image,
        None: codebox's); EnvError in one line when it cannot be."""
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
