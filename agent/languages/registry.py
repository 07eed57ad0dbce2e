"""The languages codebox knows, in the order they are asked, and the questions the rest of codebox asks them.

Adding an ecosystem: one module under agent/languages/ with a Language object, and one line in LANGUAGES.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent.languages.base import (
    ArrangesArgs,
    BuildsEnvironment,
    Detection,
    Language,
    Log,
    ReadsOutcomes,
    RunsNamedTests,
)
from agent.languages.generic import GENERIC
from agent.languages.go import GO
from agent.languages.node import NODE
from agent.languages.python import PYTHON
from agent.languages.python import runners as python_runners
from agent.languages.runner import LogRunner, Runner
from agent.languages.rust import RUST

if TYPE_CHECKING:
    from agent.env.cancel import Cancel
    from agent.env.choose import EnvTask, SandboxLimits
    from agent.env.info import EnvInfo

LANGUAGES: tuple[Language, ...] = (PYTHON, RUST, GO, NODE)


def detect(repo: Path, env: EnvInfo | None = None) -> Detection | None:
    """The test command of the first language that claims ``repo`` (with what showed it), or None. ``env``: the
    environment it runs in, when one was chosen."""
    for language in LANGUAGES:
        found = language.detect(repo, env)
        if found is not None:
            return found
    return None


def for_command(test_cmd: list[str]) -> Language:
    """The language whose test runner ``test_cmd`` runs (its argument rules apply), else the generic rules."""
    return next((language for language in LANGUAGES if language.runs(test_cmd)), GENERIC)


def check_test_args(test_cmd: list[str], args: list[str], repo: Path | None = None) -> None:
    """Raise TestArgsError unless each of the model's ``args`` only chooses tests of ``test_cmd``."""
    for_command(test_cmd).check_test_args(test_cmd, args, repo)


def argv_for(test_cmd: list[str], args: list[str]) -> list[str]:
    """The argv run_test runs: the command with the model's (checked) arguments where its runner takes them."""
    language = for_command(test_cmd)
    return language.test_argv(test_cmd, args) if isinstance(language, ArrangesArgs) else [*test_cmd, *args]


def outcomes(output: str, test_cmd: list[str]) -> dict[str, str] | None:
    """Each test's outcome by name, from the machine output of ``test_cmd``'s runner (None: it has none)."""
    language = for_command(test_cmd)
    return language.outcomes(output) if isinstance(language, ReadsOutcomes) else None


def named_tests(repo: Path) -> RunsNamedTests | None:
    """The language of ``repo`` when an evaluation grades it by its own runner's test names (Rust's), else None
    (pytest's node ids: agent/eval's own run)."""
    found = detect(repo)
    language = next((lang for lang in LANGUAGES if found is not None and lang.name == found.language), None)
    return language if isinstance(language, RunsNamedTests) else None


def choose_env(task: EnvTask, repo: Path, sandbox: SandboxLimits, log: Log, cancel: Cancel,
               repo_name: str | None = None) -> EnvInfo | None:
    """The task's environment: with ``env: auto``, built by the language of ``repo`` when it builds its own
    (Rust's toolchain and crates), else agent/env's choice (Python's, an image, none)."""
    from agent.env.choose import AUTO, choose_for_task

    if task.env == AUTO:
        found = detect(repo)
        language = next((lang for lang in LANGUAGES if found is not None and lang.name == found.language), None)
        if isinstance(language, BuildsEnvironment):
            image = None if _codebox_sandbox_image(sandbox.image, sandbox.backend) else sandbox.image
            return language.environment(repo, image, sandbox.backend, log, cancel, repo_name or task.repo)
    return choose_for_task(task, repo, sandbox, log, cancel, repo_name)


def _codebox_sandbox_image(image: str, backend: str) -> bool:
    """Whether ``image`` is codebox's own sandbox image (the default, or one an evaluation chose for a Python
    version): not a toolchain the user brought, so a language's own toolchain image is used instead."""
    from agent.defaults import DEFAULT_IMAGE

    if image == DEFAULT_IMAGE:
        return True
    from agent.env.install.images import EngineImages

    engine = EngineImages.connect(backend)
    try:
        attrs = engine.inspect(image) or {}
    finally:
        engine.close()
    labels = (attrs.get("Config") or {}).get("Labels") or {}
    # An image built FROM one of codebox's (its Node toolchain with npm added) inherits its labels: only a name of
    # codebox's own says the image is codebox's, else the user's toolchain would be swapped out unseen.
    names = [str(tag).rsplit(":", 1)[0].rsplit("/", 1)[-1] for tag in attrs.get("RepoTags") or []]
    return labels.get("codebox.image") in ("sandbox", "base") and any(
        name in ("codebox-sandbox", "codebox-base") or name.startswith("codebox-toolchain-") for name in names)


def failing_tests(output: str, test_cmd: list[str] | None = None) -> list[str]:
    """The failing tests a run's output names: read as ``test_cmd``'s language writes them, or, with no command,
    by the first language that finds any."""
    if test_cmd is not None:
        return for_command(test_cmd).failing_tests(output) or GENERIC.failing_tests(output)
    for language in (*LANGUAGES, GENERIC):
        found = language.failing_tests(output)
        if found:
            return found
    return []


def error_line(output: str) -> str | None:
    """Why a test run that named no failing test failed, in the output's own words (the last exception, compiler
    error or panic it shows), or None."""
    return GENERIC.error_line(output)


def eval_runner(repo: Path, names: list[str]) -> tuple[Runner, str]:
    """The runner a benchmark row's named tests of ``repo`` run with (as SWE-bench picks it per repository), and
    why, in one line."""
    return python_runners.choose(repo, names)


def language_named(name: str) -> RunsNamedTests | None:
    """The language whose own test names an evaluation graded by, from eval.json's ``runner`` (go, node, rust), or
    None (a Python runner's name)."""
    language = next((lang for lang in LANGUAGES if lang.name == name), None)
    return language if isinstance(language, RunsNamedTests) else None


def runner_named(name: str) -> Runner | None:
    """The runner of that name (an eval.json's ``runner``), or None."""
    return python_runners.RUNNERS.get(name)


def log_runner_named(name: str) -> LogRunner | None:
    """The runner of that name when its outcomes are read from its log (None: it has a report of its own)."""
    return python_runners.LOG_RUNNERS.get(name)


def is_test_id(name: str) -> bool:
    """Whether some runner reads ``name`` as a test id (``[100%]`` is none)."""
    return any(runner.is_test_id(name) for runner in python_runners.RUNNERS.values()) or any(
        language.is_test_id(name) for language in LANGUAGES if isinstance(language, RunsNamedTests))
