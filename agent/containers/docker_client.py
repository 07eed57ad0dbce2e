"""docker-py, for the rare paths that need it: image builds, environment builds, the Ray node's
image shipping. The task start and run path uses ``engine_api`` (no docker-py, no requests)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.containers.engine_api import DOCKER_DOWN
from agent.errors import CodeboxError

if TYPE_CHECKING:
    import docker

__all__ = ["DOCKER_DOWN", "connect"]


def connect(error: type[CodeboxError] = CodeboxError) -> docker.DockerClient:
    """A docker-py client that has answered a ping; otherwise ``error`` with what to do."""
    import docker  # here, not at import: `codebox --help` never loads docker-py and requests

    try:
        client = docker.from_env()
        client.ping()
    except (docker.errors.DockerException, OSError) as exc:  # OSError: a socket that refuses
        raise error(DOCKER_DOWN.format(detail=exc)) from exc
    return client
