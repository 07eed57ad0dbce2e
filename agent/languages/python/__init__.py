"""Python: a repository tested with its own runner where it has one (sympy's bin/test, Django's tests/runtests.py),
else pytest (detected from its files); each runner's argument rules; the failure lines of pytest, unittest
(Django's too) and sympy. Its dependency environments are agent/env's; its runners, as SWE-bench runs and reads
them, are runners/."""

from __future__ import annotations

import itertools
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from agent.languages.base import CONTROL, Detection, TestArgsError, check_test_path, refused, unique_names
from agent.languages.python import args, detect, names
from agent.languages.python.runners import OWN_RUNNERS
from agent.languages.python.runners.django import RUNTESTS
from agent.languages.python.runners.sympy import SYMPY

if TYPE_CHECKING:
    from agent.env.info import EnvInfo

_NO_PYTEST = "the environment does not install pytest: --pip pytest, or --test-cmd"
_RUNNER_ALLOWED = "test files or dotted test labels inside the repository (no options)"


class Python:
    """The Python ecosystem's answers to the language seam (agent.languages.base.Language)."""

    name = "python"

    def detect(self, repo: Path, env: EnvInfo | None) -> Detection | None:
        for runner in OWN_RUNNERS:
            own = runner.evidence(repo)
            if own is not None:
                return Detection(self.name, runner.command([]), own)
        evidence = detect.pytest_evidence(repo)
        if evidence is None:
            return None
        command = detect.pytest_command(repo)
        if env is not None and env.lock and not detect.lock_has_pytest(env.lock):
            return Detection(self.name, command, evidence, missing=_NO_PYTEST)
        return Detection(self.name, command, evidence)

    def runs(self, test_cmd: list[str]) -> bool:
        return args.is_pytest(test_cmd) or own_runner(test_cmd)

    def check_test_args(self, test_cmd: list[str], arguments: list[str], repo: Path | None) -> None:
        if args.is_pytest(test_cmd):
            args.check_pytest_args(arguments, repo)
            return
        for arg in arguments:  # sympy's, Django's and unittest's runners: which tests, nothing else
            try:
                if CONTROL.search(arg):
                    raise TestArgsError(f"{arg!r} contains a control character")
                check_test_path(arg, repo)
            except TestArgsError as exc:
                raise refused(arg, str(exc), _RUNNER_ALLOWED) from None

    def failing_tests(self, output: str) -> list[str]:
        return names.failing_tests(output) or unique_names(SYMPY.failing_tests(output))


def own_runner(test_cmd: list[str]) -> bool:
    """Whether the command runs sympy's bin/test, Django's tests/runtests.py or ``python -m unittest``."""
    paths = {PurePosixPath(a).as_posix() for a in test_cmd}  # as_posix drops a leading ./
    if paths & {"bin/test", RUNTESTS}:
        return True
    return any(a == "-m" and b == "unittest" for a, b in itertools.pairwise(test_cmd))


PYTHON = Python()
