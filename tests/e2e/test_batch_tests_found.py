"""`codebox batch` on a pseudo-terminal with real sandboxes: a task line with no test_cmd gets the command its
repository shows, as `codebox run` does; a test run that errors says why on the board, in the final table, in
summary.jsonl and in the viewer's page, and the counts say how many completed with tests not passing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.pty_screen import ROOT, final_screen, on_a_pty, pty_env
from tests.repos import sh

pytestmark = pytest.mark.docker

FIX = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
       "*** End Patch\n")


@pytest.fixture(scope="module", autouse=True)
def _image() -> None:
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()


def _repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir()
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    sh("git", "init", "-q", cwd=path)
    sh("git", "add", ".", cwd=path)
    sh("git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init", cwd=path)
    return path


def _script(path: Path, turns: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def test_batch_finds_the_test_command_and_says_why_a_test_run_errored(tmp_path: Path) -> None:
    tested = _repo(tmp_path / "tested", {"calc.py": "def add(a, b):\n    return a - b\n",
                                         "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n"
                                                               "    assert add(2, 3) == 5\n"})
    untested = _repo(tmp_path / "untested", {"calc.py": "def add(a, b):\n    return a + b\n"})
    run_test = {"tool_calls": [{"name": "run_test", "arguments": {}}]}
    fix_then_test = _script(tmp_path / "fix.json", [{"tool_calls": [{"name": "apply_patch",
                                                                     "arguments": {"patch": FIX}}]},
                                                    run_test, {"message": "Fixed; the tests pass."}])
    just_test = _script(tmp_path / "test.json", [run_test, {"message": "Looked."}])
    lines = [{"id": "found", "repo": str(tested), "goal": "fix add", "policy": "workspace-write",
              "model": fix_then_test},
             {"id": "none", "repo": str(untested), "goal": "test it", "model": just_test}]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out"
    raw, code = on_a_pty(["batch", str(tasks), "--out", str(out), "--env", "none", "--jobs", "2"], pty_env(tmp_path))
    screen = final_screen(raw)
    assert code == 0, "\n".join(screen)  # both completed
    marks = {line.split()[1]: line for line in screen if line and line[0] in "✓✗"}
    assert marks["found"].startswith("✓ found completed"), marks
    no_command = "No test command: the task names none"
    assert marks["none"].startswith("✗ none completed") and f"last test error: {no_command}" in marks["none"]
    # The board's counts (its last frame is drawn over at the end; the bytes keep it).
    assert b"0 failed \xc2\xb7 0 running \xc2\xb7 1 completed with tests not passing" in raw, raw[-3000:]
    table = screen[next(i for i, line in enumerate(screen) if line.split()[:2] == ["task", "status"]):]
    row = next(line for line in table if line.split()[:1] == ["none"])
    assert f"last test error: {no_command}" in row

    found = [json.loads(line) for line in (out / "found" / "events.jsonl").read_text().splitlines()]
    start = next(e["data"] for e in found if e["type"] == "turn.start")
    assert start["test_cmd"] == ["python3", "-m", "pytest", "-q"] and start["tests"] == "found tests/test_calc.py"
    report = json.loads((out / "found" / "report.json").read_text())
    assert report["last_test"]["outcome"] == "ok" and report["last_test"]["error"] is None
    summary = {row["task_id"]: row for row in map(json.loads, (out / "summary.jsonl").read_text().splitlines())}
    assert summary["none"]["last_test"] == "error" and summary["none"]["last_test_error"].startswith(no_command)
    assert summary["found"]["last_test_error"] is None

    view = subprocess.run([sys.executable, "-m", "agent.cli", "view", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert view.returncode == 0, view.stderr
    from agent.view import load

    page = {task.id: task for task in load(out).tasks}
    none_test = page["none"].test
    assert none_test is not None and none_test.outcome == "error" and none_test.error.startswith(no_command)
    assert none_test.chosen == "none found"
    assert page["found"].test is not None and page["found"].test.chosen == "found tests/test_calc.py"
    assert load(out).totals.tests_not_passing == 1
    assert no_command in (out / "view.html").read_text()
