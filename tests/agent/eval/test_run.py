"""The driver without containers: outcomes judged as they come back, resume, --retry-errors, a lost job."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

from agent.cancel import CancelToken
from agent.engines import TaskJob, TaskOutcome
from agent.engines.base import AdmitFn, OutcomeFn, StartFn
from agent.eval.dataset import EvalInstance
from agent.eval.job import ApplyRecord, EvalEvidence, EvalJob, outcome_report
from agent.eval.predictions import Prediction
from agent.eval.run import EvalOptions, regrade, run_eval
from agent.protocol import TaskSpec

PASSING = '<testsuites><testsuite><testcase classname="t" name="test_a"/></testsuite></testsuites>'


class FakeEngine:
    """Hands back what ``evidence(job)`` says, or a lost job's outcome (no evidence) for ``lose``."""

    def __init__(self, lose: set[str] | None = None) -> None:
        self.ran: list[str] = []
        self.lose = lose or set()

    def run(self, jobs: Sequence[TaskJob], on_outcome: OutcomeFn, cancel: CancelToken,
            on_start: StartFn | None = None, admit: AdmitFn | None = None) -> None:
        for job in jobs:
            assert job.kind == "eval" and job.sandbox.output_limit > 32_000
            self.ran.append(job.task.id)
            if on_start:
                on_start(job)
            evidence = EvalEvidence(model_patch=ApplyRecord(command="git apply --verbose"), junit_xml=PASSING,
                                    exit_code=0, flagged=["conftest.py"] if job.task.id == "flagged" else [])
            report = outcome_report(job.task, EvalJob.model_validate(job.work), evidence, 0.0)
            if job.task.id in self.lose:
                lost = report.model_copy(update={"status": "error", "error": "lost on the Ray cluster"})
                on_outcome(TaskOutcome(task_id=job.task.id, report=lost))
            else:
                on_outcome(TaskOutcome(task_id=job.task.id, report=report, result=evidence.model_dump(mode="json")))


def instances(tmp_path: Path, ids: list[str]) -> tuple[list[EvalInstance], dict[str, Prediction]]:
    tasks = [EvalInstance(task=TaskSpec(id=i, repo=str(tmp_path), goal="g", FAIL_TO_PASS=["t.py::test_a"]))
             for i in ids]
    return tasks, {i: Prediction(instance_id=i, model_patch="diff") for i in ids}


def test_verdicts_resume_retry_errors_and_strict(tmp_path: Path) -> None:
    tasks, preds = instances(tmp_path, ["ok", "flagged", "lost"])
    out = tmp_path / "out"
    engine = FakeEngine(lose={"lost"})
    results = run_eval(tasks, preds, out, EvalOptions(engine=engine, progress=io.StringIO()))
    assert [r.status for r in results] == ["resolved", "resolved", "error"]
    assert "lost on the Ray cluster" in (results[2].error or "")
    again = FakeEngine()
    run_eval(tasks, preds, out, EvalOptions(engine=again, progress=io.StringIO()))
    assert again.ran == []  # every verdict kept, the error one too
    strict = run_eval(tasks, preds, out, EvalOptions(engine=again, strict=True, retry_errors=True,
                                                     progress=io.StringIO()))
    assert again.ran == ["lost"] and [r.status for r in strict] == ["resolved", "unresolved", "resolved"]
    assert json.loads((out / "results.json").read_text())["unresolved"] == ["flagged"]
    changed = {**preds, "ok": Prediction(instance_id="ok", model_patch="another diff")}
    third = FakeEngine()
    run_eval(tasks, changed, out, EvalOptions(engine=third, progress=io.StringIO()))
    assert third.ran == ["ok"]  # a prediction that changed is evaluated again


def test_regrade_rebuilds_every_summary_from_the_kept_evidence(tmp_path: Path) -> None:
    tasks, preds = instances(tmp_path, ["ok", "flagged"])
    out = tmp_path / "out"
    run_eval(tasks, preds, out, EvalOptions(engine=FakeEngine(), progress=io.StringIO()))
    (out / "results.json").unlink()
    said = io.StringIO()
    results = regrade(out, strict=True, progress=said)
    assert [r.status for r in results] == ["resolved", "unresolved"]
    assert "flagged: resolved -> unresolved" in said.getvalue()
    assert json.loads((out / "results.json").read_text())["strict"] is True
    assert [r.status for r in regrade(out)] == ["resolved", "unresolved"]  # the run's own setting stays


def test_the_runtime_is_part_of_the_resume_fingerprint(tmp_path: Path) -> None:
    """A verdict kept from a run under runc is not kept for a run under gVisor: that instance runs again."""
    from agent.sandboxes.config import SandboxConfig

    tasks, preds = instances(tmp_path, ["a"])
    out = tmp_path / "out"
    run_eval(tasks, preds, out, EvalOptions(engine=FakeEngine(), sandbox=SandboxConfig(runtime="runc"),
                                            progress=io.StringIO()))
    same, other = FakeEngine(), FakeEngine()
    run_eval(tasks, preds, out, EvalOptions(engine=same, sandbox=SandboxConfig(runtime="runc"), progress=io.StringIO()))
    run_eval(tasks, preds, out, EvalOptions(engine=other, sandbox=SandboxConfig(runtime="runsc"),
                                            progress=io.StringIO()))
    assert same.ran == [] and other.ran == ["a"]
