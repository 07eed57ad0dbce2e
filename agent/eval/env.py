"""Where an instance's tests run: its sandbox settings, its environment, its image id, its sandbox (ONE place each).

The settings and the environment are batch's own (agent.task.task_env: task_sandbox_config, choose_task_env:
the task's ``env``, recipe and as-of date, built or reused from what the repository declares at
base_commit), so the warm pool's prestarted sandbox fits. The sandbox comes from the task's
backend: the engine's pool's when it holds this instance's, else a new one; it starts in the
background while the patches go in on the host, and is closed in the background once the tests
are done (wait_closed() before the run ends).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from agent.backends.registry import backend_for
from agent.cancel import CancelToken
from agent.protocol import EnvInfo, TaskSpec
from agent.sandboxes.base import Session
from agent.sandboxes.config import SandboxConfig
from agent.task.workspace import Workspace

if TYPE_CHECKING:
    from agent.backends.pool import WarmPool

REPO_ROOT = "/repo"
_closing: set[threading.Thread] = set()
_closing_lock = threading.Lock()


def sandbox_config(task: TaskSpec, config: SandboxConfig) -> SandboxConfig:
    """The sandbox's settings for this instance before its environment (its image and runtime win)."""
    from agent.task.task_env import task_sandbox_config

    return task_sandbox_config(task, config)


def choose(task: TaskSpec, repo: Path, config: SandboxConfig, cancel: CancelToken) -> EnvInfo | None:
    """The instance's environment, as batch chooses it (EnvError, EnvCancelled); None for ``env: none``."""
    from agent.task.task_env import choose_task_env

    return choose_task_env(task, repo, config, env_progress, cancel)


def env_progress(line: str) -> None:
    """An environment build's progress line (stderr, as batch's)."""
    print(f"codebox: env: {line}", file=sys.stderr, flush=True)


def open_sandbox(repo: Path, config: SandboxConfig, task_id: str, warm: WarmPool | None) -> Session:
    """The instance's sandbox, its start under way: the pool's when it holds this one, else a new one."""
    claimed = warm.claim(task_id, repo, config) if warm is not None else None
    if claimed is not None:
        return claimed  # its start is under way; the first call waits for it
    session = backend_for(config).session(repo, config, f"eval-{task_id}")
    threading.Thread(target=_start_quietly, args=(session,), name=f"codebox-eval-start-{task_id}", daemon=True).start()
    return session


def _start_quietly(session: Session) -> None:
    with contextlib.suppress(Exception):  # the test run's call starts it again and reports what went wrong
        session.start()


def close_later(session: Session | None, workspace: Workspace | None) -> None:
    """Remove the sandbox and the workspace, in the background: the verdict does not wait for them.

    Both at once: the workspace's files go while the engine removes the container (which mounts it
    read-only, and whose test run is over or cancelled), so the end of a run waits for the longer of
    the two, not for both."""
    def close() -> None:
        files = None
        if workspace is not None:
            files = threading.Thread(target=workspace.remove, name="codebox-eval-rm", daemon=True)
            files.start()
        try:
            if session is not None:
                session.close()
        finally:
            if files is not None:
                files.join()
            with _closing_lock:
                _closing.discard(threading.current_thread())

    thread = threading.Thread(target=close, name="codebox-eval-close", daemon=True)
    with _closing_lock:
        _closing.add(thread)
    thread.start()


def wait_closed(timeout_s: float = 60.0) -> None:
    """Wait for every background close (the end of a run)."""
    with _closing_lock:
        threads = list(_closing)
    for thread in threads:
        thread.join(timeout_s)


def image_id(env: EnvInfo | None, config: SandboxConfig) -> str | None:
    """The id (sha256:...) of the image the tests run in: the environment's own record, else the
    backend's answer; None if neither says."""
    if env is not None and env.image_id:
        return env.image_id
    return backend_for(config).image_id(config)


def import_root(workspace: Path) -> str:
    """Where the repository's packages are in the container: /repo/src for a src/ layout, else /repo."""
    src = workspace / "src"
    python = src.is_dir() and not src.is_symlink() and any(
        (p / "__init__.py").is_file() or p.suffix == ".py" for p in src.iterdir())
    return f"{REPO_ROOT}/src" if python else REPO_ROOT


# What the sandbox serves from /repo as it is: Python modules (an environment's install finds them
# there) and prose. Any other file a patch changes may be a build's input (C, Cython, build files).
_SERVED_AS_IS = (".py", ".pyi", ".md", ".rst")
_BUILD_FILES = ("setup.py",)
# Top-level folders of notes and docs that no build reads (tenacity's release notes are YAML:
# a gold patch's note rebuilt the project for nothing, 5-13 s).
_NOT_BUILT = ("docs", "doc", "releasenotes", "changelog.d", "changes", "newsfragments", "news", ".github")


def patch_rebuilds(paths: list[str]) -> list[str]:
    """The paths of a patch that a project's build may read: those make the environment chosen again."""
    return [p for p in paths
            if (not p.endswith(_SERVED_AS_IS) or p.rsplit("/", 1)[-1] in _BUILD_FILES)
            and not ("/" in p and p.split("/", 1)[0] in _NOT_BUILT)]


def installs_the_repo(env: EnvInfo | None) -> bool:
    """An environment built for the repository puts it on sys.path itself (a .pth in its venv)."""
    return env is not None and env.image != env.base_image
