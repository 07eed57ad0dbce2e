"""The viewer's data: what one task page and the batch page show, ready to be drawn.

Everything here is derived on the host from events.jsonl / report.json; the page's script only
draws it. Every string may come from a hostile repository or model: the page shows it as text.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ToolCallView(BaseModel):
    """One tool call: what the model asked, what the policy said, what the model got back."""

    call_id: str
    name: str
    step: int
    summary: str = ""
    arguments: str = ""
    """The arguments as pretty JSON (or the raw text the model sent when it was not JSON)."""
    decision: str = "allow"
    reason: str = ""
    write_paths: list[str] = Field(default_factory=list)
    outcome: str = ""
    is_error: bool = False
    content: str = ""
    """The result exactly as the model saw it (the middle of a huge one is cut, with a note)."""
    duration_s: float = 0.0
    start_s: float | None = None
    """Seconds from the run's start to the call's start (None: no event times known)."""
    finished: bool = True


class StepView(BaseModel):
    """One model step: the model's time, its text, and the tool calls it asked for."""

    number: int
    start_s: float = 0.0
    model_s: float = 0.0
    tool_s: float = 0.0
    messages: list[str] = Field(default_factory=list)
    final: bool = False
    notes: list[str] = Field(default_factory=list)
    """Retries, model errors, context trimming: what else happened in the step."""
    calls: list[ToolCallView] = Field(default_factory=list)


class PatchView(BaseModel):
    lines: list[tuple[str, str]] = Field(default_factory=list)
    """(kind, text): kind is file, meta, hunk, add, del, ctx or note (agent.view.diff)."""
    files: list[str] = Field(default_factory=list)
    added: int = 0
    removed: int = 0
    source: str = ""
    """Where the text came from (patch.diff, predictions.jsonl), for the page."""


class TestView(BaseModel):
    __test__ = False  # not a pytest class

    command: str = ""
    outcome: str = ""
    exit_code: int | None = None
    duration_s: float = 0.0
    failing: list[str] = Field(default_factory=list)
    error: str = ""
    """Why a run that did not pass ended so, in one line (no test command, a timeout, the exit code)."""
    chosen: str = ""
    """How the test command was chosen: given, found (and what showed it), none (and why)."""
    output: str = ""


class TaskView(BaseModel):
    """Everything the task page shows, and the batch table's row."""

    id: str
    goal: str = ""
    repo: str = ""
    model: str = ""
    policy: str = ""
    status: str = "unknown"
    stop_reason: str = ""
    error: str | None = None
    final_message: str | None = None
    steps: int = 0
    tool_calls: int = 0
    files_changed: list[str] = Field(default_factory=list)
    started_at: float | None = None
    duration_s: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cost: float | None = None
    test: TestView | None = None
    patch: PatchView | None = None
    timeline: list[StepView] = Field(default_factory=list)
    environment: dict[str, str] = Field(default_factory=dict)
    """Image, base commit, node, attempt, env and any other report key, as text."""
    warnings: list[str] = Field(default_factory=list)
    """What could not be read (a torn last line, a missing report), shown on the page."""
    events: int = 0


class Totals(BaseModel):
    tasks: int = 0
    completed: int = 0
    failed: int = 0
    """Stopped or cancelled: ended without a final message, but not by an error."""
    error: int = 0
    tests_ok: int = 0
    tests_not_passing: int = 0
    """Completed, but the last test run did not pass (the console's count says the same)."""
    tokens: int | None = None
    cost: float | None = None
    task_time_s: float = 0.0
    wall_time_s: float = 0.0


class BatchView(BaseModel):
    """The whole page: one task (a run) or many (a batch folder, or an events file of several runs)."""

    title: str
    source: str
    kind: str = "batch"
    """"run" opens on the task page; "batch" on the table."""
    tasks: list[TaskView] = Field(default_factory=list)
    totals: Totals = Field(default_factory=Totals)
    warnings: list[str] = Field(default_factory=list)
    generated_at: float = 0.0

    def page_data(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
