"""A deterministic slow install for cancel tests: the install script blocks before it does anything.

In this process: ``slow_install(monkeypatch)``. In a `codebox` subprocess: put
``sitecustomize_folder(tmp)`` first on its PYTHONPATH. The build container is then found by
its labels (``build_containers``) while it blocks.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agent.containers.engine_api import EngineClient
from agent.env.install import box, deps
from agent.sandboxes.owner import LABEL_OWNER, LABEL_ROLE, LABEL_TASK
from tests import engine

BLOCK = "sleep 600  # codebox tests: a build that would take ten minutes\n"
INSTALL = "env-deps"  # the task label of the box that installs the dependencies

_SITECUSTOMIZE = f"""
import agent.env.install.deps as _deps

_real = _deps._install_script
_deps._install_script = lambda *a, **k: {BLOCK!r} + _real(*a, **k)
"""


def slow_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = deps._install_script
    monkeypatch.setattr(deps, "_install_script", lambda *a, **k: BLOCK + real(*a, **k))


def sitecustomize_folder(tmp: Path) -> Path:
    folder = tmp / "slow-sitecustomize"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
    return folder


def build_containers(client: EngineClient, owner: int) -> list[dict[str, Any]]:
    """The environment build containers (install and probes) that process ``owner`` made, any state."""
    return engine.containers(client, f"{LABEL_ROLE}={box.ROLE_BUILD}", f"{LABEL_OWNER}={owner}")


def wait_for_install(client: EngineClient, owner: int, timeout: float = 120) -> str:
    """The id of the running install container of ``owner``'s build (its install step blocks in BLOCK), once it runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for container in build_containers(client, owner):
            if (container.get("Labels") or {}).get(LABEL_TASK) == INSTALL and container.get("State") == "running":
                return str(container["Id"])
        time.sleep(0.1)
    raise AssertionError(f"no install container of process {owner} ran within {timeout:g} s")


def env_images(client: EngineClient, repo: Path) -> list[dict[str, Any]]:
    """Every image codebox made for ``repo`` (environment, dependencies or tools), by the label set for people."""
    from agent.env.install import images

    return engine.images(client, f"{images.LABEL_REPO}={repo}")
