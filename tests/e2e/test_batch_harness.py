"""Batch as a harness with real containers: a workspace per task, patches out, cancel and resume."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent.batch import run_batch
from agent.cancel import CancelToken
from agent.cli.parser import main
from agent.engines import LocalEngine
from agent.protocol import AgentEvent, TaskSpec
from agent.task.events import CallbackSink
from tests.repos import fingerprint, sh

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module", autouse=True)
def _image() -> None:
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()


def add_file(name: str, text: str) -> dict[str, Any]:
    patch = f"*** Begin Patch\n*** Add File: {name}\n+{text}\n*** End Patch\n"
    return {"tool_calls": [{"name": "apply_patch", "arguments": {"patch": patch}}]}


def script(tmp_path: Path, name: str, turns: list[dict[str, Any]]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """A git repo as a user has it: commits, an uncommitted edit and an untracked file."""
    repo = tmp_path / "repo"
    repo.mkdir()
    sh("git", "init", "-q", cwd=repo)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    sh("git", "add", ".", cwd=repo)
    sh("git", "commit", "-qm", "init", cwd=repo)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b  # wip\n")
    (repo / "notes.txt").write_text("mine\n")
    return repo


def events(out: Path, task_id: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / task_id / "events.jsonl").read_text().splitlines()]


def test_two_tasks_on_one_repo_each_see_only_their_own_edit(
    tmp_path: Path, user_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspaces = tmp_path / "workspaces"
    monkeypatch.setenv("CODEBOX_WORKSPACE_ROOT", str(workspaces))
    before = fingerprint(user_repo)
    listing = ["python3", "-c", "import os, time; time.sleep(2); print('FILES', sorted(os.listdir('.')))"]
    tasks = []
    for me, other in (("a", "b"), ("b", "a")):
        turns = [
            add_file(f"{me}.txt", me),
            {"tool_calls": [{"name": "run_test", "arguments": {}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": f"{other}.txt"}}]},
            {"message": "done"},
        ]
        tasks.append(TaskSpec(id=me, repo=str(user_repo), goal="g", policy="workspace-write", test_cmd=listing,
                              model=script(tmp_path, me, turns)))
    out = tmp_path / "out"
    reports = run_batch(tasks, out, jobs=2, progress_stream=io.StringIO())
    assert [r.status for r in reports] == ["completed", "completed"]
    for me, other in (("a", "b"), ("b", "a")):
        ends = [e for e in events(out, me) if e["type"] == "tool.end"]
        listed = next(e["data"]["content"] for e in ends if e["data"]["name"] == "run_test")
        assert f"'{me}.txt'" in listed and f"'{other}.txt'" not in listed
        assert "'notes.txt'" in listed  # the task sees what the user sees: uncommitted work included
        assert next(e for e in ends if e["data"]["name"] == "read_file")["data"]["is_error"]
        report = json.loads((out / me / "report.json").read_text())
        assert report["base_commit"] == sh("git", "rev-parse", "HEAD", cwd=user_repo) and report["base_dirty"]
        assert report["patch"] == {"files": [f"{me}.txt"], "added": 1, "removed": 0}
    assert fingerprint(user_repo) == before  # tree and .git unchanged
    # both patches apply, one after the other, to a copy of what the user sees
    target = tmp_path / "target"
    subprocess.run(["cp", "-a", str(user_repo), str(target)], check=True)
    for me in ("a", "b"):
        subprocess.run(["git", "apply", str(out / me / "patch.diff")], cwd=target, check=True)
    assert (target / "a.txt").read_text() == "a\n" and (target / "b.txt").read_text() == "b\n"
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [p["instance_id"] for p in predictions] == ["a", "b"] and "+a" in predictions[0]["model_patch"]
    assert workspaces.is_dir() and not list(workspaces.iterdir())  # both workspaces are gone


def test_cancel_during_a_patch_reports_it_landed_and_resume_starts_fresh(tmp_path: Path, user_repo: Path) -> None:
    before = fingerprint(user_repo)
    model = script(tmp_path, "s", [add_file("new.py", "x = 1"), {"message": "done"}])
    tasks = [TaskSpec(id="t", repo=str(user_repo), goal="g", policy="workspace-write", model=model)]
    cancel = CancelToken()

    def cancel_on_patch(event: AgentEvent) -> None:
        if event.type == "tool.start" and event.data.get("name") == "apply_patch":
            cancel.cancel("the test cancels during apply_patch")

    engine = LocalEngine(1, live_sink=lambda job: CallbackSink(cancel_on_patch))
    out = tmp_path / "out"
    [report] = run_batch(tasks, out, engine=engine, cancel=cancel, progress_stream=io.StringIO())
    assert report.status == "cancelled"
    assert report.files_changed == ["new.py"] and report.tool_calls[0].ok  # it landed, and says so
    assert "+x = 1" in (out / "t" / "patch.diff").read_text()
    assert [e["type"] for e in events(out, "t")][-1] == "turn.end"  # written by the driver from the outcome

    [again] = run_batch(tasks, out, progress_stream=io.StringIO())  # resume: the cancelled task runs again
    assert again.status == "completed" and again.files_changed == ["new.py"]
    patch = (out / "t" / "patch.diff").read_text()
    assert patch.count("+x = 1") == 1  # from a fresh workspace, not on top of the first run's edit
    assert json.loads((out / "t" / "run.json").read_text())["attempt"] == 2
    assert fingerprint(user_repo) == before
    subprocess.run(["git", "apply", "--check", str(out / "t" / "patch.diff")], cwd=user_repo, check=True)


def test_run_isolated_leaves_the_repo_as_it_is_and_writes_the_patch(tmp_path: Path, user_repo: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    before = fingerprint(user_repo)
    model = script(tmp_path, "s", [add_file("new.py", "x = 1"), {"message": "done"}])
    patch, report = tmp_path / "out.diff", tmp_path / "report.json"
    code = main(["run", "--repo", str(user_repo), "--policy", "workspace-write", "--isolated", "--patch", str(patch),
                 "--model", model, "--quiet", "--report", str(report), "add a file"])
    assert code == 0, capsys.readouterr()
    assert fingerprint(user_repo) == before
    assert json.loads(report.read_text())["patch"]["files"] == ["new.py"]
    assert f"apply {patch}" in capsys.readouterr().out
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=user_repo, check=True)
