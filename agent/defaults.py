"""The built-in defaults the parser shows and the models use, importable without pydantic.

`codebox --help` builds its parser from these alone; agent.protocol's TaskSpec and the
sandbox's settings (agent.sandboxes.config.SandboxConfig) take their defaults from here too, so
there is one source.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

PolicyName = Literal["read-only", "workspace-write", "ask"]
POLICY_NAMES: Final[tuple[str, ...]] = get_args(PolicyName)
DEFAULT_POLICY: Final = "read-only"

# One task's limits (TaskSpec.max_steps, TaskSpec.timeout_s).
DEFAULT_MAX_STEPS: Final = 30
DEFAULT_TIMEOUT_S: Final = 900.0

# Where the sandbox runs (SandboxConfig.backend, .runtime): the container engine, and the OCI
# runtime it runs the containers with (runc; runsc is gVisor; any other the engine lists).
BackendName = Literal["docker", "podman"]
BACKEND_NAMES: Final[tuple[str, ...]] = get_args(BackendName)
DEFAULT_BACKEND: Final = "docker"
DEFAULT_RUNTIME: Final = "runc"

# Where the repository is inside every sandbox and build box (read-only unless a policy writes).
REPO_MOUNT: Final = "/repo"

# The sandbox container's image and limits (SandboxConfig's fields).
DEFAULT_IMAGE: Final = "codebox-sandbox:latest"
DEFAULT_MEMORY: Final = "1g"
DEFAULT_PIDS: Final = 256
MIN_PIDS: Final = 16
DEFAULT_CPUS: Final = 1.0
DEFAULT_TMPFS_SIZE: Final = "512m"  # /tmp is rw,exec,nosuid,size=...
DEFAULT_LIFETIME_S: Final = 3600.0  # cap on a container's life
DEFAULT_OUTPUT_LIMIT: Final = 32_000  # bytes per stream kept by the server
DEFAULT_CALL_GRACE_S: Final = 5.0  # host deadline = request timeout + grace
DEFAULT_TOOL_TIMEOUT_S: Final = 60.0  # a tool call's timeout when the model gives none
# An environment build, from its first resolve to its image: the deadline of its containers and steps.
DEFAULT_ENV_BUILD_TIMEOUT_S: Final = 1800.0
# What may come out of an environment build's box, counted on the host: a box past a cap is removed and the build
# fails saying so. A layer of the dependencies (a venv: torch with CUDA's libraries is ~7 GB), the project's layer
# (its install and what its build generated: at most 2 GiB of files in the box), a step's log (only its last 64 KB
# are kept; the cap bounds the time spent reading the rest).
ENV_LAYER_MAX_BYTES: Final = 16 * 1024**3
ENV_PROJECT_LAYER_MAX_BYTES: Final = 3 * 1024**3
ENV_STEP_LOG_MAX_BYTES: Final = 256 * 1024**2

# Batch tasks at once.
DEFAULT_JOBS: Final = 2

# `codebox eval`: one instance's test run; and what run_test keeps of its output (bytes per stream, head
# + tail) for a run killed before it bundled its whole log (the bundle is agent/eval/pytest_run.py's).
DEFAULT_EVAL_TIMEOUT_S: Final = 1800.0
EVAL_LOG_LIMIT: Final = 512_000

# Seconds per model request (OpenAIConfig.request_timeout_s; when streaming, the longest silence).
DEFAULT_REQUEST_TIMEOUT_S: Final = 60.0
