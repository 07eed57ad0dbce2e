"""The engine contract: jobs and outcomes cross process boundaries; execute_job always returns an outcome."""

from __future__ import annotations

import json
import pickle
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

import agent.task.runner as runner
import agent.task.task_env as task_env
from agent.cancel import CancelToken
from agent.engines import JobLimits, LocalEngine, TaskJob, TaskOutcome, execute_job
from agent.protocol import Report, TaskSpec
from agent.task.events import MemorySink
from tests.repos import sh


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    sh("git", "init", "-q", cwd=path)
    (path / "a.py").write_text("a = 1\n")
    sh("git", "add", ".", cwd=path)
    sh("git", "commit", "-qm", "init", cwd=path)
    return path


@pytest.fixture
def model(tmp_path: Path) -> str:
    (tmp_path / "s.json").write_text(json.dumps({"turns": [{"message": "done"}]}))
    return f"scripted:{tmp_path / 's.json'}"


def editing_run(task: TaskSpec, model: Any, sink: Any, **kw: Any) -> Report:
    """Stands in for the sandboxed run: edits the workspace it is given, emits one event pair."""
    failed = runner.failed_report(task, model.name, "model_error", "x", sink)
    (Path(task.repo) / "a.py").write_text("a = 2\n")
    (Path(task.repo) / "new.py").write_text("n = 1\n")
    return failed.model_copy(update={"status": "completed", "stop_reason": "final_message", "error": None})


def test_jobs_and_outcomes_survive_pickle_and_json(repo: Path, model: str) -> None:
    job = TaskJob(task=TaskSpec(id="t", repo=str(repo), goal="g", base_commit="HEAD"), model=model,
                  model_options={"temperature": 0.2}, limits=JobLimits(max_steps=3), attempt=2)
    assert pickle.loads(pickle.dumps(job)) == job
    assert TaskJob.model_validate_json(job.model_dump_json()) == job
    report = Report(task_id="t", goal="g", repo=str(repo), model="m", status="completed",
                    stop_reason="final_message", started_at=0.0, duration_s=1.0)
    outcome = TaskOutcome(task_id="t", report=report, events=['{"type": "turn.start"}'], patch="diff")
    assert pickle.loads(pickle.dumps(outcome)) == outcome
    assert job.limits.to_limits().max_steps == 3 and JobLimits().to_limits().timeout_s == float("inf")


def test_execute_job_runs_in_a_workspace_and_returns_everything(
    repo: Path, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "run_task", editing_run)
    live = MemorySink()
    job = TaskJob(task=TaskSpec(id="t", repo=str(repo), goal="g"), model=model, keep_workspace=True)
    outcome = execute_job(job, repo, CancelToken(), live)
    report = outcome.report
    assert report.status == "completed" and report.repo == str(repo)  # the user's path, not the workspace's
    assert report.base_commit == sh("git", "rev-parse", "HEAD", cwd=repo) and not report.base_dirty
    assert report.patch is not None and sorted(report.patch.files) == ["a.py", "new.py"]
    assert "-a = 1\n+a = 2" in outcome.patch and "+n = 1" in outcome.patch
    assert [json.loads(e)["type"] for e in outcome.events] == live.types() == ["turn.start", "turn.end"]
    assert outcome.workspace and Path(outcome.workspace, "new.py").exists()  # kept on request
    shutil.rmtree(outcome.workspace)
    assert (repo / "a.py").read_text() == "a = 1\n" and not (repo / "new.py").exists()


def test_an_environment_chosen_by_the_task_is_shown_under_the_users_repo(
    repo: Path, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The task builds its own environment (the first --jobs tasks of a batch, a Ray node) on its workspace:
    # 'building the environment for /tmp/codebox-ws-...' and `codebox env ls` showed that throwaway path.
    from agent.env.errors import EnvError

    class Backend:
        def preflight(self, config: Any) -> None:
            pass

    seen: list[tuple[str, str | None]] = []

    def choose(task: TaskSpec, workspace: Path, config: Any, log: Any, cancel: Any, repo_name: str | None) -> None:
        seen.append((str(workspace), repo_name))
        raise EnvError("no index here")

    monkeypatch.setattr(runner, "backend_for", lambda config: Backend())
    monkeypatch.setattr(task_env, "choose_env", choose)
    outcome = execute_job(TaskJob(task=TaskSpec(id="t", repo=str(repo), goal="g"), model=model), repo, CancelToken())
    assert outcome.report.stop_reason == "sandbox_error" and "no index here" in (outcome.report.error or "")
    [(workspace, name)] = seen
    assert name == str(repo) and workspace != str(repo)


@pytest.mark.parametrize(
    ("source", "model_spec", "reason", "needle"),
    [("missing", None, "invalid_task", "no workspace"), ("repo", "scripted:/nonexistent.json", "model_error", "")],
)
def test_execute_job_always_returns_an_outcome(
    tmp_path: Path, repo: Path, model: str, source: str, model_spec: str | None, reason: str, needle: str
) -> None:
    job = TaskJob(task=TaskSpec(id="t", repo=str(repo), goal="g"), model=model_spec or model)
    outcome = execute_job(job, tmp_path / source, CancelToken())
    assert outcome.report.stop_reason == reason and needle in (outcome.report.error or "")
    assert outcome.events and outcome.patch == ""


def test_local_engine_runs_every_job_and_starts_none_after_a_cancel(
    repo: Path, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "run_task", editing_run)
    jobs = [TaskJob(task=TaskSpec(id=f"t{i}", repo=str(repo), goal="g"), model=model) for i in range(4)]
    seen: list[str] = []
    inside = threading.Lock()

    def on_outcome(outcome: TaskOutcome) -> None:
        assert inside.acquire(blocking=False), "on_outcome is called by one thread at a time"
        seen.append(outcome.task_id)
        inside.release()

    started: list[str] = []
    LocalEngine(jobs=2).run(jobs, on_outcome, CancelToken(), on_start=lambda job: started.append(job.task.id))
    assert sorted(seen) == sorted(started) == ["t0", "t1", "t2", "t3"]
    cancel = CancelToken()
    cancel.cancel()
    seen.clear()
    LocalEngine(jobs=2).run(jobs, on_outcome, cancel)
    assert seen == []
