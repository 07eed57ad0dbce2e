"""The built-in defaults, and every user setting declared once (SETTINGS), importable without pydantic.

`codebox --help` builds its parser from these alone; agent.protocol's TaskSpec and the
sandbox's settings (agent.sandboxes.config.SandboxConfig) take their defaults and bounds from here
too, so there is one source.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NamedTuple, TypedDict, get_args

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
# The environments a build tries (agent/env/read/candidates.py), and the seconds each may take. 4: flask 2.3 offers
# 4 after equal sets are merged (its tox env, a minimum-pins file, its dev file, the project alone) and few
# projects offer more; a candidate that fails to resolve costs one resolve (1-3 s), so the cap bounds the builds
# that fail late (an sdist that does not compile). 900 s: half the build deadline, so the fallbacks after a slow
# first candidate keep the other half.
DEFAULT_ENV_CANDIDATES: Final = 4
DEFAULT_ENV_CANDIDATE_TIMEOUT_S: Final = 900.0
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

# run_test: seconds a test run may take when the model names none, and the most it may ask for.
DEFAULT_TEST_TIMEOUT_S: Final = 300.0
DEFAULT_MAX_TEST_TIMEOUT_S: Final = 600.0


# --- the settings a user gives once (flag, CODEBOX_<KEY>, a config file), declared once ----------------------

SettingKind = Literal["text", "integer", "number", "choice", "list"]


class Setting(NamedTuple):
    """One setting: its default, what it holds and within which bounds, what an untrusted project may do with
    it, and its help line. The flags (agent.cli.parser), the config files' checks (agent.settings.sources), the
    trust rules (agent.settings.rules), the models' bounds (agent.protocol, agent.sandboxes.config) and the
    docs' table are all made from it."""

    default: Any
    kind: SettingKind
    help: str
    project: str = "at_most"
    """What an untrusted project may do: "at_most" (lower it), "never: WHY", or a rule of agent.settings.rules."""
    at_least: float | None = None
    more_than: float | None = None
    at_most: float | None = None
    choices: tuple[str, ...] = ()


def _never(why: str) -> str:
    return f"never: {why}"


SETTINGS: Final[dict[str, Setting]] = {
    "model": Setting(None, "text", "model name for an OpenAI-compatible API, or scripted:FILE",
                     _never("it chooses the model")),
    "base_url": Setting(None, "text", "OpenAI-compatible endpoint (default: OpenAI's)",
                        _never("it redirects the model's requests, and the API key with them")),
    "api_key_env": Setting(None, "text", "the variable that holds the API key (default OPENAI_API_KEY)",
                           _never("it chooses which of your variables is sent as the API key")),
    "api": Setting(None, "choice", "Chat Completions (default) or Responses", _never("it chooses the API"),
                   choices=("chat", "responses")),
    "request_timeout": Setting(None, "number", f"seconds per model request (default {DEFAULT_REQUEST_TIMEOUT_S:g})",
                               "request_timeout", more_than=0),
    "temperature": Setting(None, "number", "sampling temperature", _never("it changes how the model samples"),
                           at_least=0, at_most=2),
    "policy": Setting(DEFAULT_POLICY, "choice", "what the model may write: nothing (read-only), the --allow paths "
                      "(workspace-write), or what you approve (ask)", "policy", choices=POLICY_NAMES),
    "allow": Setting([], "list", "writable paths, gitignore-style globs", "allow"),
    "deny": Setting([], "list", "paths never written, gitignore-style globs", "deny"),
    "test_cmd": Setting(None, "text", 'the test command run_test runs, e.g. "python3 -m pytest -q"',
                        _never("it is a command")),
    "test_timeout": Setting(DEFAULT_TEST_TIMEOUT_S, "number", "seconds a run_test call may take when the model "
                            "names none", more_than=0),
    "max_test_timeout": Setting(DEFAULT_MAX_TEST_TIMEOUT_S, "number", "the most seconds a run_test call may take, "
                                "whatever the model asks", more_than=0),
    "max_steps": Setting(DEFAULT_MAX_STEPS, "integer", "model steps before a run stops", at_least=1),
    "timeout": Setting(DEFAULT_TIMEOUT_S, "number", "wall-clock budget per task, seconds", more_than=0),
    "max_total_tokens": Setting(None, "integer", "tokens a task may spend (none: no limit)", at_least=1),
    "max_cost": Setting(None, "number", "what a task may cost, at the prices below (none: no limit)", more_than=0),
    "price_input": Setting(None, "number", "price per million input tokens",
                           _never("prices are facts about your account"), at_least=0),
    "price_output": Setting(None, "number", "price per million output tokens",
                            _never("prices are facts about your account"), at_least=0),
    "image": Setting(None, "text", f"sandbox image (default {DEFAULT_IMAGE})",
                     _never("it chooses what runs in the sandbox")),
    "memory": Setting(DEFAULT_MEMORY, "text", "container memory limit, e.g. 512m or 2g", "memory"),
    "pids": Setting(DEFAULT_PIDS, "integer", "container process limit", at_least=MIN_PIDS),
    "cpus": Setting(DEFAULT_CPUS, "number", "container CPU limit", at_least=0.01),  # Docker's least
    "backend": Setting(DEFAULT_BACKEND, "choice", "sandbox backend: docker or podman",
                       _never("it chooses what isolates the sandbox"), choices=BACKEND_NAMES),
    "runtime": Setting(DEFAULT_RUNTIME, "text", "OCI runtime of the sandbox: runc, runsc (gVisor), or any the "
                       "engine lists", _never("it chooses what isolates the sandbox")),
    "jobs": Setting(DEFAULT_JOBS, "integer", "batch tasks at once", at_least=1),
    "env_candidates": Setting(DEFAULT_ENV_CANDIDATES, "integer", "environments an env build tries, closest to the "
                              "project's CI first (tox test env or test extra, test requirements file, the rest, "
                              "the project alone)", at_least=1),
    "env_candidate_timeout": Setting(DEFAULT_ENV_CANDIDATE_TIMEOUT_S, "number", "seconds one candidate "
                                     "environment may take to resolve and install before the next is tried",
                                     more_than=0),
    "python": Setting(None, "text", "the sandbox's Python, X.Y (default: the dataset's spec, else the Python "
                      "current on the task's date that the project's requires-python allows)",
                      _never("it chooses what runs in the sandbox")),
    "python_pull": Setting("no", "choice", "yes: a Python no registered image or Debian suite provides comes "
                           "from a registry (python:X.Y-slim)", _never("it sends traffic to a registry"),
                           choices=("no", "yes")),
    "python_images": Setting([], "list", "images registered per Python version, X.Y=IMAGE (also `codebox image "
                             "python X.Y --image IMAGE`)", _never("it chooses what runs in the sandbox")),
}


class Bounds(TypedDict, total=False):
    """A setting's bounds as pydantic's Field takes them."""

    ge: float
    gt: float
    le: float


def field_bounds(key: str) -> Bounds:
    """A setting's bounds as pydantic's Field takes them (ge, gt, le): a model field holding it checks the same."""
    setting = SETTINGS[key]
    bounds = Bounds()
    if setting.at_least is not None:
        bounds["ge"] = setting.at_least
    if setting.more_than is not None:
        bounds["gt"] = setting.more_than
    if setting.at_most is not None:
        bounds["le"] = setting.at_most
    return bounds


def bound_problem(key: str, number: float) -> str | None:
    """What is wrong with ``number`` as the value of ``key`` ("must be at least 1"), or None when it is in bounds."""
    setting = SETTINGS[key]
    if setting.at_least is not None and number < setting.at_least:
        return f"must be at least {setting.at_least:g}"
    if setting.more_than is not None and number <= setting.more_than:
        return f"must be more than {setting.more_than:g}"
    if setting.at_most is not None and number > setting.at_most:
        return f"must be at most {setting.at_most:g}"
    return None
