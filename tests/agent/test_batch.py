"""Batch: task-file validation, crash isolation, resume, summary (the runner is faked: no Docker)."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

import pytest

import agent.batch as batch
import agent.task.runner as runner
from agent.cancel import CancelToken
from agent.cli.parser import main
from agent.protocol import Report, TaskSpec


def write_tasks(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_load_tasks_reports_every_bad_line_with_its_number(tmp_path: Path) -> None:
    repo = str(tmp_path)
    path = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "ok1", "repo": repo, "goal": "g"},
            "{not json",
            {"id": "nogoal", "repo": repo},
            {"id": "extra", "repo": repo, "goal": "g", "colour": "red"},
            "",
            "# a comment",
            {"id": "ok1", "repo": repo, "goal": "again"},
            {"id": "norepo", "repo": str(tmp_path / "missing"), "goal": "g"},
            {"id": "badpolicy", "repo": repo, "goal": "g", "policy": "yolo"},
            {"id": "../escape", "repo": repo, "goal": "g"},
            {"id": "", "repo": repo, "goal": "g"},
            {"id": "ok2", "repo": repo, "goal": "g", "policy": "workspace-write", "test_cmd": ["pytest"]},
        ],
    )
    tasks, errors = batch.load_tasks(path)
    assert [t.id for t in tasks] == ["ok1", "ok2"]
    by_line = {e.line: e.message for e in errors}
    assert "folder name" in by_line[11]
    assert set(by_line) == {2, 3, 4, 7, 8, 9, 10, 11}
    assert "goal" in by_line[3] and "colour" in by_line[4] and "duplicate" in by_line[7]
    assert "not a directory" in by_line[8] and "policy" in by_line[9] and "folder name" in by_line[10]


def fake_report(task: TaskSpec, status: str = "completed", reason: str = "final_message") -> Report:
    return Report(task_id=task.id, goal=task.goal, repo=task.repo, model="fake", status=status,  # type: ignore[arg-type]
                  stop_reason=reason, started_at=0.0, duration_s=0.1)  # type: ignore[arg-type]


@pytest.fixture
def script(tmp_path: Path) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"message": "done"}]}))
    return f"scripted:{path}"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    (path / "a.txt").write_text("a\n")
    return path


def test_one_crash_never_stops_the_others_and_resume_skips_finished(
    tmp_path: Path, repo: Path, script: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    lock = threading.Lock()

    def fake_run_task(task: TaskSpec, model: Any, sink: Any, **kw: Any) -> Report:
        with lock:
            calls.append(task.id)
        if task.id == "crash":
            raise RuntimeError("kaboom")
        if task.id == "cancel":
            return fake_report(task, "cancelled", "cancelled")
        (Path(task.repo) / f"{task.id}.out").write_text(task.id + "\n")  # the run's edit, in its workspace
        return fake_report(task)

    monkeypatch.setattr(runner, "run_task", fake_run_task)
    tasks = [TaskSpec(id=i, repo=str(repo), goal="g") for i in ("a", "crash", "b", "cancel", "c")]
    out = tmp_path / "out"
    progress = io.StringIO()
    reports = batch.run_batch(tasks, out, model=script, jobs=3, progress_stream=progress)
    assert sorted(calls) == ["a", "b", "c", "cancel", "crash"]
    by_id = {r.task_id: r for r in reports}
    assert by_id["crash"].status == "error" and "kaboom" in (by_id["crash"].error or "")
    assert by_id["a"].status == "completed" and by_id["a"].files_changed == ["a.out"]
    assert by_id["a"].patch is not None and by_id["a"].patch.files == ["a.out"]
    for task in tasks:
        assert (out / task.id / "report.json").exists() and (out / task.id / "patch.diff").exists()
    assert "+b" in (out / "b" / "patch.diff").read_text() and "a.out" not in (out / "b" / "patch.diff").read_text()
    assert sorted(p.name for p in repo.iterdir()) == ["a.txt"]  # the user's folder is left as it was
    rows = [json.loads(line) for line in (out / "summary.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in rows] == ["a", "crash", "b", "cancel", "c"]
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [p["instance_id"] for p in predictions] == ["a", "b", "c"]  # errors and cancels are not predictions
    assert set(predictions[0]) == {"instance_id", "model_name_or_path", "model_patch"}
    assert "5/5 done" in progress.getvalue() and "failed" in progress.getvalue()
    assert "crash" in batch.render_table(reports)

    calls.clear()
    batch.run_batch(tasks, out, model=script, jobs=2, progress_stream=io.StringIO())
    assert calls == ["cancel"]  # finished reports are kept (errors too); a cancelled task runs again
    assert json.loads((out / "cancel" / "run.json").read_text())["attempt"] == 2

    calls.clear()
    batch.run_batch(tasks, out, model=script, retry_errors=True, progress_stream=io.StringIO())
    assert sorted(calls) == ["cancel", "crash"]

    calls.clear()
    chosen = batch.select_tasks(tasks, "^[ab]$")
    batch.run_batch(tasks, out / "filtered", model=script, selected=chosen, progress_stream=io.StringIO())
    assert sorted(calls) == ["a", "b"]


def test_environment_lines_go_through_the_board(
    tmp_path: Path, repo: Path, script: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Found on a 6-task batch on a terminal: 'codebox: env: reusing ...' lines, printed to stderr by the
    # threads that prepare the next tasks and by the tasks, were drawn into the live board, which then
    # left stale counts and headers on the screen. They now go through the view, as its other lines do.
    def choose(task: TaskSpec, repo: Path, config: Any, log: Any, cancel: Any, repo_name: str | None = None) -> None:
        log(f"reusing the environment of {task.id}")

    def fake_run_task(task: TaskSpec, model: Any, sink: Any, **kw: Any) -> Report:
        if "prepared_env" not in kw:  # not prepared ahead: the task chooses, as run_task does
            choose(task, Path(task.repo), None, kw["env_log"], None)
        return fake_report(task)

    monkeypatch.setattr(runner, "run_task", fake_run_task)
    monkeypatch.setattr(runner, "choose_task_env", choose)
    tasks = [TaskSpec(id=f"t{i}", repo=str(repo), goal="g") for i in range(4)]
    progress = io.StringIO()
    batch.run_batch(tasks, tmp_path / "out", model=script, jobs=2, progress_stream=progress)
    lines = progress.getvalue().splitlines()
    assert sorted(line for line in lines if "env:" in line) == [
        f"codebox: env: reusing the environment of t{i}" for i in range(4)]  # ahead (t2, t3) or by the task
    assert "env:" not in capsys.readouterr().err


def test_cancelled_batch_starts_nothing_new(
    tmp_path: Path, repo: Path, script: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "run_task", lambda task, *a, **k: fake_report(task))
    cancel = CancelToken()
    cancel.cancel()
    tasks = [TaskSpec(id=f"t{i}", repo=str(repo), goal="g") for i in range(3)]
    reports = batch.run_batch(tasks, tmp_path / "out", model=script, cancel=cancel, progress_stream=io.StringIO())
    assert reports == [] and not (tmp_path / "out" / "t0").exists()


def test_no_model_anywhere_is_a_report_per_task(tmp_path: Path, repo: Path) -> None:
    tasks = [TaskSpec(id="t", repo=str(repo), goal="g")]
    [report] = batch.run_batch(tasks, tmp_path / "out", model=None, progress_stream=io.StringIO())
    assert report.stop_reason == "model_error" and "--model" in (report.error or "")


def test_a_bad_base_commit_is_that_task_s_error_only(
    tmp_path: Path, repo: Path, script: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "run_task", lambda task, *a, **k: fake_report(task))
    tasks = [TaskSpec(id="bad", repo=str(repo), goal="g", base_commit="abc"),
             TaskSpec(id="good", repo=str(repo), goal="g")]
    reports = batch.run_batch(tasks, tmp_path / "out", model=script, progress_stream=io.StringIO())
    by_id = {r.task_id: r for r in reports}
    assert by_id["bad"].status == "error" and "not a git repository" in (by_id["bad"].error or "")
    assert by_id["good"].status == "completed"


def test_swe_bench_lines_are_accepted_as_they_ship(tmp_path: Path) -> None:
    line = {
        "instance_id": "org__proj-12", "repo": str(tmp_path), "base_commit": "abc123",
        "problem_statement": "It breaks.", "FAIL_TO_PASS": json.dumps(["t.py::test_a"]),
        "PASS_TO_PASS": "[]", "test_patch": "diff --git a/t.py b/t.py\n", "patch": "diff ...",
        "hints_text": "", "created_at": "2023-01-01T00:00:00Z", "version": 3.0, "environment_setup_commit": "def",
    }
    path = write_tasks(tmp_path / "swe.jsonl", [line, {**line, "instance_id": "x", "FAIL_TO_PASS": "[oops"},
                                                {**line, "instance_id": "y", "colour": "red"}])
    tasks, errors = batch.load_tasks(path)
    [task] = tasks
    assert (task.id, task.goal) == ("org__proj-12", "It breaks.")
    assert (task.FAIL_TO_PASS, task.PASS_TO_PASS) == (["t.py::test_a"], [])
    assert task.prediction_id == "org__proj-12" and task.base_commit == "abc123" and task.version == "3.0"
    assert {e.line for e in errors} == {2, 3}
    assert "not a JSON list" in errors[0].message and "colour" in errors[1].message


def test_cli_batch_refuses_a_bad_task_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_tasks(tmp_path / "t.jsonl", [{"id": "x", "repo": str(tmp_path)}, "nope"])
    assert main(["batch", str(path), "--model", "scripted:/dev/null"]) == 2
    err = capsys.readouterr().err
    assert "line 1" in err and "line 2" in err and "nothing was run" in err


def test_cli_run_with_a_missing_repo_is_a_usage_error_with_no_task_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"message": "hi"}]}))
    report_path = tmp_path / "report.json"
    code = main(["run", "--repo", str(tmp_path / "nope"), "--model", f"scripted:{script}",
                 "--report", str(report_path), "goal"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err == f"codebox: --repo {tmp_path / 'nope'}: no such folder\n"
    assert not report_path.exists()  # nothing ran: no report, as for every usage error


def test_cli_run_with_no_model_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CODEBOX_MODEL", raising=False)
    report_path = tmp_path / "r.json"
    assert main(["run", "--repo", str(tmp_path), "--report", str(report_path), "goal"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "no model given" in err
    assert not report_path.exists()


def test_cli_ask_policy_needs_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import agent.cli.commands.run as run_command

    monkeypatch.setattr(run_command, "_has_terminal", lambda: False)
    assert main(["run", "--repo", str(tmp_path), "--policy", "ask", "--model", script, "g"]) == 2
    assert "--policy ask needs a terminal" in capsys.readouterr().err


def test_a_task_whose_folder_cannot_be_written_still_gets_a_report(
    tmp_path: Path, repo: Path, script: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "run_task", lambda task, *a, **k: fake_report(task))
    out = tmp_path / "out"
    out.mkdir()
    (out / "blocked").write_text("a file where the task folder should be")
    tasks = [TaskSpec(id=i, repo=str(repo), goal="g") for i in ("ok", "blocked")]
    progress = io.StringIO()
    reports = batch.run_batch(tasks, out, model=script, progress_stream=progress)
    by_id = {r.task_id: r for r in reports}
    assert by_id["ok"].status == "completed" and by_id["blocked"].status == "error"
    assert "2/2 done · 1 failed · 0 running" in progress.getvalue()


def test_task_limits_above_the_defaults_are_honoured_in_batch(tmp_path: Path) -> None:
    from agent.cli.parser import build_parser

    args = build_parser().parse_args(["batch", "t.jsonl"])
    assert args.max_steps is None and args.timeout is None  # the task's own values apply


def test_cli_run_usage_errors_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str], script: str) -> None:
    base = ["run", "--repo", str(tmp_path), "--model", script, "--quiet"]
    assert main([*base, "--test-cmd", "pytest 'unbalanced", "g"]) == 2
    assert "No closing quotation" in capsys.readouterr().err
    assert main([*base, "--max-steps", "0", "g"]) == 2
    assert "--max-steps" in capsys.readouterr().err
    assert main([*base, "--pids", "5", "g"]) == 2
    assert "--pids" in capsys.readouterr().err
    assert main([*base, "--events", "/proc/nope/e.jsonl", "g"]) == 2
    assert "cannot write the events file" in capsys.readouterr().err


def test_a_second_writing_run_on_one_tree_is_refused_with_a_clear_error(tmp_path: Path, repo: Path,
                                                                         script: str) -> None:
    from agent.task.workspace import repo_write_lock

    report_path = tmp_path / "r.json"
    base = ["run", "--repo", str(repo), "--model", script, "--quiet", "--report", str(report_path)]
    with repo_write_lock(repo):  # another run is writing to this tree
        assert main([*base, "--policy", "workspace-write", "g"]) == 1
    report = json.loads(report_path.read_text())
    assert report["stop_reason"] == "invalid_task" and "--isolated" in report["error"]
    assert "is writing to" in report["error"]
