"""Container options: the tool container never runs as root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.containers.spec import (
    ROLE_TOOLS,
    ROLE_WRITE,
    UNPRIVILEGED_USER,
    RepoAccessError,
    SandboxConfig,
    container_options,
    container_user,
)


def test_a_normal_owner_is_kept_for_both_containers(tmp_path: Path) -> None:
    config = SandboxConfig(user="1000:1000")
    assert container_user(config, tmp_path, ROLE_TOOLS) == "1000:1000"
    assert container_user(config, tmp_path, ROLE_WRITE) == "1000:1000"


@pytest.mark.parametrize("user", ["0:0", "0", "root", "root:root"])
def test_root_runs_the_tools_unprivileged_and_the_write_box_as_the_owner(tmp_path: Path, user: str) -> None:
    tmp_path.chmod(0o755)
    config = SandboxConfig(user=user)
    assert container_user(config, tmp_path, ROLE_TOOLS) == UNPRIVILEGED_USER
    assert container_user(config, tmp_path, ROLE_WRITE) == user
    _, options = container_options(config, tmp_path, ROLE_TOOLS, "t", 0.0)
    assert options["user"] == UNPRIVILEGED_USER


def test_a_root_repo_nobody_can_read_is_a_clear_error(tmp_path: Path) -> None:
    tmp_path.chmod(0o750)
    with pytest.raises(RepoAccessError, match="owned by root and not world-readable"):
        container_user(SandboxConfig(user="0:0"), tmp_path, ROLE_TOOLS)


@pytest.mark.skipif(os.getuid() != 0, reason="needs a root-owned directory (run as root)")
def test_the_owner_is_read_from_the_repository(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    assert container_user(SandboxConfig(), tmp_path, ROLE_TOOLS) == UNPRIVILEGED_USER
    assert container_user(SandboxConfig(), tmp_path, ROLE_WRITE) == "0:0"
