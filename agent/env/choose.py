"""A task's ``env`` (auto | none | IMAGE | an object with a recipe) turned into the image its sandbox runs.

``choose_for_task`` is what ``run``, ``batch`` and ``eval`` call: the task carries its
environment setting (the CLI folds the flags and the recipes file into it), its dates say
what to resolve as of, and the sandbox's limits are the build's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from agent import defaults
from agent.env.cancel import NEVER, Cancel
from agent.env.errors import EnvError
from agent.env.info import EnvInfo
from agent.env.read.declared import NO_DEPENDENCIES, read_declared
from agent.env.recipe import EnvSpec
from agent.env.resolve import asof

AUTO, NONE = "auto", "none"
Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


class EnvTask(Protocol):
    """What the choice reads of a task (agent.protocol.TaskSpec fits): its setting, repository and dates."""

    @property
    def env(self) -> str | EnvSpec: ...

    @property
    def repo(self) -> str: ...

    @property
    def created_at(self) -> str | None: ...

    @property
    def base_commit(self) -> str | None: ...

    @property
    def environment_setup_commit(self) -> str | None: ...

    @property
    def allow_public_fallback(self) -> bool: ...

    @property
    def python_minor(self) -> str | None: ...

    @property
    def python_stands_in_for(self) -> str | None: ...


class SandboxLimits(Protocol):
    """What the build takes from a task's sandbox settings (agent.sandboxes.config.SandboxConfig fits)."""

    @property
    def backend(self) -> str: ...

    @property
    def image(self) -> str: ...

    @property
    def memory(self) -> str: ...

    @property
    def pids_limit(self) -> int: ...

    @property
    def cpus(self) -> float: ...


def choose_for_task(task: EnvTask, repo: Path, sandbox: SandboxLimits, log: Log = _quiet,
                    cancel: Cancel = NEVER, repo_name: str | None = None) -> EnvInfo | None:
    """The environment of ``task``, built on ``repo`` (the task's repository or its workspace), shown
    as ``repo_name`` (default ``task.repo``).

    As of: the task's own ``env.as_of``, else the later of its ``created_at`` and the committer date of
    its base commit (or HEAD) in ``task.repo``, else now (asof.choose). Limits: the sandbox's. Environments
    are built in the sandbox's backend and kept in its image store, where its sandboxes find them.
    """
    env = task.env
    if isinstance(env, str) and env != AUTO:
        return None if env == NONE else _named(env, sandbox.backend)
    when = env.as_of if isinstance(env, EnvSpec) else None
    source = Path(task.repo).expanduser()
    setup = setup_declarations(task, source, log)
    as_of = dependency_date(task, when, source, setup[1] if setup else None)
    return choose_env(env, repo, sandbox.image, log, cancel, as_of=as_of, memory=sandbox.memory,
                      pids=sandbox.pids_limit, cpus=sandbox.cpus, allow_public_fallback=task.allow_public_fallback,
                      repo_name=repo_name or task.repo, backend=sandbox.backend, python=task.python_minor,
                      deps_repo=setup[0] if setup else None, deps_commit=setup[1] if setup else None,
                      stands_in_for=task.python_stands_in_for)


def dependency_date(task: EnvTask, flag: str | None, source: Path, setup_commit: str | None) -> str:
    """The as-of date of the task's dependencies: the user's flag; else, for a row with an environment_setup_commit,
    that commit's date, so that every row of its version resolves alike (one environment, as SWE-bench's env
    image); else asof.choose's (created_at, the base commit's date, now)."""
    if setup_commit is not None and not flag:
        found = asof.commit_date(source, setup_commit)
        if found is not None:
            return found
    return asof.choose(flag, source, task.created_at, task.base_commit)


def setup_declarations(task: EnvTask, source: Path, log: Log = _quiet) -> tuple[Path, str] | None:
    """The folder of the declarations at the task's environment_setup_commit and that commit's full hash, when the
    task has one that differs from its base commit (SWE-bench's rows: one per version); None otherwise, or when the
    commit is not in ``source`` (said in the log: the base commit's declarations are read then)."""
    commit = task.environment_setup_commit
    if not commit or commit == task.base_commit or not source.is_dir():
        return None
    from agent.env.read.at_commit import declarations_at, full_commit
    from agent.env.resolve.fetch import cache_dir

    folder = declarations_at(source, commit, cache_dir())
    full = full_commit(source, commit)
    if folder is None or full is None:
        log(f"environment_setup_commit {commit[:12]} is not in {source} (or git cannot read it): the dependencies "
            "are read at the base commit")
        return None
    base = full_commit(source, task.base_commit) if task.base_commit else None
    return None if base == full else (folder, full)


def choose_env(env: str | EnvSpec, repo: Path, base_image: str, log: Log = _quiet, cancel: Cancel = NEVER, *,
               as_of: str | None = None, memory: str = defaults.DEFAULT_MEMORY, pids: int = defaults.DEFAULT_PIDS,
               cpus: float = defaults.DEFAULT_CPUS, allow_public_fallback: bool = False,
               repo_name: str | None = None, backend: str = defaults.DEFAULT_BACKEND,
               python: str | None = None, deps_repo: Path | None = None,
               deps_commit: str | None = None, stands_in_for: str | None = None) -> EnvInfo | None:
    """None for ``none``; the built or reused environment for ``auto`` or an EnvSpec; the named image otherwise.

    ``as_of``: a normalized date (``asof.normalize``; default: HEAD's date in ``repo``). ``python``: the X.Y chosen
    for the task (``base_image`` holds it), part of the cache key; ``stands_in_for``: the X.Y it runs in place of.
    ``cancel`` stops a build under way (EnvCancelled). ``allow_public_fallback``, ``repo_name``,
    ``backend``, ``deps_repo``, ``deps_commit``: see EnvRequest.
    """
    if isinstance(env, str) and env == NONE:
        return None
    if isinstance(env, str) and env != AUTO:
        return _named(env, backend)
    spec = env if isinstance(env, EnvSpec) else EnvSpec()
    if isinstance(env, str) and _declares_nothing(repo):
        # The common quick run: no builder, no engine, no resolver is loaded.
        return EnvInfo(image=base_image, base_image=base_image, notes=[NO_DEPENDENCIES])
    from agent.env.install.box import BuildLimits
    from agent.env.install.ensure import EnvRequest, ensure_env

    request = EnvRequest(repo=repo, base_image=base_image, recipe=spec.recipe(),
                         as_of=as_of or asof.choose(spec.as_of, repo),
                         limits=BuildLimits(memory=memory, pids=pids, cpus=cpus),
                         allow_public_fallback=allow_public_fallback, repo_name=repo_name, backend=backend,
                         candidates=spec.candidates or defaults.DEFAULT_ENV_CANDIDATES,
                         candidate_timeout_s=spec.candidate_timeout or defaults.DEFAULT_ENV_CANDIDATE_TIMEOUT_S,
                         skip=spec.skip_candidates, python=python, deps_repo=deps_repo, deps_commit=deps_commit,
                         stands_in_for=stands_in_for)
    return ensure_env(request, log, cancel)


def _declares_nothing(repo: Path) -> bool:
    """No requirement, no project and nothing to build: the base image serves it as it is."""
    from agent.env.read.safe_read import read_toml, table

    pyproject = read_toml(repo, "pyproject.toml") or {}
    if (repo / "setup.py").is_file() or table(pyproject, "build-system") or table(pyproject, "project"):
        return False
    return not read_declared(repo).needs_env


def _named(env: str, backend: str) -> EnvInfo:
    """``--env IMAGE``: an image codebox built (its lock, from codebox's record), or any image of the backend's
    store as it is."""
    from agent.env.install import images

    engine = images.EngineImages.connect(backend)
    try:
        entry = images.find(engine, env)
        if entry is None:
            attrs = engine.inspect(env)
            if attrs is None:
                raise EnvError(f"--env {env}: no such image in {backend}'s store (use auto, none, or an image "
                               "from `codebox env ls`)", usage=True)
            return EnvInfo(image=env, base_image=env)  # the user's own image, run by the name they gave
    finally:
        engine.close()
    return EnvInfo(image=entry.tag, image_id=entry.id, base_image=entry.base, lock=entry.lock,
                   installed=list(entry.packages), python=entry.python, apt=list(entry.apt), as_of=entry.as_of,
                   toolchain=entry.toolchain)
