"""The registry and the backends' own checks, without an engine: names, the runtime check and what
it tells the user, Podman's refusal of a rootless cgroup v1 host, the per-runtime services."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from agent.backends.registry import MODULES, backend_for, get_backend
from agent.containers.engine_api import Endpoint, EngineClient
from agent.errors import SandboxError
from agent.sandboxes.config import SandboxConfig


class FakeClient(EngineClient):
    """Answers /info from a dict; nothing is sent anywhere."""

    def __init__(self, info: dict[str, Any], url: str = "unix:///fake.sock", unix_path: str = "/fake.sock") -> None:
        super().__init__(Endpoint(url=url, unix_path=unix_path))
        self._info = info
        self.asked = 0

    def info(self) -> dict[str, Any]:
        self.asked += 1
        return self._info


def test_every_name_is_a_backend_and_an_unknown_one_a_clear_error() -> None:
    assert {get_backend(name).name for name in MODULES} == {"docker", "podman"}
    assert backend_for(SandboxConfig(backend="podman")) is get_backend("podman")
    with pytest.raises(SandboxError, match="no sandbox backend 'lxc'; there are: docker, podman"):
        get_backend("lxc")


def test_docker_says_how_to_register_a_missing_runtime_and_asks_once() -> None:
    docker: Any = get_backend("docker")  # the Docker backend's own helpers, beyond the Protocol
    client = FakeClient({"Runtimes": {"runc": {}, "io.containerd.runc.v2": {}}}, url="unix:///fake-docker.sock")
    docker.check_runtime(client, "runc")
    with pytest.raises(SandboxError) as missing:
        docker.check_runtime(client, "runsc")
    text = str(missing.value)
    assert "docker has no runtime 'runsc' (it has: io.containerd.runc.v2, runc)" in text
    assert '"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}}' in text
    assert "apt-get install runsc" in text and "kill -HUP $(pidof dockerd)" in text and "\n" not in text
    assert client.asked == 1  # the runtimes are asked once per process and endpoint


def test_podman_lists_only_the_runtimes_it_can_run_and_refuses_a_rootless_cgroup_v1_host() -> None:
    podman: Any = get_backend("podman")
    listed = FakeClient({"Runtimes": {"runc": {"path": "/bin/sh"}, "kata": {"path": "/no/such/kata-runtime"}}})
    assert podman.runtimes(listed) == frozenset({"runc"})
    with pytest.raises(SandboxError, match="ignores memory, process and CPU limits"):
        podman._check_limits_hold(FakeClient({"CgroupVersion": "1"}))
    podman._check_limits_hold(FakeClient({"CgroupVersion": "2"}))


def test_podman_runs_each_runtime_in_a_service_of_its_own() -> None:
    podman: Any = get_backend("podman")
    runc, runsc = podman.engine_for("runc"), podman.engine_for("runsc")
    assert runc is podman.engine_for("runc") and runc.connect is not runsc.connect
    assert runc.host_config["Ulimits"] == runsc.host_config["Ulimits"]
    service = podman._services["runsc"]
    assert service._runtime_options() == ["--runtime=runsc", "--runtime-flag=network=none"]
    assert podman._services["runc"]._runtime_options() == []


def test_podman_s_runtimes_are_asked_once_per_service_and_again_of_a_new_one(tmp_path: Path) -> None:
    """Podman's /info takes ~0.3 s: the list is kept beside the service's socket, for as long as that socket is
    the same one (a service that ended and started again binds a new one)."""
    podman: Any = get_backend("podman")
    path = tmp_path / "runc.sock"

    def bind() -> socket.socket:
        path.unlink(missing_ok=True)
        listening = socket.socket(socket.AF_UNIX)
        listening.bind(str(path))
        return listening

    info = {"Runtimes": {"runc": {"path": "/bin/sh"}, "kata": {"path": "/no/such/kata-runtime"}}}
    first = bind()
    try:
        asking = FakeClient(info, url=f"unix://{path}", unix_path=str(path))
        assert podman.runtimes(asking) == frozenset({"runc"}) and asking.asked == 1
        again = FakeClient(info, url=f"unix://{path}", unix_path=str(path))
        assert podman.runtimes(again) == frozenset({"runc"}) and again.asked == 0  # this process or the next
        (tmp_path / "runc.sock.runtimes.json").write_text("{not json")
        broken = FakeClient(info, url=f"unix://{path}", unix_path=str(path))
        assert podman.runtimes(broken) == frozenset({"runc"}) and broken.asked == 1  # asked, and kept anew
    finally:
        first.close()
    second = bind()  # another service at the same path
    try:
        moved = {"Runtimes": {"runc": {"path": "/bin/sh"}, "runsc": {"path": "/bin/true"}}}
        renewed = FakeClient(moved, url=f"unix://{path}", unix_path=str(path))
        assert podman.runtimes(renewed) == frozenset({"runc", "runsc"}) and renewed.asked == 1
    finally:
        second.close()
