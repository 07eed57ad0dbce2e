"""Whole commands on a pseudo-terminal with real sandboxes, and the screen each one leaves (read
back through a terminal emulator): the net diff at the end of a run, a batch stopped with
Ctrl-C, a finished task whose tests fail, and an environment build's live line."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.agent.env import projects
from tests.agent.env.projects import write
from tests.agent.env.wheels import make_wheelhouse
from tests.fake_openai_server import FakeOpenAIServer, chat_reply
from tests.pty_screen import ROOT, final_screen, on_a_pty, pty_env

pytestmark = pytest.mark.docker
DEMO_REPO = ROOT / "agent" / "cli" / "demo_data" / "repo"
DEMO_SCRIPT = ROOT / "agent" / "cli" / "demo_data" / "script.json"


@pytest.fixture(scope="module", autouse=True)
def _image() -> None:
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()


def _script(tmp_path: Path, turns: list[dict[str, Any]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def test_the_end_of_a_run_shows_the_net_diff_once(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_REPO, repo)  # the demo patches backoff.py twice on its way to the fix
    raw, code = on_a_pty(["run", "--repo", str(repo), "--model", f"scripted:{DEMO_SCRIPT}", "--policy",
                          "workspace-write", "--test-cmd", "python3 -m pytest -q", "Fix the retry delays"],
                         pty_env(tmp_path))
    screen = final_screen(raw)
    assert code == 0, "\n".join(screen)
    diff = screen[screen.index("diff of what the run changed:") + 1:]
    assert diff[:3] == ["--- a/backoff.py", "+++ b/backoff.py", "@@ -6,3 +6,3 @@"]
    assert [line for line in diff if line[:1] in "+-" and not line.startswith(("---", "+++"))] == [
        "-    for n in range(1, attempts):",
        "+    for n in range(attempts):",
    ]  # not the state between the two patches (range(1, attempts + 1))
    assert not any("Ctrl-C to stop" in line for line in screen)  # the status line cleaned up after itself
    summary = next(line for line in screen if line.startswith("■"))
    assert summary.startswith("■ completed (final_message)") and "did not pass" not in summary


def test_a_finished_task_whose_tests_fail_gets_no_green_check(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_REPO, repo)
    model = _script(tmp_path, [{"tool_calls": [{"name": "run_test", "arguments": {}}]}, {"message": "Looked."}])
    quiet = tmp_path / "quiet.json"  # a task that runs no test
    quiet.write_text(json.dumps({"turns": [{"message": "Nothing to test."}]}))
    tasks = tmp_path / "tasks.jsonl"
    lines = [{"id": "failing", "repo": str(repo), "goal": "look", "test_cmd": ["python3", "-m", "pytest", "-q"]},
             {"id": "no-tests", "repo": str(repo), "goal": "look", "model": f"scripted:{quiet}"}]
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    raw, code = on_a_pty(["batch", str(tasks), "--out", str(tmp_path / "out"), "--model", model, "--env", "none"],
                         pty_env(tmp_path))
    screen = final_screen(raw)
    marks = {line.split()[1]: line for line in screen if line and line[0] in "✓✗"}
    assert code == 0, "\n".join(screen)  # both completed
    assert marks["failing"].startswith("✗ failing completed (final_message)") and "last test failed" in marks["failing"]
    assert marks["no-tests"].startswith("✓ no-tests completed")


def test_ctrl_c_in_a_batch_leaves_a_clean_screen(tmp_path: Path) -> None:
    repos = []
    for name in ("a", "b"):
        repos.append(tmp_path / name)
        shutil.copytree(DEMO_REPO, repos[-1])
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"task-{p.name}", "repo": str(p), "goal": "look"}) + "\n"
                             for p in repos))
    # The model takes its time: both tasks are on the board, thinking, when Ctrl-C comes.
    with FakeOpenAIServer(default=chat_reply("never seen", delay_s=60)) as server:
        raw, code = on_a_pty(["batch", str(tasks), "--out", str(tmp_path / "out"), "--jobs", "2", "--env", "none",
                              "--model", "m", "--base-url", server.url],
                             pty_env(tmp_path), signal_when=b"model thinking", signum=signal.SIGINT)
    screen = final_screen(raw)
    text = "\n".join(screen)
    assert code == 130, text
    assert "codebox: SIGINT received: stopping (the sandbox is being removed)" in screen
    assert sorted(line.split()[1] for line in screen if line.startswith("✗ ")) == ["task-a", "task-b"]
    # No piece of the board is left: no header over an empty table, no counts line, no task row.
    assert not any(line.split()[:4] == ["task", "step", "now", "elapsed"] for line in screen), text
    assert not any(" done · " in line and "running" in line for line in screen), text
    assert not any("model thinking" in line for line in screen), text


def test_an_environment_build_shows_a_live_line_then_only_its_steps(tmp_path: Path) -> None:
    wheels = make_wheelhouse(tmp_path / "wheels")
    repo = write(tmp_path / "repo", projects.FLAT)
    environ = pty_env(tmp_path, CODEBOX_CACHE_DIR=str(tmp_path / "cache"), CODEBOX_FIND_LINKS=str(wheels),
                      CODEBOX_NO_INDEX="1")
    raw, code = on_a_pty(["env", "build", "--repo", str(repo)], environ)
    screen = final_screen(raw)
    image = screen[-1]
    try:
        assert code == 0 and image.startswith("codebox-env:"), "\n".join(screen)
        assert b"Ctrl-C to stop" in raw and b" \xc2\xb7 env " in raw  # the live line was drawn ("· env 3s")
        steps = screen[:-1]
        assert steps and all(line.startswith("codebox: env: ") for line in steps), steps
        assert not any("Ctrl-C to stop" in line for line in screen)  # and went away
    finally:
        on_a_pty(["env", "rm", image], environ, seconds=120)
