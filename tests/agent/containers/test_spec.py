"""Container options: the tool container never runs as root; every hardening option in the create body."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.containers.spec import (
    ROLE_TOOLS,
    ROLE_WRITE,
    UNPRIVILEGED_USER,
    RepoAccessError,
    container_options,
    container_user,
)
from agent.sandboxes.config import SandboxConfig


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
    _, body = container_options(config, tmp_path, ROLE_TOOLS, "t", 0.0)
    assert body["User"] == UNPRIVILEGED_USER


def test_a_root_repo_nobody_can_read_is_a_clear_error(tmp_path: Path) -> None:
    tmp_path.chmod(0o750)
    with pytest.raises(RepoAccessError, match="owned by root and not world-readable"):
        container_user(SandboxConfig(user="0:0"), tmp_path, ROLE_TOOLS)


@pytest.mark.skipif(os.getuid() != 0, reason="needs a root-owned directory (run as root)")
def test_the_owner_is_read_from_the_repository(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    assert container_user(SandboxConfig(), tmp_path, ROLE_TOOLS) == UNPRIVILEGED_USER
    assert container_user(SandboxConfig(), tmp_path, ROLE_WRITE) == "0:0"


@pytest.mark.parametrize(
    ("runtime", "literal"), [("runc", False), ("runsc", True), ("runsc-kvm", True), ("runscx", False)]
)
def test_under_gvisor_a_literal_search_runs_in_the_server(tmp_path: Path, runtime: str, literal: bool) -> None:
    _, body = container_options(SandboxConfig(user="1000:1000", runtime=runtime), tmp_path, ROLE_TOOLS, "t", 0.0)
    server = body["Cmd"][body["Cmd"].index("--") + 1 :]
    assert (server[-2:] == ["--search-engine", "literal"]) is literal
    assert server.count("--search-engine") == int(literal)


def test_the_create_body_holds_every_hardening_option(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    config = SandboxConfig(user="1000:1000", memory="1.5g", cpus=0.5, pids_limit=64, tmpfs_size="64m")
    name, body = container_options(config, tmp_path, ROLE_WRITE, "my task", 100.0, {"codebox.pool": "warm"})
    host = body["HostConfig"]
    assert name.startswith("codebox-my-task-write-")
    assert body["OpenStdin"] and body["StdinOnce"] and body["AttachStdin"] and not body["Tty"]
    assert host["AutoRemove"] is True and host["Init"] is False and host["NetworkMode"] == "none"
    assert host["CapDrop"] == ["ALL"] and host["SecurityOpt"] == ["no-new-privileges"] and host["ReadonlyRootfs"]
    assert host["Memory"] == host["MemorySwap"] == int(1.5 * 2**30)
    assert host["NanoCpus"] == 500_000_000 and host["PidsLimit"] == 64
    assert host["Tmpfs"] == {"/tmp": "rw,exec,nosuid,size=64m"}
    binds = [(m["Type"], m["Source"], m["Target"], m["ReadOnly"]) for m in host["Mounts"]]
    assert binds[1:] == [("bind", str(tmp_path), "/repo", False),
                         ("bind", str((tmp_path / ".git").resolve()), "/repo/.git", True)]
    assert binds[0][2:] == ("/opt/codebox/sandbox", True) and "Binds" not in host
    assert body["User"] == "1000:1000" and body["WorkingDir"] == "/opt/codebox"
    assert body["Labels"]["codebox.expires"] == str(100 + 3600) and body["Labels"]["codebox.pool"] == "warm"
    _, tools = container_options(config, tmp_path, ROLE_TOOLS, "t", 0.0)
    assert [(m["Source"], m["Target"], m["ReadOnly"]) for m in tools["HostConfig"]["Mounts"][1:]] == [
        (str(tmp_path), "/repo", True)]
