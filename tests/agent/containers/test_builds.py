"""agent.containers.builds: a build box's options, each one made into the Engine API's create body or refused
(never dropped), and Podman's tmpfs owner."""

from __future__ import annotations

from typing import Any, cast

import pytest

from agent.backends.podman import ULIMITS, PodmanBuilder
from agent.containers.builds import box_body
from agent.containers.engine_api import EngineClient
from agent.errors import SandboxError
from agent.sandboxes.build import BoxOptions

OPTIONS: BoxOptions = {
    "command": ["python3", "-c", "pass"], "user": "65534:65534", "network_mode": "none", "cap_drop": ["ALL"],
    "cap_add": ["CHOWN"], "security_opt": ["no-new-privileges"], "mem_limit": "768m", "memswap_limit": "768m",
    "pids_limit": 99, "nano_cpus": 10**9, "volumes": {"/host/stage": {"bind": "/tmp/b/stage", "mode": "ro"}},
    "tmpfs": {"/opt/codebox-env": "rw,exec,uid=65534,gid=65534,size=1000"}, "labels": {"codebox.task": "env-deps"},
    "working_dir": "/", "environment": {"HOME": "/tmp"},
}


def test_every_option_is_in_the_create_body() -> None:
    body = box_body("base:1", OPTIONS, {"Ulimits": ULIMITS})
    host = body.pop("HostConfig")
    assert body == {"Image": "base:1", "Cmd": ["python3", "-c", "pass"], "Entrypoint": [], "User": "65534:65534",
                    "Labels": {"codebox.task": "env-deps"}, "WorkingDir": "/", "Env": ["HOME=/tmp"]}
    assert host == {"NetworkMode": "none", "CapDrop": ["ALL"], "CapAdd": ["CHOWN"],
                    "SecurityOpt": ["no-new-privileges"], "Memory": 768 * 2**20, "MemorySwap": 768 * 2**20,
                    "PidsLimit": 99, "NanoCpus": 10**9, "Binds": ["/host/stage:/tmp/b/stage:ro"],
                    "Tmpfs": {"/opt/codebox-env": "rw,exec,uid=65534,gid=65534,size=1000"}, "Ulimits": ULIMITS}


@pytest.mark.parametrize(("change", "problem"), [
    ({"read_only": True}, "does not know: read_only"),  # an option added to the box and not here: refused
    ({"network_mode": "bridge"}, "no network"),
    ({"volumes": {"/h": {"bind": "/b", "mode": "rw"}}}, "read-only"),
    ({"mem_limit": "lots"}, "not a size"),
])
def test_an_option_the_builder_cannot_make_is_refused_never_dropped(change: dict[str, Any], problem: str) -> None:
    with pytest.raises((SandboxError, ValueError), match=problem):
        box_body("base:1", cast(BoxOptions, {**OPTIONS, **change}))


def test_podman_mounts_a_tmpfs_owned_by_the_boxs_user_with_U() -> None:
    builder = PodmanBuilder(EngineClient.from_env(), "podman")
    assert builder.tmpfs_options("rw,exec,uid=65534,gid=65534,size=1000", "65534:65534") == "rw,exec,size=1000,U"
    # Another owner than the box's: root's then, until the box's root step gives it away.
    assert builder.tmpfs_options("rw,uid=65534,gid=65534", "0:0") == "rw"
    assert builder.tmpfs_options("rw,exec,size=1000", "0:0") == "rw,exec,size=1000"
