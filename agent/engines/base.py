"""The engine contract: a TaskJob in, a TaskOutcome out, and execute_job that turns one into the other.

An engine decides WHERE a job runs (a thread here, a Ray worker on another machine); what
running a job means is execute_job, the same everywhere: an agent run, or a job of another kind
(JOB_KINDS: an evaluation), whose function is imported on the worker when one runs, so the
engines import nothing of what they run. A TaskJob carries everything a
worker needs (no driver state), a TaskOutcome everything the driver writes to ``--out``:
only the driver (agent.batch) writes there.
"""

from __future__ import annotations

import importlib
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from agent.cancel import CancelToken
from agent.defaults import SETTINGS, field_bounds
from agent.protocol import AgentEvent, EnvInfo, Report, TaskSpec
from agent.sandboxes.config import SandboxConfig
from agent.task.budget import Prices
from agent.task.events import EventSink
from agent.task.workspace import Workspace

if TYPE_CHECKING:  # the agent's loop and runner load only for agent jobs: an eval never imports them
    from agent.backends.pool import WarmPool
    from agent.task.loop import Limits


class JobLimits(BaseModel):
    """Caps over the task's own max_steps / timeout_s (None: the task's value applies)."""

    max_steps: int | None = Field(default=None, **field_bounds("max_steps"))
    timeout_s: float | None = Field(default=None, **field_bounds("timeout"))
    max_total_tokens: int | None = Field(default=None, **field_bounds("max_total_tokens"))
    max_cost: float | None = Field(default=None, **field_bounds("max_cost"))
    test_timeout_s: float = Field(default=SETTINGS["test_timeout"].default, **field_bounds("test_timeout"))
    """run_test's timeout when the model names none."""
    max_test_timeout_s: float = Field(default=SETTINGS["max_test_timeout"].default,
                                      **field_bounds("max_test_timeout"))
    """The most a run_test call may take, whatever the model asks."""
    prices: Prices | None = None
    """Prices per million tokens: the report's cost, and what max_cost is counted in."""

    def to_limits(self) -> Limits:
        from agent.task.loop import Limits

        return Limits(
            max_steps=self.max_steps if self.max_steps is not None else 10**9,
            timeout_s=self.timeout_s if self.timeout_s is not None else float("inf"),
            max_total_tokens=self.max_total_tokens,
            max_cost=self.max_cost,
            prices=self.prices,
            test_timeout_s=self.test_timeout_s,
            max_test_timeout_s=self.max_test_timeout_s,
        )


class TaskJob(BaseModel):
    """One task to run, self-contained and picklable: what a worker on any machine needs."""

    task: TaskSpec
    """The task line; task.repo names the source on the driver (an engine may map it to a local copy)."""
    model: str = ""
    """The model spec: a model name for the OpenAI-compatible client, or scripted:FILE (empty: none was
    given anywhere; the outcome is a model_error that says so)."""
    model_options: dict[str, Any] = Field(default_factory=dict)
    """Keyword options of agent.task.runner.build_model (base_url, api_key_env, temperature, ...)."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """The sandbox's limits and image (a task's own `image` still wins)."""
    limits: JobLimits = Field(default_factory=JobLimits)
    """Caps over the task's own limits."""
    attempt: int = Field(default=1, ge=1)
    """1 for a first run; counts up each time the driver runs the task again."""
    keep_workspace: bool = False
    """Leave the workspace on disk after the run (its path is in the outcome)."""
    workspace_root: str | None = None
    """Folder for workspaces (default: the system's temporary folder)."""
    kind: str = "agent"
    """What the job does: "agent" (a model works on the task), or a kind of JOB_KINDS (no model runs)."""
    work: dict[str, Any] = Field(default_factory=dict)
    """The inputs of a job of another kind, as its own model dumps them (an evaluation: agent.eval.job.EvalJob)."""


class TaskOutcome(BaseModel):
    """What one job produced; the driver writes it to ``--out/<id>/``."""

    task_id: str
    report: Report
    events: list[str] = Field(default_factory=list)
    """Every event of the run, one JSON object a string (events.jsonl without the newlines)."""
    patch: str = ""
    """`git diff --binary` of the workspace against its base; applies with `git apply` to the base."""
    attempt: int = 1
    node: str = Field(default_factory=socket.gethostname)
    """The machine the job ran on."""
    workspace: str | None = None
    """The kept workspace's path on ``node`` (only with keep_workspace)."""
    result: dict[str, Any] | None = None
    """What a job of another kind found, as its own model dumps it (an evaluation's evidence: the driver judges it)."""


# The jobs that are not agent runs, by kind: the function that runs one ("module:function", with
# execute_kind's signature), imported on the worker the first time a job of its kind runs there.
JOB_KINDS = {"eval": "agent.eval.worker:execute_eval_job"}

OutcomeFn = Callable[[TaskOutcome], None]
StartFn = Callable[[TaskJob], None]
AdmitFn = Callable[[TaskJob], bool]


class Engine(Protocol):
    """Runs jobs somewhere and hands each outcome back on the driver.

    ``on_outcome`` is called once per job that ran (from any thread: it must be thread-safe);
    ``on_start`` when a job starts. After ``cancel``, jobs that have not started are not
    started and yield no outcome (a later batch run picks them up); running jobs end as
    cancelled. ``run`` returns when every started job has its outcome. ``admit`` is asked just
    before a job would start: False leaves it unstarted, as a cancel does (a batch whose budget
    is spent).
    """

    def run(
        self,
        jobs: Sequence[TaskJob],
        on_outcome: OutcomeFn,
        cancel: CancelToken,
        on_start: StartFn | None = None,
        admit: AdmitFn | None = None,
    ) -> None: ...


class _LineSink:
    """Keeps every event as a JSON line and passes it on to a live sink (if any)."""

    def __init__(self, live: EventSink | None) -> None:
        self.lines: list[str] = []
        self._live = live
        self._lock = threading.Lock()

    def emit(self, event: AgentEvent) -> None:
        with self._lock:
            self.lines.append(event.model_dump_json())
        if self._live is not None:
            self._live.emit(event)

    def close(self) -> None:
        pass  # the live sink belongs to the caller


@dataclass
class PreparedJob:
    """What an engine made ready for a job before it started (the local engine's warm start)."""

    workspace: Workspace
    """The job's workspace, made from its source; the job uses and removes it."""
    env: EnvInfo | None = None
    """The dependency environment chosen on it, when ``env_chosen`` (None: no environment)."""
    warm: WarmPool | None = None
    """A pool holding the job's started sandbox, on the workspace with the env's image."""
    env_chosen: bool = False
    """Whether ``env`` is the task's choice made ahead (else the task chooses its own)."""


def execute_job(
    job: TaskJob,
    source: Path,
    cancel: CancelToken,
    sink: EventSink | None = None,
    prepared: PreparedJob | None = None,
    env_log: Callable[[str], None] | None = None,
) -> TaskOutcome:
    """Run one job in a fresh workspace made from ``source`` and always return an outcome.

    ``source`` is the repository on this machine: the user's repo for the local engine, an
    unpacked copy (git bundle, archive) on a remote worker. The workspace starts at
    task.base_commit, or at the source's HEAD plus its uncommitted changes; it is removed at
    the end unless job.keep_workspace. Events go to ``sink`` as they happen, and all of them
    into the outcome. ``prepared``: the workspace (and maybe the environment and a started
    sandbox) made ahead for this job, used instead of making them now. ``env_log``: where an
    environment build says what it does (default: stderr).
    """
    if job.kind != "agent":
        return _kind_function(job.kind)(job, source, cancel, prepared)
    from agent.task.runner import failed_report, run_task_isolated

    task, lines = job.task, _LineSink(sink)
    patch, kept = "", None
    ahead: dict[str, Any] = {}
    if prepared is not None:
        ahead = {"workspace": prepared.workspace, "warm": prepared.warm}
        if prepared.env_chosen:  # chosen ahead (None included): not again
            ahead["prepared_env"] = prepared.env
    if env_log is not None:
        ahead["env_log"] = env_log
    # A task line with no test_cmd gets the command its repository shows, as `codebox run` does; the
    # run's first event says which (the board stays quiet: one line per task would drown it).
    ahead["look_for_tests"] = _found_quietly
    try:
        report, patch, kept = run_task_isolated(
            task, job.model, job.model_options, lines, source=source, sandbox_config=job.sandbox, cancel=cancel,
            limits=job.limits.to_limits(), keep_workspace=job.keep_workspace,
            workspace_root=Path(job.workspace_root) if job.workspace_root else None, **ahead,
        )
    except Exception as exc:  # one task's crash is its own report, never the batch's end
        report = failed_report(task, job.model, "internal_error", f"{type(exc).__name__}: {exc}", lines)
    node = socket.gethostname()
    report = report.model_copy(update={"attempt": job.attempt, "node": node})
    return TaskOutcome(task_id=task.id, report=report, events=lines.lines, patch=patch, attempt=job.attempt,
                       node=node, workspace=str(kept) if kept else None)


def _found_quietly(_choice: object) -> None:
    """A batch task's test command, found: the events carry it (turn.start's test_cmd and tests)."""


KindFn = Callable[[TaskJob, Path, CancelToken, "PreparedJob | None"], TaskOutcome]


def _kind_function(kind: str) -> KindFn:
    """The function that runs a job of ``kind`` (JOB_KINDS); ValueError for a kind no engine knows."""
    target = JOB_KINDS.get(kind)
    if target is None:
        raise ValueError(f"a job of kind {kind!r}: no engine runs that kind (known: agent, {', '.join(JOB_KINDS)})")
    module, _, name = target.partition(":")
    function: KindFn = getattr(importlib.import_module(module), name)
    return function
