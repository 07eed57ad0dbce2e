"""The sandbox backends by name: the one way the runner, eval, the pool, the engines and `codebox gc`
reach one. A backend's module is imported on its first use (Docker's has no docker-py, no
pydantic; Podman's is never imported by a Docker run)."""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING

from agent.defaults import BACKEND_NAMES
from agent.errors import SandboxError

if TYPE_CHECKING:  # annotations only: an environment's cache hit asks for a backend and loads neither
    from agent.sandboxes.base import Backend
    from agent.sandboxes.config import SandboxConfig

# name -> the module whose BACKEND it is.
MODULES: dict[str, str] = {
    "docker": "agent.backends.docker",
    "podman": "agent.backends.podman",
}
assert tuple(MODULES) == BACKEND_NAMES  # one list of names (agent.defaults); here, where each lives

_LOCK = threading.Lock()


def get_backend(name: str) -> Backend:
    """The backend called ``name``; SandboxError for a name there is none of."""
    module = MODULES.get(name)
    if module is None:
        raise SandboxError(f"no sandbox backend {name!r}; there are: {', '.join(MODULES)}")
    with _LOCK:  # two threads' first use import it once
        backend: Backend = importlib.import_module(module).BACKEND
    return backend


def backend_for(config: SandboxConfig) -> Backend:
    """The backend a config names (its name was checked when the config was made)."""
    return get_backend(config.backend)
