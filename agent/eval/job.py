"""What an evaluation job carries to a worker (EvalJob) and brings back (EvalEvidence).

A job is one instance and its prediction; the worker (any engine, any machine) returns the
evidence only, and the driver judges it (verdict.py): the same judgement a --regrade makes
from what was kept.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, Field

from agent.eval.predictions import Prediction
from agent.protocol import STATUS_FOR_REASON, EnvInfo, Report, StopReason, TaskSpec

# What kept an instance from being evaluated: the instance as given (invalid, workspace, test_patch), the
# machine (environment, sandbox: SWE-bench's "infrastructure"), its tests (timeout), a cancel, a bug.
ErrorKind = Literal["invalid", "workspace", "test_patch", "environment", "sandbox", "timeout", "cancelled",
                    "internal"]
INFRASTRUCTURE: tuple[ErrorKind, ...] = ("environment", "sandbox")


class EvalJob(BaseModel):
    """The evaluation part of a TaskJob (the task itself is TaskJob.task)."""

    prediction: Prediction
    timeout_s: float = Field(gt=0)
    """The test run's timeout."""
    dataset_image: bool = False
    """The task's image is the dataset's own (a SWE-bench image): its testbed env goes first on PATH."""


class Flag(BaseModel):
    """What in a model_patch changes how the tests run: the rule (integrity.RULES), the path, why."""

    rule: str
    path: str
    why: str = ""


class ApplyRecord(BaseModel):
    """How a patch went in: the command that applied it (None: none did), and every try before."""

    command: str | None = None
    tried: list[str] = Field(default_factory=list)
    """"<command>: <its first error line>" for each command that did not apply it."""
    output: str = ""
    """What the applying command said (or the last failure's words), capped."""

    @property
    def applied(self) -> bool:
        return self.command is not None


class EvalEvidence(BaseModel):
    """Everything one instance's evaluation saw; the verdict is computed from it alone."""

    model_patch: ApplyRecord | None = None
    """None: the prediction's patch was empty (nothing to apply)."""
    flagged: list[str] = Field(default_factory=list)
    """The paths ``flags`` name, each once."""
    flags: list[Flag] = Field(default_factory=list)
    """Each rule of integrity.RULES that the model_patch trips, with the path it tripped on."""
    changed: list[str] = Field(default_factory=list)
    """The paths the model_patch changed, as the workspace shows them after it applied (git's view)."""
    reset_files: list[str] = Field(default_factory=list)
    """The paths the test_patch touches, put back to the base commit before it applied."""
    test_patch: ApplyRecord | None = None
    env: EnvInfo | None = None
    backend: str | None = None
    """The sandbox backend the tests ran on (docker, podman)."""
    runtime: str | None = None
    """The OCI runtime the tests ran under (runc, runsc: gVisor...): the user's, or a trusted line's."""
    image_id: str | None = None
    """The image the tests ran in, by id (sha256:...)."""
    runner: str = "pytest"
    """The test runner the named tests ran with (agent/languages/python/runners: pytest, sympy, django, unittest; or
    a language graded by its own test names: rust, go, node)."""
    test_command: list[str] = Field(default_factory=list)
    test_files: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    run_outcome: str | None = None
    """run_test's outcome: ok, failed, timeout, oom, error, container_died."""
    junit_xml: str | None = None
    log: str = ""
    """pytest's output as run_test kept it (stdout and stderr, each capped head + tail)."""
    no_report: str | None = None
    """Why there is no JUnit report: the first lines of the real error."""
    error: str | None = None
    """Why the harness could not evaluate the instance (workspace, environment, sandbox, timeout)."""
    error_kind: ErrorKind | None = None
    cancelled: bool = False
    notes: list[str] = Field(default_factory=list)
    timings: dict[str, float] = Field(default_factory=dict)
    """Seconds per step (workspace, env, apply, sandbox, tests, ...): where an instance's time went."""

    def fail(self, kind: ErrorKind, message: str) -> None:
        """The harness could not evaluate the instance (the first reason stays)."""
        if self.error is None:
            self.error, self.error_kind = message, kind


def outcome_report(task: TaskSpec, job: EvalJob, evidence: EvalEvidence, started: float) -> Report:
    """The run report the engines carry with the evidence (status, error, environment, duration)."""
    reason: StopReason = "final_message"
    if evidence.cancelled:
        reason = "cancelled"
    elif evidence.error:
        reason = "sandbox_error"
    return Report(task_id=task.id, goal=task.goal, repo=task.repo, model=job.prediction.model_name_or_path or "",
                  status=STATUS_FOR_REASON[reason], stop_reason=reason, error=evidence.error, env=evidence.env,
                  started_at=started, duration_s=round(time.time() - started, 3))
