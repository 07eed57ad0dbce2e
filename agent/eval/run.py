"""`codebox eval`'s driver: each instance a job on a batch engine, judged as it comes back; resumable; --regrade.

Only this driver writes --out (as batch's). An instance whose eval.json has the same inputs
(fingerprint) is not evaluated again; one that was cancelled, or errored with ``retry_errors``,
is. OUT/run.json names the run's instances and predictions, so --regrade can rebuild every
summary from what was kept.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from agent import defaults
from agent.cancel import CancelToken
from agent.engines import Engine, LocalEngine, TaskJob, TaskOutcome
from agent.escape import printable
from agent.eval import env as envs
from agent.eval import store
from agent.eval.dataset import EvalInstance
from agent.eval.job import EvalEvidence, EvalJob
from agent.eval.predictions import Prediction
from agent.eval.report import write_summaries
from agent.eval.verdict import InstanceEval, flag_list, judge
from agent.eval.worker import eval_job
from agent.sandboxes.config import SandboxConfig

RUN_JSON = "run.json"


@dataclass
class EvalOptions:
    jobs: int = defaults.DEFAULT_JOBS
    engine: Engine | None = None
    """Where jobs run (default: the local engine, ``jobs`` at a time, with its warm pool)."""
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    timeout_s: float = defaults.DEFAULT_EVAL_TIMEOUT_S
    strict: bool = False
    warm: bool = True
    retry_errors: bool = False
    progress: TextIO | None = None


def fingerprint(instance: EvalInstance, prediction: Prediction, sandbox: SandboxConfig) -> str:
    """The inputs that decide a verdict: the same ones give the same evaluation. The sandbox's backend
    and runtime are among them (a verdict under runc is not one under gVisor)."""
    task = instance.task
    material = {"task": task.model_dump(mode="json", include={"repo", "base_commit", "test_patch", "FAIL_TO_PASS",
                                                              "PASS_TO_PASS", "env", "image", "test_in_copy"}),
                "eval_type": instance.dataset.eval_type, "patch": prediction.model_patch or "",
                "backend": sandbox.backend, "runtime": task.runtime or sandbox.runtime}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:24]


def run_eval(instances: list[EvalInstance], predictions: dict[str, Prediction], out: Path,
             options: EvalOptions | None = None, cancel: CancelToken | None = None) -> list[InstanceEval]:
    """Evaluate every instance that has a prediction; write OUT/<id>/ and the summaries; return the verdicts
    in dataset order (the resumed ones included)."""
    options = options or EvalOptions()
    cancel = cancel or CancelToken()
    progress = options.progress or sys.stderr
    out.mkdir(parents=True, exist_ok=True)
    paired = [(i, predictions[i.task.id]) for i in instances if i.task.id in predictions]
    _write_run(out, instances, predictions, options.strict)
    driver = _Driver(out, {i.task.id: (i, p) for i, p in paired}, options.strict, progress, options.sandbox)
    config = options.sandbox.replace(output_limit=defaults.EVAL_LOG_LIMIT)
    jobs: list[TaskJob] = []
    for instance, prediction in paired:
        kept = store.finished(out / instance.task.id, fingerprint(instance, prediction, options.sandbox))
        if kept is not None and not (options.retry_errors and kept.status == "error"):
            driver.resumed(kept)
            continue
        evaluation = EvalJob(prediction=prediction, timeout_s=options.timeout_s,
                             dataset_image=instance.dataset.image_used)
        jobs.append(eval_job(TaskJob(task=instance.task, sandbox=config), evaluation))
    engine = options.engine or LocalEngine(options.jobs, warm=options.warm)
    try:
        engine.run(jobs, driver.on_outcome, cancel, on_start=driver.on_start)
    finally:
        envs.wait_closed()
    results = [driver.results[i.task.id] for i, _ in paired if i.task.id in driver.results]
    ids = [i.task.id for i in instances]
    write_summaries(out, results, ids, [p for p in predictions if p in set(ids)], options.strict)
    return results


def regrade(out: Path, strict: bool | None = None, progress: TextIO | None = None) -> list[InstanceEval]:
    """Every verdict of a kept run, judged again from its evidence alone; the summaries rewritten.

    ``strict`` None: each instance as it was graded. Raises OSError/ValueError when OUT holds no run.
    """
    run = json.loads((out / RUN_JSON).read_text(encoding="utf-8"))
    results = []
    for iid in run["instances"]:
        folder = out / iid
        result = store.read_instance(folder)
        if result is None:
            continue
        before = (result.status, result.resolution)
        if strict is not None:
            result.strict = strict
        judge(result, list(result.fail_to_pass), list(result.pass_to_pass), None, store.read_junit(folder, result),
              store.read_log(folder))
        store.write_verdict(folder, result)
        if before != (result.status, result.resolution) and progress is not None:
            print(f"  {printable(iid)}: {before[0]} -> {result.status}", file=progress)
        results.append(result)
    final_strict = bool(run.get("strict")) if strict is None else strict
    write_summaries(out, results, run["instances"], run["predictions"], final_strict)
    if strict is not None:
        _write_json(out / RUN_JSON, {**run, "strict": strict})
    return results


class _Driver:
    """The only writer of --out: clears an instance when it starts, judges and keeps it when it ends."""

    def __init__(self, out: Path, pairs: dict[str, tuple[EvalInstance, Prediction]], strict: bool,
                 progress: TextIO, sandbox: SandboxConfig) -> None:
        self.out, self.pairs, self.strict, self.progress = out, pairs, strict, progress
        self.sandbox = sandbox
        self.results: dict[str, InstanceEval] = {}
        self._lock = threading.Lock()

    def on_start(self, job: TaskJob) -> None:
        store.clear(self.out / job.task.id)

    def resumed(self, kept: InstanceEval) -> None:
        if kept.strict != self.strict:  # the same evidence, judged with this run's --strict
            kept.strict = self.strict
            judge(kept, list(kept.fail_to_pass), list(kept.pass_to_pass), None,
                  store.read_junit(self.out / kept.instance_id, kept), store.read_log(self.out / kept.instance_id))
            store.write_verdict(self.out / kept.instance_id, kept)
        self.results[kept.instance_id] = kept
        self._say(kept, "kept from an earlier run")

    def on_outcome(self, outcome: TaskOutcome) -> None:
        instance, prediction = self.pairs[outcome.task_id]
        evidence = (EvalEvidence.model_validate(outcome.result) if outcome.result is not None
                    else EvalEvidence(error=outcome.report.error or "the job returned no evidence"))
        result = InstanceEval(instance_id=outcome.task_id, status="error", strict=self.strict,
                              model_name_or_path=prediction.model_name_or_path, empty_patch=prediction.empty,
                              eval_type=instance.dataset.eval_type, dataset=instance.dataset,
                              python=instance.task.python_choice,
                              notes=list(instance.dataset.notes),
                              fingerprint=fingerprint(instance, prediction, self.sandbox), node=outcome.node,
                              duration_s=outcome.report.duration_s)
        judge(result, instance.task.FAIL_TO_PASS, instance.task.PASS_TO_PASS, evidence, evidence.junit_xml)
        try:
            store.write_instance(self.out / outcome.task_id, result, evidence, prediction.model_patch)
        except OSError as exc:
            result.status, result.error = "error", f"its results could not be written: {exc}"
        with self._lock:
            self.results[outcome.task_id] = result
        self._say(result, f"{result.duration_s:.1f}s")

    def _say(self, result: InstanceEval, when: str) -> None:
        cause = f": {result.error}" if result.error and result.status != "resolved" else ""
        flag = f" [flagged: {flag_list(result)}]" if result.flagged else ""
        line = f"  {result.instance_id}: {result.status} ({when}){flag}{cause}"
        print(printable(line)[:400], file=self.progress, flush=True)


def _write_run(out: Path, instances: list[EvalInstance], predictions: dict[str, Prediction], strict: bool) -> None:
    ids = {i.task.id for i in instances}
    _write_json(out / RUN_JSON, {"instances": [i.task.id for i in instances],
                                 "predictions": [p for p in predictions if p in ids], "strict": strict})


def _write_json(path: Path, data: object) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
