"""Python: a repository tested with pytest (detected from its files), pytest's argument rules, pytest's and
unittest's failure lines. Its dependency environments are agent/env's."""

from __future__ import annotations

from pathlib import Path

from agent.languages.base import Detection
from agent.languages.python import args, detect, names

_NO_PYTEST = "the environment does not install pytest: --pip pytest, or --test-cmd"


class Python:
    """The Python ecosystem's answers to the language seam (agent.languages.base.Language)."""

    name = "python"

    def detect(self, repo: Path, lock: str | None) -> Detection | None:
        evidence = detect.pytest_evidence(repo)
        if evidence is None:
            return None
        command = detect.pytest_command(repo)
        if lock and not detect.lock_has_pytest(lock):
            return Detection(self.name, command, evidence, missing=_NO_PYTEST)
        return Detection(self.name, command, evidence)

    def runs(self, test_cmd: list[str]) -> bool:
        return args.is_pytest(test_cmd)

    def check_test_args(self, test_cmd: list[str], arguments: list[str], repo: Path | None) -> None:
        args.check_pytest_args(arguments, repo)

    def failing_tests(self, output: str) -> list[str]:
        return names.failing_tests(output)


PYTHON = Python()
