"""The conformance suite's sandboxes: every backend x runtime this machine has, each made through
the registry as a task would make it.

Outside CI a combination the machine lacks is skipped with one line. In CI, docker-runc is always
required; CODEBOX_REQUIRE_RUNSC=1 makes the runsc ones required, CODEBOX_REQUIRE_PODMAN=1 the
Podman ones (.ci/run sets each where it installs the piece).
"""

from __future__ import annotations

import os
import shutil

import pytest

from agent.backends.registry import backend_for
from agent.errors import SandboxError
from agent.sandboxes.config import SandboxConfig
from tests.e2e.scenarios.conftest import demo_repo, run_scenario  # noqa: F401 -- the hostile scenarios' fixtures

TARGETS = [("docker", "runc"), ("docker", "runsc"), ("podman", "runc"), ("podman", "runsc")]


def _required(backend: str, runtime: str) -> bool:
    if not os.environ.get("CI"):
        return False
    if backend == "podman" and os.environ.get("CODEBOX_REQUIRE_PODMAN") != "1":
        return False
    return runtime == "runc" or os.environ.get("CODEBOX_REQUIRE_RUNSC") == "1"


def _unavailable(backend: str, runtime: str, why: str) -> None:
    if _required(backend, runtime):
        pytest.fail(f"{backend}-{runtime} is required here and not available: {why}")
    pytest.skip(f"{backend}-{runtime}: {why}")


@pytest.fixture(scope="session", params=TARGETS, ids=[f"{b}-{r}" for b, r in TARGETS])
def target(request: pytest.FixtureRequest, sandbox_image: str) -> SandboxConfig:
    """A sandbox config of one backend x runtime, checked by the backend's own preflight."""
    backend, runtime = request.param
    if backend == "podman" and shutil.which("podman") is None:
        _unavailable(backend, runtime, "podman is not installed (apt-get install podman)")
    config = SandboxConfig(backend=backend, runtime=runtime, image=sandbox_image)
    try:
        backend_for(config).preflight(config)
    except SandboxError as exc:
        if backend == "podman" and "is not there" in str(exc):
            from agent.backends.podman import copy_image_from_docker

            copy_image_from_docker(sandbox_image)  # the same image, into Podman's store
            return target_checked(config)
        _unavailable(backend, runtime, str(exc))
    return config


def target_checked(config: SandboxConfig) -> SandboxConfig:
    try:
        backend_for(config).preflight(config)
    except SandboxError as exc:
        _unavailable(config.backend, config.runtime, str(exc))
    return config


@pytest.fixture
def scenario_config(target: SandboxConfig) -> SandboxConfig:
    """The hostile scenarios of tests/e2e/scenarios run in the target sandbox."""
    return target
