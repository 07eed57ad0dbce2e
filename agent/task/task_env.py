"""A task's sandbox settings and environment, as every task chooses them (run, batch, eval).

Its own module, apart from the agent's runner: `codebox eval` needs these two and none of the
agent loop, model clients or tools the runner imports (a tenth of a single-instance eval's
imports before its container could start).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from agent.cancel import CancelToken
from agent.languages.registry import choose_env
from agent.protocol import EnvInfo, TaskSpec
from agent.sandboxes.config import SandboxConfig


def task_sandbox_config(task: TaskSpec, sandbox_config: SandboxConfig | None) -> SandboxConfig:
    """The sandbox's settings for this task, before its environment is chosen (a task's image and
    runtime win)."""
    config = sandbox_config or SandboxConfig()
    own = {"image": task.image, "runtime": task.runtime}
    changes = {key: value for key, value in own.items() if value}
    return config.replace(**changes) if changes else config


def choose_task_env(
    task: TaskSpec, repo: Path, config: SandboxConfig, log: Callable[[str], None], cancel: CancelToken,
    repo_name: str | None = None,
) -> EnvInfo | None:
    """The task's environment (agent.languages.registry.choose_env: built or found in the sandbox backend's
    image store)."""
    return choose_env(task, repo, config, log, cancel, repo_name)


def env_progress(line: str) -> None:
    """The visible progress line of an environment build (stderr: stdout may carry --json events)."""
    print(f"codebox: env: {line}", file=sys.stderr, flush=True)
