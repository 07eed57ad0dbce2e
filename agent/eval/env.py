"""Where an instance's tests run: its environment, its image id, its sandbox (each made in ONE place here).

The environment is batch's: the task's ``env`` (auto: built or reused from what the repository
declares at base_commit; none; an image), on the task's image or the sandbox image. The sandbox
is a warm one from the engine's pool when it has this instance's, else a new one; it starts
in the background while the patches go in on the host, and is closed in the background once
the tests are done (wait_closed() before the process ends).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from agent.cancel import CancelToken
from agent.containers.sandbox import Sandbox
from agent.env.choose import choose_env
from agent.protocol import EnvInfo, TaskSpec
from agent.sandboxes.config import SandboxConfig
from agent.workspace import Workspace

if TYPE_CHECKING:
    from agent.containers.pool import WarmPool

REPO_ROOT = "/repo"
_closing: set[threading.Thread] = set()
_closing_lock = threading.Lock()


def choose(task: TaskSpec, repo: Path, base_image: str, cancel: CancelToken) -> EnvInfo | None:
    """The instance's environment (EnvError, EnvCancelled); None for ``env: none``."""
    return choose_env(task.env, repo, base_image, env_progress, cancel)


def env_progress(line: str) -> None:
    """An environment build's progress line (stderr, as batch's)."""
    print(f"codebox: env: {line}", file=sys.stderr, flush=True)


def open_sandbox(repo: Path, config: SandboxConfig, task_id: str, warm: WarmPool | None) -> Sandbox:
    """The instance's sandbox, its start under way: the pool's when it holds this one, else a new one."""
    claimed = warm.claim(task_id, repo, config) if warm is not None else None
    if claimed is not None:
        return claimed  # its start is under way; the first call waits for it
    sandbox = Sandbox(repo, config, task_id=f"eval-{task_id}")
    threading.Thread(target=_start_quietly, args=(sandbox,), name=f"codebox-eval-start-{task_id}", daemon=True).start()
    return sandbox


def _start_quietly(sandbox: Sandbox) -> None:
    with contextlib.suppress(Exception):  # the test run's call starts it again and reports what went wrong
        sandbox.start()


def close_later(sandbox: Sandbox | None, workspace: Workspace | None) -> None:
    """Remove the sandbox, then the workspace, in the background: the verdict does not wait for them."""
    def close() -> None:
        try:
            if sandbox is not None:
                sandbox.close()
        finally:
            if workspace is not None:
                workspace.remove()
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


def image_id(image: str) -> str | None:
    """The id (sha256:...) of the image the tests run in; None if the daemon does not say."""
    from agent.containers.engine_api import EngineError, connect_engine

    try:
        client = connect_engine()
        try:
            found = client.inspect_image(image).get("Id")
        finally:
            client.close()
    except (EngineError, OSError):
        return None
    return str(found) if found else None


def import_root(workspace: Path) -> str:
    """Where the repository's packages are in the container: /repo/src for a src/ layout, else /repo."""
    src = workspace / "src"
    python = src.is_dir() and not src.is_symlink() and any(
        (p / "__init__.py").is_file() or p.suffix == ".py" for p in src.iterdir())
    return f"{REPO_ROOT}/src" if python else REPO_ROOT


def installs_the_repo(env: EnvInfo | None) -> bool:
    """An environment built for the repository puts it on sys.path itself (a .pth in its venv)."""
    return env is not None and env.image != env.base_image
