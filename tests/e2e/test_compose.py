"""compose.yaml stays valid and keeps the same-path mount the sandbox client depends on."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose is not installed")
def test_compose_config_mounts_the_project_at_the_same_path() -> None:
    env = {**os.environ, "PWD": str(ROOT), "CODEBOX_JOBS": "3"}
    out = subprocess.run(
        ["docker-compose", "-f", str(ROOT / "compose.yaml"), "config"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    ).stdout
    # The runner hands host paths to the Docker daemon: the project must be at the same path inside.
    assert f"- {ROOT}:{ROOT}:rw" in out
    assert "- /var/run/docker.sock:/var/run/docker.sock:rw" in out
    assert f"working_dir: {ROOT}" in out
    assert "- agent.cli.parser\n    - batch\n" in out and "- '3'" in out
    # The sandbox image is built without network, and never runs with one.
    assert "network: none" in out and "network_mode: none" in out
