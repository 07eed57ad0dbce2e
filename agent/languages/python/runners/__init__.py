"""Python's test runners, and the one a repository's rows run with (SWE-bench's choice per repository).

A row whose ids are pytest node ids runs pytest. Otherwise the repository's own runner where its tree shows one
(sympy's bin/test, Django's tests/runtests.py: SWE-bench runs those repositories with them), else plain unittest
when the ids are unittest's, else pytest (whose check then names the ids that are none).
"""

from __future__ import annotations

from pathlib import Path

from agent.languages.python.runners.django import DJANGO
from agent.languages.python.runners.pytest import PYTEST
from agent.languages.python.runners.sympy import SYMPY
from agent.languages.python.runners.unittest import UNITTEST
from agent.languages.runner import LogRunner, Runner

OWN_RUNNERS: tuple[LogRunner, ...] = (SYMPY, DJANGO)  # a repository's own runner, found in its tree
LOG_RUNNERS: dict[str, LogRunner] = {r.name: r for r in (SYMPY, DJANGO, UNITTEST)}
RUNNERS: dict[str, Runner] = {PYTEST.name: PYTEST, **LOG_RUNNERS}


def choose(repo: Path, names: list[str]) -> tuple[Runner, str]:
    """The runner for these named tests of ``repo``, and why (one line)."""
    if any(PYTEST.is_test_id(n) for n in names):
        return PYTEST, "the tests are named by pytest node ids"
    for runner in OWN_RUNNERS:
        evidence = runner.evidence(repo)
        if evidence is not None:
            return runner, f"the repository runs its tests with {evidence}"
    if any(UNITTEST.is_test_id(n) for n in names):
        return UNITTEST, "the tests are named by unittest ids"
    return PYTEST, "the default"

