"""Every structure that crosses a boundary: model, sandbox, events, reports, task files.

All of them are pydantic v2 models, so they serialize to JSON and back losslessly.
"""

from __future__ import annotations

import time
import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


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


# --- model ---------------------------------------------------------------------------------------


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


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
    "context.trimmed",  # old tool results were shortened to fit the budget
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

PolicyName = Literal["read-only", "workspace-write", "ask"]


class TaskSpec(BaseModel):
    """One task: a line of a batch file, or what `codebox run` builds from its flags."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: new_id("task"))
    repo: str
    goal: str = Field(min_length=1)
    policy: PolicyName = "read-only"
    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    test_cmd: list[str] = Field(default_factory=list)
    # Run the tests in a throwaway copy of the repo inside the container, for suites that
    # write next to their files (the repository itself is always mounted read-only).
    test_in_copy: bool = False
    image: str | None = None
    max_steps: int = Field(default=30, ge=1)
    timeout_s: float = Field(default=900.0, gt=0)
    model: str | None = None
    # Stop (reason "budget") before a model request that would take the run past these.
    max_total_tokens: int | None = Field(default=None, ge=1)
    max_cost: float | None = Field(default=None, gt=0)


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
    outcome: str
    exit_code: int | None = None
    duration_s: float = 0.0


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
    cost: float | None = None  # from usage and the prices the user gave; None without prices
    started_at: float
    duration_s: float

    def render(self) -> str:
        """A readable summary for the console."""
        lines = [
            f"task {self.task_id}: {self.status} ({self.stop_reason}) after {self.steps} steps, "
            f"{len(self.tool_calls)} tool calls, {self.duration_s:.1f}s",
        ]
        if self.error:
            lines.append(f"error: {self.error}")
        if self.files_changed:
            lines.append("files changed: " + ", ".join(self.files_changed))
        if self.last_test:
            t = self.last_test
            lines.append(f"last test: {' '.join(t.command)} -> {t.outcome} (exit {t.exit_code})")
        if self.usage:
            u = self.usage
            lines.append(f"tokens: {u.input_tokens} in, {u.output_tokens} out")
        if self.cost is not None:
            lines.append(f"cost: {self.cost:.4f}")
        denied = sum(1 for c in self.tool_calls if c.decision == "deny")
        failed = sum(1 for c in self.tool_calls if not c.ok)
        if failed:
            lines.append(f"failed calls: {failed} (denied by policy: {denied})")
        if self.final_message:
            lines.append("final message:")
            lines.extend("  " + line for line in self.final_message.splitlines())
        return "\n".join(lines)
