"""An evaluation job on a worker (any engine, any machine): the instance's evidence, carried back in the outcome."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

from agent.cancel import CancelToken
from agent.engines.base import PreparedJob, TaskJob, TaskOutcome
from agent.eval.job import EvalJob, outcome_report


def eval_job(job: TaskJob, evaluation: EvalJob) -> TaskJob:
    """``job`` as an evaluation of ``evaluation``'s prediction (no model runs)."""
    return job.model_copy(update={"kind": "eval", "work": evaluation.model_dump(mode="json")})


def execute_eval_job(job: TaskJob, source: Path, cancel: CancelToken, prepared: PreparedJob | None) -> TaskOutcome:
    """The engines' function for an "eval" job: evaluate in a workspace made from ``source`` (or ahead)."""
    from agent.eval.instance import evaluate

    evaluation = EvalJob.model_validate(job.work)
    started = time.time()
    ahead: dict[str, Any] = {}
    if prepared is not None:
        ahead = {"workspace": prepared.workspace, "env": prepared.env, "env_chosen": prepared.env_chosen,
                 "warm": prepared.warm}
    evidence = evaluate(job.task, evaluation, job.sandbox, source, cancel, **ahead)
    report = outcome_report(job.task, evaluation, evidence, started)
    node = socket.gethostname()
    report = report.model_copy(update={"attempt": job.attempt, "node": node})
    return TaskOutcome(task_id=job.task.id, report=report, attempt=job.attempt, node=node,
                       result=evidence.model_dump(mode="json"))
