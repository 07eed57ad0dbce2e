"""An environment built on a chosen Python's image: resolved for that interpreter's version (uv's --python-version),
built in that base, and keyed by it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.containers.pythons import ensure_suite_sandbox
from agent.containers.sandbox import Sandbox
from agent.env.install import images
from agent.env.install.ensure import EnvRequest, ensure_env
from agent.env.resolve.resolve import IndexConfig
from agent.sandboxes.config import SandboxConfig
from tests.agent.env import projects
from tests.agent.env.projects import write
from tests.engine import docker, remove_image

pytestmark = pytest.mark.docker


def test_an_environment_on_bullseye_is_resolved_and_built_for_python_3_9(tmp_path: Path,
                                                                         local_index: IndexConfig) -> None:
    base = ensure_suite_sandbox("3.9")
    repo = write(tmp_path, projects.FLAT)
    logged: list[str] = []
    info = ensure_env(EnvRequest(repo=repo, base_image=base, index=local_index, python="3.9"), logged.append)
    try:
        assert info.built and info.base_image == base and info.python.startswith("3.9.")
        assert any("for Python 3.9." in line for line in logged), logged
        entry = images.find(images.EngineImages.connect("docker"), info.image)
        assert entry is not None and entry.base == base
        with Sandbox(repo, SandboxConfig(image=info.run_image), task_id="env-3-9") as box:
            reply = box.call("run_test", {"argv": ["python3", "-c", "import sys, alpha, flatproj; "
                                                   "print(sys.version_info[:2], sys.prefix)"], "timeout_s": 60})
        assert reply.ok and "(3, 9) /opt/codebox-env" in reply.output, reply.output
        again = ensure_env(EnvRequest(repo=repo, base_image=base, index=local_index, python="3.9"))
        assert again.image == info.image and not again.built  # the same Python, the same key: a hit
    finally:
        remove_image(docker(), info.image)
