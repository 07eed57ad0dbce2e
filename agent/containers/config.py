"""SandboxConfig: a sandbox's image and limits, validated (pydantic).

Its defaults are agent.defaults'; its memory rule is agent.containers.spec.memory_limit, which
the pydantic-free PlainSandboxConfig (the early start of `codebox run`) applies too.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from agent import defaults
from agent.containers.spec import memory_limit


class SandboxConfig(BaseModel):
    image: str = defaults.DEFAULT_IMAGE
    memory: str = defaults.DEFAULT_MEMORY
    pids_limit: int = Field(default=defaults.DEFAULT_PIDS, ge=defaults.MIN_PIDS)
    cpus: float = Field(default=defaults.DEFAULT_CPUS, gt=0)
    tmpfs_size: str = defaults.DEFAULT_TMPFS_SIZE  # /tmp is rw,exec,nosuid,size=...
    lifetime_s: float = Field(default=defaults.DEFAULT_LIFETIME_S, gt=0)  # cap on a container's life
    output_limit: int = Field(default=defaults.DEFAULT_OUTPUT_LIMIT, gt=0)  # bytes per stream kept by the server
    call_grace_s: float = Field(default=defaults.DEFAULT_CALL_GRACE_S, ge=0)  # host deadline = timeout + grace
    default_timeout_s: float = Field(default=defaults.DEFAULT_TOOL_TIMEOUT_S, gt=0)
    user: str | None = None  # default: "uid:gid" owning the repo dir on the host
    allow_shell: bool = False

    @field_validator("memory")
    @classmethod
    def _memory_is_a_size(cls, value: str) -> str:
        """Docker's own size syntax, found before any container is created."""
        return memory_limit(value)
