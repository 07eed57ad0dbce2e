"""Engine: a daemon that speaks Docker's Engine API (Docker itself, or Podman's compatible service),
and what its sandbox containers need beyond the common create body. No pydantic."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from agent.containers.engine_api import EngineClient, connect_engine
from agent.errors import CodeboxError

Connect = Callable[[type[CodeboxError]], EngineClient]


class Engine(NamedTuple):
    """Where sandbox containers are created, and how they differ there."""

    name: str
    """"docker" or "podman": said in messages, and the key of the once-per-process reap."""
    connect: Connect
    """A client that has answered (``error`` with what to do when none does)."""
    host_config: Mapping[str, Any] = {}
    """Merged into every container's HostConfig (Podman: explicit rlimits)."""


def _docker(error: type[CodeboxError]) -> EngineClient:
    return connect_engine(error)


DOCKER = Engine("docker", _docker)
