"""An environment built on a chosen Python's image: resolved for that interpreter's version (uv's --python-version),
built in that base, and keyed by it."""

from __future__ import annotations

import re
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


def test_a_preferred_version_that_cannot_be_had_is_left_out_with_a_note(tmp_path: Path,
                                                                        local_index: IndexConfig) -> None:
    """SWE-bench's pip_packages are what it installs first; the project's install may replace them."""
    from agent.env.recipe import Recipe

    repo = write(tmp_path, projects.FLAT)
    recipe = Recipe(prefer=["beta==7.0", "gamma==3.0"])  # no beta 7.0 anywhere; gamma 3.0 is there
    info = ensure_env(EnvRequest(repo=repo, base_image=ensure_suite_sandbox("3.9"), index=local_index,
                                 recipe=recipe, python="3.9"))
    try:
        assert "gamma==3.0" in info.installed and "beta==2.0" in info.installed
        assert any(n.startswith("preferred beta==7.0 left out: cannot resolve") for n in info.notes), info.notes
    finally:
        remove_image(docker(), info.image)


def test_a_debian_package_for_bullseye_comes_from_bullseye_not_the_host_s_release(tmp_path: Path,
                                                                                  local_index: IndexConfig) -> None:
    from agent.env.recipe import Recipe

    repo = write(tmp_path, projects.FLAT)
    info = ensure_env(EnvRequest(repo=repo, base_image=ensure_suite_sandbox("3.9"), index=local_index,
                                 recipe=Recipe(apt=["less"]), python="3.9"))
    try:
        assert "less" in info.apt
        with Sandbox(repo, SandboxConfig(image=info.run_image), task_id="apt-3-9") as box:
            reply = box.call("run_test", {"argv": ["dpkg-query", "-W", "-f", "${Version}", "less"], "timeout_s": 60})
        assert reply.ok and re.search(r"\n551-\S*deb11\S*$", reply.output.rstrip()), reply.output  # bookworm: 590
    finally:
        remove_image(docker(), info.image)
