"""What a test runner answers, as a benchmark's harness (SWE-bench) runs and reads it: which repositories it is
for, the command for named tests, each test's outcome from the runner's own output, the dataset's ids in its form.

A language's runners are one module each (python/runners/: pytest, sympy, django, unittest); the registry says
which one a repository's rows run with. Statuses are SWE-bench's (PASSED, FAILED, ERROR, SKIPPED, XFAIL): a
runner's output is read into them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

PASSED, FAILED, ERROR, SKIPPED, XFAIL = "PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL"
# The test_patch's files SWE-bench leaves off a test command (its NON_TEST_EXTS): data, never a test module.
NON_TEST_SUFFIXES = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")


class Runner(Protocol):
    """One test runner. ``name`` is what eval.json records; ``log_parser`` is SWE-bench's parser for its logs."""

    name: str
    log_parser: str

    def evidence(self, repo: Path) -> str | None:
        """The file that shows ``repo`` runs its tests with this runner (as SWE-bench picks per repository), or None."""
        ...

    def is_test_id(self, name: str) -> bool:
        """Whether a dataset entry names a test in this runner's form (``[100%]`` names none)."""
        ...

    def targets(self, names: list[str], patch_files: list[str]) -> list[str]:
        """What the command names to run ``names``: SWE-bench's test directives, from the test_patch's files."""
        ...

    def command(self, targets: list[str]) -> list[str]:
        """The command run from the repository's root in the sandbox."""
        ...

    def environment(self) -> dict[str, str]:
        """Variables SWE-bench's eval script sets for this runner."""
        ...


class LogRunner(Runner, Protocol):
    """A runner with no report format of its own: outcomes are read from its verbose lines."""

    def statuses(self, log: str) -> dict[str, str]:
        """Each test the log names, as ``key`` writes it, with its SWE-bench status (the last line about it wins)."""
        ...

    def key(self, name: str) -> str:
        """A dataset id in the form ``statuses`` keys tests (the same test, however its Python printed it)."""
        ...


def test_files(patch_files: list[str]) -> list[str]:
    """The test_patch's files SWE-bench names on the command line (its data files left off)."""
    return [f for f in patch_files if not f.endswith(NON_TEST_SUFFIXES)]


def regular_file(repo: Path, name: str) -> bool:
    """A regular file of the repository, not a link (a link may lead out of it)."""
    path = repo / name
    try:
        return path.is_file() and not path.is_symlink() and not path.parent.is_symlink()
    except OSError:
        return False


IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
