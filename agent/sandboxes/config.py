"""SandboxConfig: the one model of a sandbox's settings (backend, runtime, image, limits), stdlib only.

A frozen dataclass that checks itself when made: `codebox run`'s early start builds it before
pydantic is imported, and pydantic models embed it as it is (a batch's TaskJob), validating it
with the same ``__post_init__``. Two configs are equal when they make the same sandbox. Every
default is agent.defaults'.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from agent import defaults
from agent.errors import CodeboxError


class SandboxConfigError(CodeboxError, ValueError):
    """A setting the sandbox cannot be made with. ``field`` names it; the message says what is wrong
    and what was given, in one line (a ValueError too: pydantic reports it as a validation error)."""

    def __init__(self, field: str, problem: str, value: object) -> None:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        shown = f'"{value}"' if isinstance(value, str) else format(value, "g") if number else repr(value)
        super().__init__(f"{field}: {problem} (got {shown})")
        self.field = field
        self.problem = problem
        self.value = value


_SIZE = re.compile(r"(\d+(?:\.\d+)?)([bkmgBKMG][bB]?)?")
_UNIT_BYTES = {"b": 1, "k": 2**10, "m": 2**20, "g": 2**30}
MIN_MEMORY_BYTES = 6 * 2**20  # Docker refuses less
# A runtime's name as the engines accept it in their configuration (runc, runsc, runsc-kvm, crun ...).
_RUNTIME_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")


def size_bytes(text: str, what: str = "size") -> int:
    """Bytes of a size in docker's syntax ("512m", "1.5g", "100"); ValueError if it is not one."""
    match = _SIZE.fullmatch(text.strip())
    if not match:
        raise ValueError(f"the {what} {text!r} is not a size (a number with a unit b, k, m or g, e.g. 512m)")
    return int(float(match.group(1)) * _UNIT_BYTES[(match.group(2) or "b").lower()[0]])


def memory_limit(value: str) -> str:
    """A container memory limit in Docker's size syntax, stripped; ValueError (a sentence) if the
    engine would refuse it."""
    match = _SIZE.fullmatch(value.strip())
    if not match:
        raise ValueError("a size is a number with a unit b, k, m or g, e.g. 512m or 2g")
    number, unit = float(match.group(1)), (match.group(2) or "b").lower()[0]
    if number * _UNIT_BYTES[unit] < MIN_MEMORY_BYTES:
        raise ValueError("Docker needs at least 6m of memory")
    return value.strip()


@dataclass(frozen=True)
class SandboxConfig:
    """Where and how a task's tools run: which backend and runtime, which image, within which limits."""

    backend: str = defaults.DEFAULT_BACKEND
    """The container engine (agent.backends.registry): docker, or podman."""
    runtime: str = defaults.DEFAULT_RUNTIME
    """The OCI runtime the engine runs the containers with: runc, runsc (gVisor), or any it lists."""

    image: str = defaults.DEFAULT_IMAGE
    """The sandbox image (python3 >= 3.9 in it; the tool server is mounted, not baked in)."""
    memory: str = defaults.DEFAULT_MEMORY
    """Memory of each container, no swap (Docker's size syntax: 512m, 2g)."""
    pids_limit: int = defaults.DEFAULT_PIDS
    """Processes and threads a container may hold at once."""
    cpus: float = defaults.DEFAULT_CPUS
    """CPUs a container may use."""
    tmpfs_size: str = defaults.DEFAULT_TMPFS_SIZE
    """Size of the container's /tmp (rw, exec, nosuid)."""
    lifetime_s: float = defaults.DEFAULT_LIFETIME_S
    """Cap on a container's life; a task that runs longer gets a fresh one."""
    output_limit: int = defaults.DEFAULT_OUTPUT_LIMIT
    """Bytes per stream the server keeps of a tool's output (head and tail)."""
    call_grace_s: float = defaults.DEFAULT_CALL_GRACE_S
    """The host waits this long past a call's timeout before it kills the container."""
    default_timeout_s: float = defaults.DEFAULT_TOOL_TIMEOUT_S
    """A call's timeout when none is given."""
    user: str | None = None
    """uid:gid of the containers; default: the repository's owner (never root for the tools)."""
    allow_shell: bool = False
    """run_test accepts a shell command line (not only an argv)."""

    def __post_init__(self) -> None:
        for name in ("backend", "runtime", "image", "memory", "tmpfs_size"):
            _need(name, getattr(self, name), isinstance(getattr(self, name), str), "must be a string")
        _need("user", self.user, self.user is None or isinstance(self.user, str), "must be a string")
        _need("allow_shell", self.allow_shell, isinstance(self.allow_shell, bool), "must be true or false")
        for name in ("pids_limit", "output_limit"):
            value = getattr(self, name)
            _need(name, value, isinstance(value, int) and not isinstance(value, bool), "must be an integer")
        for name in ("cpus", "lifetime_s", "call_grace_s", "default_timeout_s"):
            value = getattr(self, name)
            number = isinstance(value, int | float) and not isinstance(value, bool)
            _need(name, value, number and math.isfinite(value), "must be a finite number")
        _need("backend", self.backend, self.backend in defaults.BACKEND_NAMES,
              f"must be one of {', '.join(defaults.BACKEND_NAMES)}")
        _need("runtime", self.runtime, bool(_RUNTIME_NAME.fullmatch(self.runtime)),
              "must be a runtime's name (letters, digits, and _ . + -), e.g. runc or runsc")
        _need("image", self.image, bool(self.image.strip()), "must not be empty")
        pids_problem = defaults.bound_problem("pids", self.pids_limit)
        _need("pids_limit", self.pids_limit, pids_problem is None, pids_problem or "")
        for name in ("cpus", "lifetime_s", "default_timeout_s"):
            _need(name, getattr(self, name), getattr(self, name) > 0, "must be more than 0")
        _need("output_limit", self.output_limit, self.output_limit > 0, "must be more than 0")
        _need("call_grace_s", self.call_grace_s, self.call_grace_s >= 0, "must be at least 0")
        for name in ("memory", "tmpfs_size"):
            try:
                stripped = memory_limit(getattr(self, name)) if name == "memory" else getattr(self, name).strip()
                size_bytes(stripped)
            except ValueError as exc:
                raise SandboxConfigError(name, str(exc), getattr(self, name)) from None
            object.__setattr__(self, name, stripped)

    def replace(self, **changes: Any) -> SandboxConfig:
        """This config with some fields changed (checked like a new one)."""
        return dataclasses.replace(self, **changes)


def _need(name: str, value: object, ok: bool, problem: str) -> None:
    if not ok:
        raise SandboxConfigError(name, problem, value)
