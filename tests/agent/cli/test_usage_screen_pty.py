"""Usage mistakes as a person sees them on a terminal: one line, exit 2, no task block, nothing
started and no model asked. `codebox` runs on a real pseudo-terminal; the screen it leaves is
read back through a terminal emulator (tests/pty_screen.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.cli.commands.run import _preflight_problem
from agent.cli.parser import build_parser
from agent.cli.preflight import read_only_problem
from tests.fake_openai_server import FakeOpenAIServer, chat_reply
from tests.pty_screen import final_screen, on_a_pty, pty_env

SCRIPT = {"turns": [{"message": "done"}]}


@pytest.fixture
def script(tmp_path: Path) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT))
    return f"scripted:{path}"


def _one_line(tmp_path: Path, args: list[str], **env: str) -> str:
    environ = pty_env(tmp_path, **env)
    for name in ("OPENAI_API_KEY", "CODEBOX_MODEL", "OPENAI_BASE_URL"):
        if name not in env:
            environ.pop(name, None)
    raw, code = on_a_pty(args, environ, seconds=60)
    screen = [line for line in final_screen(raw) if line.strip()]
    assert code == 2, screen
    assert len(screen) == 1, screen  # one line: no usage block, no task block, no summary
    assert "▶ task" not in screen[0] and "Traceback" not in screen[0]
    return screen[0]


def test_a_repo_that_does_not_exist(tmp_path: Path, script: str) -> None:
    line = _one_line(tmp_path, ["run", "--repo", str(tmp_path / "nope"), "--model", script, "goal"])
    assert line == f"codebox: --repo {tmp_path / 'nope'}: no such folder"


def test_a_repo_that_is_a_file(tmp_path: Path, script: str) -> None:
    file = tmp_path / "file.txt"
    file.write_text("x")
    line = _one_line(tmp_path, ["run", "--repo", str(file), "--model", script, "goal"])
    assert line == f"codebox: --repo {file} is a file, not a folder: give the repository's folder"


def test_no_model(tmp_path: Path) -> None:
    line = _one_line(tmp_path, ["run", "--repo", str(tmp_path), "goal"])
    assert line == "codebox: no model given: pass --model NAME (or scripted:FILE), or set CODEBOX_MODEL"


def test_a_script_that_is_not_there(tmp_path: Path) -> None:
    line = _one_line(tmp_path, ["run", "--repo", str(tmp_path), "--model", "scripted:gone.json", "goal"])
    assert line == "codebox: --model scripted:gone.json: no such file"


def test_a_script_that_is_not_one(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"turn": []}')
    line = _one_line(tmp_path, ["run", "--repo", str(tmp_path), "--model", f"scripted:{tmp_path}/bad.json", "g"])
    assert line.startswith(f"codebox: the script {tmp_path}/bad.json is not a valid codebox script: turns:")


def test_no_api_key_for_openai(tmp_path: Path) -> None:
    line = _one_line(tmp_path, ["run", "--repo", str(tmp_path), "--model", "gpt-4.1", "goal"])
    assert line.startswith("codebox: no API key: set OPENAI_API_KEY (or name another variable with --api-key-env)")
    named = _one_line(tmp_path, ["run", "--repo", str(tmp_path), "--model", "gpt-4.1", "--api-key-env", "MY_KEY",
                                 "goal"])
    assert named.startswith("codebox: no API key: set MY_KEY")


def test_a_mistyped_flag_gets_a_did_you_mean(tmp_path: Path, script: str) -> None:
    line = _one_line(tmp_path, ["run", "--repo", str(tmp_path), "--model", script, "--max-stpes", "3", "goal"])
    assert "unrecognized arguments: --max-stpes" in line and "did you mean --max-steps?" in line
    assert line.endswith("(see codebox run --help)")
    command = _one_line(tmp_path, ["bacth", "tasks.jsonl"])
    assert "invalid choice: 'bacth'" in command and "did you mean batch?" in command


def test_a_mistyped_flag_is_named_before_the_argument_it_was_meant_to_give(tmp_path: Path, script: str) -> None:
    # argparse finds the missing --repo first; the line is about the flag the user typed
    line = _one_line(tmp_path, ["run", "--rpo", str(tmp_path), "--model", script, "goal"])
    assert line == "codebox run: unrecognized arguments: --rpo: did you mean --repo? (see codebox run --help)"


def test_a_positional_argument_given_as_a_flag(tmp_path: Path, script: str) -> None:
    line = _one_line(tmp_path, ["batch", "--tasks", str(tmp_path / "t.jsonl"), "--model", script])
    assert line == ("codebox batch: unrecognized arguments: --tasks: give TASKS without a flag"
                    " (see codebox batch --help)")
    # and a far-off name gets no suggestion (with the dashes counted, --tasks was "near" --address)
    far = _one_line(tmp_path, ["batch", str(tmp_path / "t.jsonl"), "--zzzz", "--model", script])
    assert far == "codebox batch: unrecognized arguments: --zzzz (see codebox batch --help)"


def test_a_tasks_file_that_is_not_there(tmp_path: Path, script: str) -> None:
    line = _one_line(tmp_path, ["batch", str(tmp_path / "tasks.jsonl"), "--model", script])
    assert line == f"codebox: {tmp_path / 'tasks.jsonl'}: no such file (the tasks file: one JSON task a line)"


def test_a_batch_with_no_model(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t1", "repo": str(tmp_path), "goal": "g"}) + "\n")
    line = _one_line(tmp_path, ["batch", str(tasks)])
    assert line == "codebox: task t1: no model given: pass --model NAME (or scripted:FILE), or set CODEBOX_MODEL " \
                   "(nothing was run)"


def test_a_read_only_repo_with_a_writing_policy_is_refused_before_the_model_is_asked(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("x = 1\n")
    repo.chmod(0o555)  # not writable by its owner, the user the sandbox writes as (even root: no capabilities)
    try:
        with FakeOpenAIServer([chat_reply("never")]) as server:
            line = _one_line(tmp_path, ["run", "--repo", str(repo), "--model", "m", "--base-url", server.url,
                                        "--policy", "workspace-write", "Fix it"])
            asked = len(server.posts)
        # Reading it, or writing a private copy of it, is fine.
        assert read_only_problem(str(repo), "read-only") is None
        assert read_only_problem(str(repo), "ask") is not None
        isolated = ["run", "--repo", str(repo), "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                    "--policy", "workspace-write", "--isolated", "Fix it"]
        assert _preflight_problem(build_parser().parse_args(isolated)) is None
    finally:
        repo.chmod(0o755)
    assert asked == 0
    assert line.startswith(f"codebox: --policy workspace-write: the repository {repo} is not writable by its owner")
    assert "use --isolated" in line
    assert read_only_problem(str(repo), "workspace-write") is None  # writable again
