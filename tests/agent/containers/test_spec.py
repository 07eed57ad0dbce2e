"""Container options: the tool container never runs as root; the pydantic-free config makes the same body."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent.containers.config import SandboxConfig
from agent.containers.spec import (
    ROLE_TOOLS,
    ROLE_WRITE,
    UNPRIVILEGED_USER,
    PlainSandboxConfig,
    RepoAccessError,
    container_options,
    container_user,
    memory_limit,
    size_bytes,
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
    assert host["Binds"][1:] == [f"{tmp_path}:/repo:rw", f"{(tmp_path / '.git').resolve()}:/repo/.git:ro"]
    assert host["Binds"][0].endswith(":/opt/codebox/sandbox:ro")
    assert body["User"] == "1000:1000" and body["WorkingDir"] == "/opt/codebox"
    assert body["Labels"]["codebox.expires"] == str(100 + 3600) and body["Labels"]["codebox.pool"] == "warm"
    _, tools = container_options(config, tmp_path, ROLE_TOOLS, "t", 0.0)
    assert tools["HostConfig"]["Binds"][1:] == [f"{tmp_path}:/repo:ro"]


@pytest.mark.parametrize(("text", "expected"), [("1g", 2**30), ("512m", 512 * 2**20), ("1.5g", 3 * 2**29),
                                                 ("100", 100), ("2gb", 2 * 2**30), ("64K", 64 * 1024)])
def test_sizes_in_dockers_syntax(text: str, expected: int) -> None:
    assert size_bytes(text) == expected


def test_the_plain_config_makes_the_same_create_body(tmp_path: Path) -> None:
    options = {"user": "1000:1000", "memory": "1.5g", "cpus": 0.5, "pids_limit": 64, "image": "some:image"}
    name_a, plain = container_options(PlainSandboxConfig(**options), tmp_path, ROLE_TOOLS, "t", 100.0)
    name_b, validated = container_options(SandboxConfig(**options), tmp_path, ROLE_TOOLS, "t", 100.0)
    assert plain == validated and name_a != name_b  # the names differ only by their random suffix
    assert name_a.rsplit("-", 1)[0] == name_b.rsplit("-", 1)[0] == "codebox-t-tools"


@pytest.mark.parametrize("options", [{"memory": "lots"}, {"memory": "1m"}, {"memory": ""}, {"memory": "5000k"},
                                     {"pids_limit": 15}, {"cpus": 0.0}, {"cpus": -1.0}, {"lifetime_s": 0.0},
                                     {"output_limit": 0}, {"call_grace_s": -1.0}, {"default_timeout_s": 0.0}])
def test_the_plain_config_refuses_what_sandbox_config_refuses(options: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        SandboxConfig(**options)
    with pytest.raises(ValueError):
        PlainSandboxConfig(**options)


def test_one_memory_rule_for_both_configs() -> None:
    assert memory_limit(" 512m ") == SandboxConfig(memory=" 512m ").memory == PlainSandboxConfig(memory=" 512m ").memory
    with pytest.raises(ValueError, match="at least 6m") as plain:
        memory_limit("5m")
    with pytest.raises(ValidationError) as validated:
        SandboxConfig(memory="5m")
    assert str(plain.value) in str(validated.value)
