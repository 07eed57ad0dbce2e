"""The built-in defaults the parser shows and the models use, importable without pydantic.

`codebox --help` builds its parser from these alone; agent.protocol's TaskSpec takes its
defaults from here too, so there is one source. SandboxConfig (agent.containers.spec) holds
the same container limits (tests/agent/test_defaults.py checks that they agree).
"""

from __future__ import annotations

from typing import Final, Literal, get_args

PolicyName = Literal["read-only", "workspace-write", "ask"]
POLICY_NAMES: Final[tuple[str, ...]] = get_args(PolicyName)
DEFAULT_POLICY: Final = "read-only"

# One task's limits (TaskSpec.max_steps, TaskSpec.timeout_s).
DEFAULT_MAX_STEPS: Final = 30
DEFAULT_TIMEOUT_S: Final = 900.0

# The sandbox container's limits (SandboxConfig.memory, pids_limit, cpus).
DEFAULT_MEMORY: Final = "1g"
DEFAULT_PIDS: Final = 256
DEFAULT_CPUS: Final = 1.0

# Batch tasks at once.
DEFAULT_JOBS: Final = 2
