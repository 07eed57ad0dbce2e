"""Shared test set-up: Docker availability, and a check that no sandbox container leaks."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from agent.containers.engine_api import EngineClient

# The sandbox server's runtime, copied once out of the sandbox image: one for the whole session (and
# its child processes), though many tests point XDG_CACHE_HOME at a folder of their own.
os.environ.setdefault(
    "CODEBOX_RUNTIME_DIR",
    str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "codebox" / "runtime"),
)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _docker_problem() -> str | None:
    try:
        from agent.containers.engine_api import EngineClient

        EngineClient.from_env(timeout_s=10).ping()
    except Exception as exc:
        return f"no Docker daemon answers ({type(exc).__name__}: {exc})"
    return None


_DOCKER_PROBLEM: str | None = None
_DOCKER_CHECKED = False


def docker_problem() -> str | None:
    global _DOCKER_PROBLEM, _DOCKER_CHECKED
    if not _DOCKER_CHECKED:
        _DOCKER_PROBLEM = _docker_problem()
        _DOCKER_CHECKED = True
    return _DOCKER_PROBLEM


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker("docker") for item in items):
        return
    problem = docker_problem()
    if problem is None:
        return
    if os.environ.get("CI") and not os.environ.get("CODEBOX_ALLOW_NO_DOCKER"):
        # In CI a missing daemon is a failure, not a reason to skip half the suite.
        raise pytest.UsageError(f"docker tests cannot run in CI: {problem}")
    skip = pytest.mark.skip(reason=problem)
    for item in items:
        if item.get_closest_marker("docker"):
            item.add_marker(skip)


def _codebox_containers() -> list[str]:
    """codebox containers owned by this process, or by a process that is gone (a leak).

    Containers of other live processes (a second test run on the same machine) are theirs.
    """
    from agent.containers.engine_api import EngineClient

    containers = EngineClient.from_env().containers(all=True, filters={"label": ["codebox.task"]})
    mine = []
    for c in containers:
        owner = (c.get("Labels") or {}).get("codebox.owner", "")
        alive = owner.isdigit() and int(owner) != os.getpid() and Path(f"/proc/{owner}").exists()
        if not alive:
            mine.append((c.get("Names") or [c["Id"][:12]])[0].lstrip("/"))
    return mine


@pytest.fixture(scope="session", autouse=True)
def no_leaked_containers() -> Iterator[None]:
    """After the whole session, no codebox container may be left on the machine."""
    yield
    if docker_problem() is not None:
        return
    import time

    deadline = time.monotonic() + 15  # auto-removal of just-killed containers takes a moment
    left = _codebox_containers()
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = _codebox_containers()
    assert not left, f"codebox containers leaked: {left}"


@pytest.fixture(scope="session", autouse=True)
def workspaces_under_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Task workspaces go under this session's temp folder, not the machine's /tmp: a test that
    kills a run on purpose leaves its workspace where pytest cleans up, and a test that checks
    for leftovers sees only its own run's (a test may still set its own root)."""
    old = os.environ.get("CODEBOX_WORKSPACE_ROOT")
    os.environ["CODEBOX_WORKSPACE_ROOT"] = str(tmp_path_factory.mktemp("workspaces"))
    yield
    if old is None:
        os.environ.pop("CODEBOX_WORKSPACE_ROOT", None)
    else:
        os.environ["CODEBOX_WORKSPACE_ROOT"] = old


@pytest.fixture(scope="session")
def docker_client() -> EngineClient:
    """codebox's own Engine API client of the Docker daemon (tests/engine.py has the helpers); no daemon:
    a skip, or in CI a failure."""
    from tests.engine import docker

    client = docker(timeout_s=60)
    try:
        client.ping()
    except Exception as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Docker daemon answers ({exc})")
    return client


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    """The sandbox image, built if missing (offline; no registry is needed)."""
    from agent.containers.image import ensure_sandbox_image

    return ensure_sandbox_image(log=lambda _msg: None)
