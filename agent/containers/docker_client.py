"""The one way codebox connects to the Docker engine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.errors import CodeboxError

if TYPE_CHECKING:
    import docker

DOCKER_DOWN = (
    "Docker is not answering ({detail}). Start the daemon (e.g. `systemctl start docker` "
    "or `service docker start`) and check that this user can reach its socket "
    "(DOCKER_HOST, or membership in the `docker` group)."
)


def connect(error: type[CodeboxError] = CodeboxError) -> docker.DockerClient:
    """A client that has answered a ping; otherwise ``error`` with what to do."""
    import docker  # here, not at import: `codebox --help` never loads docker-py and requests

    try:
        client = docker.from_env()
        client.ping()
    except (docker.errors.DockerException, OSError) as exc:  # OSError: a socket that refuses
        raise error(DOCKER_DOWN.format(detail=exc)) from exc
    return client
