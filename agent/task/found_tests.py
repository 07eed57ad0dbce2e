"""The test command a task gets when it names none: the one its repository shows (agent.languages), or why none.

`codebox run` and every batch task ask here once the environment is chosen (its lock says whether the test
runner is installed; its toolchain, the form of a command that depends on it). What is decided travels in
``ChosenTests``: the command, how it was chosen (said on the console and in the run's first event), and, when
tests were seen but cannot run, why (run_test says it).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from agent.escape import one_line
from agent.languages.registry import detect

if TYPE_CHECKING:
    from agent.env.info import EnvInfo

NONE_FOUND = "none found"


class ChosenTests(NamedTuple):
    """A task's test command and how it came to be."""

    command: list[str]
    """What run_test runs (empty: no test command)."""
    source: str
    """How it was chosen, in words (escaped): "given", "found tests/test_x.py", "none: ..."."""
    missing: str | None = None
    """Why there is none although the repository shows tests (escaped), or None."""

    def no_tests_message(self) -> str | None:
        """What run_test answers when there is no command: the reason when one is known (None: its own)."""
        if self.missing:
            return f"No test command: {self.missing}."
        if self.source == NONE_FOUND:
            return ("No test command: the task names none and the repository shows no tests codebox recognises; "
                    "give one (codebox run --test-cmd ..., or test_cmd in a batch task's line).")
        return None


def given(command: list[str]) -> ChosenTests:
    """The task's own command (or none, and nothing looked for)."""
    return ChosenTests(list(command), "given" if command else "none given")


def find_tests(repo: Path, env: EnvInfo | None) -> ChosenTests:
    """The command ``repo`` shows (``env``: the environment it runs in, when one was chosen), or why there is none."""
    found = detect(repo, env)
    if found is None:
        return ChosenTests([], NONE_FOUND)
    evidence = one_line(found.evidence, 120)  # a name from the repository: escaped like all its text
    if found.missing:
        missing = f"{evidence} shows {found.language} tests, but {found.missing}"
        return ChosenTests([], f"none ({missing})", missing)
    return ChosenTests(list(found.command), f"found {evidence}")


def tests_line(choice: ChosenTests, change: str) -> str | None:
    """The one line that tells the user what was found (``change``: how to pick another), or None when
    nothing was looked for or found."""
    if choice.command and choice.source.startswith("found"):
        return f"{shlex.join(choice.command)} ({choice.source}; {change})"
    return choice.source if choice.missing else None
