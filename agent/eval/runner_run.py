"""The test run of one instance whose runner has no report format (sympy's bin/test, Django's runtests.py,
unittest): its command in the sandbox under boot_command.py, the whole log back in the bundle pytest's run uses
(pytest_run.read_bundle; its junit is None). The runner reads the log (agent/languages/python/runners)."""

from __future__ import annotations

from pathlib import Path

from agent.eval.pytest_run import BOOT_VARIABLE, run_environment
from agent.languages.runner import Runner

BOOT_SOURCE = Path(__file__).with_name("boot_command.py").read_text(encoding="utf-8")


def command_argv(command: list[str]) -> list[str]:
    """The command as run in the sandbox (from /repo): under the boot program that bundles its log."""
    return ["python3", "-c", f"import os; exec(compile(os.environ[{BOOT_VARIABLE!r}], 'codebox-eval', 'exec'))",
            *command]


def command_environment(runner: Runner, import_root: str | None, dataset_image: bool) -> dict[str, str]:
    """pytest's run's variables (the bundle's paths, the import root, a dataset image's PATH), this boot program,
    and the variables SWE-bench's eval script sets for the runner."""
    return {**run_environment(import_root, dataset_image), BOOT_VARIABLE: BOOT_SOURCE, **runner.environment()}
