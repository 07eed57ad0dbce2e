"""The tests' way to a container engine: codebox's own Engine API client (agent.containers.engine_api), as the
code under test reaches it; no docker-py. Short runs, execs, labelled containers and images, a build."""

from __future__ import annotations

import contextlib
import io
import tarfile
import time
from pathlib import Path
from typing import Any

from agent.containers.engine_api import EngineClient, NotFound

SLOW_S = 900.0  # a busy daemon (fuse-overlayfs) removes and loads images slowly


def docker(timeout_s: float = SLOW_S) -> EngineClient:
    """A client of the Docker daemon at DOCKER_HOST."""
    return EngineClient.from_env(timeout_s)


def podman() -> EngineClient:
    """A client of codebox's Podman service (runc; started if none answers)."""
    from agent.backends.podman import PodmanService
    from agent.defaults import DEFAULT_RUNTIME
    from agent.errors import SandboxError

    return PodmanService(DEFAULT_RUNTIME).client(SandboxError)


def run(client: EngineClient, image: str, argv: list[str], user: str = "", binds: list[str] | None = None,
        host_config: dict[str, Any] | None = None, timeout_s: float = 120) -> str:
    """``docker run --rm --network none IMAGE ARGV``: its standard output; AssertionError when it exits non-zero."""
    body: dict[str, Any] = {"Image": image, "Cmd": argv, "Entrypoint": [], "User": user,
                            "HostConfig": {"NetworkMode": "none", "Binds": binds or [], **(host_config or {})}}
    container_id = client.create_container(body)
    try:
        client.start(container_id)
        status = client.wait(container_id, timeout_s)
        out = client.logs(container_id, stdout=True, stderr=status != 0).decode("utf-8", "replace")
    finally:
        with contextlib.suppress(NotFound):
            client.remove(container_id, force=True)
    assert status == 0, f"{argv} exited {status} in {image}: {out[-2000:]}"
    return out


def exec_in(client: EngineClient, container_id: str, argv: list[str], user: str = "") -> tuple[int | None, bytes]:
    """``docker exec``: its exit status and what it wrote (stdout and stderr together)."""
    exec_id = client.exec_create(container_id, argv, user=user)
    output = b"".join(data for _stream, data in client.exec_start(exec_id))
    return client.exec_inspect(exec_id).get("ExitCode"), output


def containers(client: EngineClient, *labels: str) -> list[dict[str, Any]]:
    """Every container, in any state, that carries all of ``labels`` ("key" or "key=value")."""
    return client.containers(all=True, filters={"label": list(labels)})


def images(client: EngineClient, *labels: str) -> list[dict[str, Any]]:
    """Every image that carries all of ``labels``."""
    return client.images(filters={"label": list(labels)})


def image_id(client: EngineClient, name: str) -> str | None:
    """The id (sha256:...) of the image ``name``; None when there is none."""
    try:
        return str(client.inspect_image(name)["Id"])
    except NotFound:
        return None


def remove_image(client: EngineClient, name: str) -> None:
    """Remove an image this test made (untag it); one already gone is fine."""
    with contextlib.suppress(NotFound):
        client.remove_image(name)


def build(client: EngineClient, folder: Path, tag: str) -> str:
    """``docker build --network none -t TAG FOLDER`` (its Dockerfile); the image's id."""
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        tar.add(folder, arcname=".")
    for _message in client.build(context.getvalue(), {"t": tag, "networkmode": "none", "rm": 1, "forcerm": 1}):
        pass
    found = image_id(client, tag)
    assert found is not None, f"the build of {tag} reported no error but there is no image"
    return found


def wait_gone(client: EngineClient, container_id: str, timeout_s: float) -> bool:
    """True once the container is gone (removed), False if it is still there at the deadline."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            client.inspect_container(container_id)
        except NotFound:
            return True
        time.sleep(0.1)
    return False
