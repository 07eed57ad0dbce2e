"""Every structure that crosses a boundary: model, sandbox, events, reports, task files.

All of them are pydantic v2 models, so they serialize to JSON and back losslessly.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from agent.defaults import DEFAULT_MAX_STEPS, DEFAULT_POLICY, DEFAULT_TIMEOUT_S, PolicyName, field_bounds
from agent.env.info import EnvInfo as EnvInfo  # re-exported: its home keeps a cache hit light
from agent.env.python.choice import PythonChoice as PythonChoice  # re-exported: what a report records
from agent.env.recipe import EnvSpec as EnvSpec  # re-exported: a task's env object
from agent.sandboxes.result import Outcome


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


# --- history -------------------------------------------------------------------------------------


class ToolCall(BaseModel):
    """One call the model asked for.

    ``arguments`` is the parsed JSON object. When the model sent something that is not a
    JSON object, ``arguments`` is empty, ``raw_arguments`` keeps what it sent and
    ``parse_error`` says what was wrong: the loop answers with an error result.
    """

    id: str = Field(default_factory=lambda: new_id("call"))
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None
    parse_error: str | None = None


class UserMessage(BaseModel):
    role: Literal["user"] = "user"
    content: str


class AssistantMessage(BaseModel):
    """Text, tool calls, or both (models may explain and call in one reply)."""

    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)


class ToolResultMessage(BaseModel):
    role: Literal["tool"] = "tool"
    call_id: str
    name: str
    content: str
    is_error: bool = False


Message = Annotated[UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")]
MessageList: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def message_size(msg: Message) -> int:
    """A message's size in characters: what the history's budget and the token estimate count."""
    if isinstance(msg, AssistantMessage):
        size = len(msg.content or "")
        for call in msg.tool_calls:
            size += len(call.name) + len(call.raw_arguments or "") + len(str(call.arguments))
        return size
    return len(msg.content)


# --- model ---------------------------------------------------------------------------------------


UsageSource = Literal["server", "estimated", "mixed"]


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    # Whose count this is: the server's (it passed agent.model.usage's checks), codebox's own
    # estimate (the server sent none, or an implausible one), or a sum of both kinds.
    source: UsageSource | None = None

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            source=_sources(self.source, other.source),
        )


def _sources(a: UsageSource | None, b: UsageSource | None) -> UsageSource | None:
    if a is None or a == b:
        return b
    return a if b is None else "mixed"


class ModelOutput(BaseModel):
    """One reply: a final message, tool calls, or text together with tool calls.

    ``finish_reason`` is kept as the API said it; ``length`` means the reply was cut off
    and must not be taken as a final answer.
    """

    message: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None


class ToolSpec(BaseModel):
    """What the model is told about a tool: the JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    @classmethod
    def from_args_model(cls, name: str, description: str, args_model: type[BaseModel]) -> ToolSpec:
        schema = args_model.model_json_schema()
        schema.pop("title", None)
        return cls(name=name, description=description, parameters=schema)


# --- events --------------------------------------------------------------------------------------

EventType = Literal[
    "turn.start",  # the run began: goal, task id
    "tool.start",  # a call passed validation and the policy decided: arguments, decision
    "tool.end",  # the result exactly as the model sees it
    "message",  # the model's text (the final message, or text next to tool calls)
    "message.delta",  # a piece of the model's text while it streams (transient: see TRANSIENT_EVENTS)
    "note",  # a note codebox sent to the model in the history (after an empty or cut-off reply)
    "model.retry",  # a model request failed and is retried: attempt, wait_s, reason
    "model.error",  # the model could not be reached or refused: no more retries
    "model.fallback",  # the client changed how it asks for the rest of the run (unstreamed): reason, said
    "context.trimmed",  # old tool results were shortened to fit the budget
    "usage.estimated",  # the server's usage was implausible: codebox's estimate is counted (reason, reported, usage)
    "note",  # a note the loop sent to the model in the user's turn (text)
    "turn.end",  # the run ended: reason, and the report
]


# Live-only events: a console shows them, files skip them (the whole reply follows as "message").
TRANSIENT_EVENTS: frozenset[str] = frozenset({"message.delta"})


class AgentEvent(BaseModel):
    type: EventType
    task_id: str
    seq: int
    step: int
    time: float = Field(default_factory=time.time)
    data: dict[str, Any] = Field(default_factory=dict)


# --- tasks and reports ---------------------------------------------------------------------------

# PolicyName (read-only, workspace-write, ask) lives in agent.defaults: the parser needs it without pydantic.


class TaskSpec(BaseModel):
    """One task: a line of a batch file, or what `codebox run` builds from its flags."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: new_id("task"))
    repo: str
    goal: str = Field(min_length=1)
    policy: PolicyName = DEFAULT_POLICY
    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    test_cmd: list[str] = Field(default_factory=list)
    # Run the tests in a throwaway copy of the repo inside the container, for suites that
    # write next to their files (the repository itself is always mounted read-only).
    test_in_copy: bool = False
    image: str | None = None
    # The OCI runtime of the task's sandbox (runc, runsc for gVisor, any the engine lists); None:
    # the run's (--runtime, CODEBOX_RUNTIME, the config files).
    runtime: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")
    # The dependency environment: "auto" (build or reuse one from what the repo declares),
    # "none" (the image as it is), an image name (an environment made before), or an object
    # (EnvSpec: auto with a recipe, e.g. {"pip": [...], "pre_install": [...]}).
    env: Annotated[str, Field(min_length=1)] | EnvSpec = "auto"
    # The Python the sandbox runs (X.Y): chosen, when none is given here, from --python, the dataset's spec, or
    # the project's requires-python and the task's date (agent/env/python/choice.py).
    python: str | None = Field(default=None, pattern=r"^\d+\.\d+(\.\d+)?$")
    # What codebox chose, and why (set by codebox when it gives the task a Python's image; a task file's is replaced).
    python_choice: PythonChoice | None = None
    # Resolve what the repository's own package sources would serve from the user's index (--allow-public-fallback).
    allow_public_fallback: bool = False
    max_steps: int = Field(default=DEFAULT_MAX_STEPS, **field_bounds("max_steps"))
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, **field_bounds("timeout"))
    model: str | None = None
    # The commit the task starts from (batch and eval run in a workspace made at it); default:
    # the repo's HEAD plus its uncommitted changes, so the task sees what the user sees.
    base_commit: str | None = None
    # SWE-bench's keys, accepted as the data sets ship them: instance_id is the id and
    # problem_statement the goal when those are not given; the test lists drive `codebox eval`.
    instance_id: str | None = None
    problem_statement: str | None = None
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    test_patch: str | None = None
    patch: str | None = None  # the gold patch (not shown to the agent)
    hints_text: str | None = None
    created_at: str | None = None
    version: str | None = None
    environment_setup_commit: str | None = None
    difficulty: str | None = None

    # Stop (reason "budget") before a model request that would take the run past these.
    max_total_tokens: int | None = Field(default=None, **field_bounds("max_total_tokens"))
    max_cost: float | None = Field(default=None, **field_bounds("max_cost"))

    @model_validator(mode="before")
    @classmethod
    def _swe_bench_shape(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "id" not in data and isinstance(data.get("instance_id"), str):
            data["id"] = data["instance_id"]
        if "goal" not in data and isinstance(data.get("problem_statement"), str):
            data["goal"] = data["problem_statement"]
        for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            if isinstance(data.get(key), str):  # the data sets ship them JSON-encoded
                try:
                    data[key] = json.loads(data[key])
                except ValueError:
                    raise ValueError(f"{key} is a string that is not a JSON list") from None
        if isinstance(data.get("version"), int | float):
            data["version"] = str(data["version"])
        return data

    @property
    def python_minor(self) -> str | None:
        """The X.Y of the Python codebox chose for the sandbox (None: the image's own, nothing chosen)."""
        return self.python_choice.ran if self.python_choice is not None else None

    @property
    def python_stands_in_for(self) -> str | None:
        """The X.Y asked for when another one runs in its place (spec 3.10, ran 3.11), else None."""
        choice = self.python_choice
        return choice.wanted if choice is not None and choice.wanted not in (None, choice.ran) else None

    @property
    def prediction_id(self) -> str:
        """The id a predictions file uses for this task (SWE-bench's instance_id when given)."""
        return self.instance_id or self.id

    @model_validator(mode="after")
    def _rules_need_a_writing_policy(self) -> TaskSpec:
        """allow/deny with read-only would be silently ignored: a mistake, said at once."""
        if self.policy == "read-only" and (self.allow or self.deny):
            raise ValueError(
                "allow/deny rules choose what may be written, and the read-only policy writes nothing: "
                "use the workspace-write or ask policy, or drop the rules"
            )
        return self


StopReason = Literal[
    "final_message",
    "max_steps",
    "timeout",
    "cancelled",
    "loop_guard",
    "model_error",
    "sandbox_error",  # the sandbox could not start or died for good
    "invalid_task",  # the task cannot run as given (no such repository, a policy that cannot work here)
    "internal_error",  # a bug in codebox: the message names the exception
    "budget",  # the next model request would pass the token or cost budget
]

RunStatus = Literal["completed", "stopped", "cancelled", "error"]

STATUS_FOR_REASON: dict[str, RunStatus] = {
    "final_message": "completed",
    "max_steps": "stopped",
    "timeout": "stopped",
    "loop_guard": "stopped",
    "cancelled": "cancelled",
    "model_error": "error",
    "sandbox_error": "error",
    "invalid_task": "error",
    "internal_error": "error",
    "budget": "stopped",
}


class ToolCallRecord(BaseModel):
    call_id: str
    name: str
    decision: Literal["allow", "deny", "invalid"]
    ok: bool
    error: str | None = None
    duration_s: float = 0.0


class TestRun(BaseModel):
    __test__ = False  # not a pytest class

    command: list[str]
    outcome: Outcome
    exit_code: int | None = None
    duration_s: float = 0.0
    # The failing tests by name, as the output listed them (pytest, unittest, go test).
    failed_tests: list[str] = Field(default_factory=list)
    # Why a run that did not pass ended so, in one line (the tool's error: no test command, a timeout,
    # the exit code); None when it passed.
    error: str | None = None


class PatchSummary(BaseModel):
    """What a task's patch touches: its files and its line counts (binary files count no lines)."""

    files: list[str] = Field(default_factory=list)
    added: int = 0
    removed: int = 0


class Report(BaseModel):
    """What a run did. The key names are stable: scripts read them."""

    task_id: str
    goal: str
    repo: str
    model: str
    status: RunStatus
    stop_reason: StopReason
    final_message: str | None = None
    error: str | None = None
    steps: int = 0
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    files_changed: list[str] = Field(default_factory=list)
    last_test: TestRun | None = None
    usage: Usage | None = None
    env: EnvInfo | None = None
    python: PythonChoice | None = None  # the Python the sandbox ran, the one asked for, and why
    # Where the tools ran: the sandbox backend (docker, podman) and its OCI runtime (runc, runsc ...).
    backend: str | None = None
    runtime: str | None = None
    cost: float | None = None  # from usage and the prices the user gave; None without prices
    started_at: float
    duration_s: float
    # Set when the task ran in a workspace (batch, run --isolated): the source commit it started
    # from, whether the user's uncommitted changes were part of the start, and what the patch touches.
    base_commit: str | None = None
    base_dirty: bool = False
    patch: PatchSummary | None = None
    # Set by batch engines: which run of the task this is (1 first; a retry after a lost node or a
    # --retry-errors run counts up) and the machine it ran on (host, and Ray node for the ray engine).
    attempt: int | None = None
    node: str | None = None
