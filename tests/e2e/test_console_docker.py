"""`codebox run` as a person sees it, with real containers: the hostile-text attack on a real
terminal (issue 13, item 1), the diff and the failing tests at the end, --require-tests, and a
test command whose program is not in the image (found before the model is asked)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.hostile_text import CLEAR, HOSTILE, OSC52, TITLE, raw_attacks_in
from tests.pty_screen import on_a_pty

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
DEMO_REPO = ROOT / "agent" / "cli" / "demo_data" / "repo"


@pytest.fixture(scope="module", autouse=True)
def _image() -> None:
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"), "TERM": "xterm-256color", **extra}


def on_a_terminal(args: list[str], environ: dict[str, str], seconds: float = 120) -> tuple[bytes, int]:
    return on_a_pty(args, environ, seconds=seconds)


def script(tmp_path: Path, turns: list[dict[str, Any]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def patch_call(path: str, body: str = "x = 1") -> dict[str, Any]:
    patch = f"*** Begin Patch\n*** Add File: {path}\n+{body}\n*** End Patch\n"
    return {"tool_calls": [{"name": "apply_patch", "arguments": {"patch": patch}}]}


def test_hostile_names_test_args_and_final_message_never_reach_the_terminal_raw(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_REPO, repo)
    model = script(tmp_path, [
        patch_call(f"evil{OSC52}{TITLE}.py", f"s = '{CLEAR}'"),
        {"tool_calls": [{"name": "run_test", "arguments": {"args": [TITLE, "-k", CLEAR]}}]},
        {"tool_calls": [{"name": "search", "arguments": {"query": "s = "}}]},
        {"message": "all done " + HOSTILE},
    ])
    args = ["run", "--repo", str(repo), "--model", model, "--policy", "workspace-write",
            "--test-cmd", "python3 -m pytest -q", "--report", str(tmp_path / "r.json"), "go"]
    out, code = on_a_terminal(args, env(tmp_path))
    text = out.decode(errors="replace")
    assert raw_attacks_in(out) == [], text
    assert b"\x1b[" in out  # it is a terminal: colours
    assert "\\x1b]52;c;" in text and "\\x1b]0;pwned\\x07" in text  # shown, escaped
    assert text.count("all done ") == 1  # the final message, once
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["final_message"] == "all done " + HOSTILE  # the report keeps the truth
    assert code == 0

    # The same run with stdout not a terminal: plain text, not one escape sequence.
    shutil.rmtree(repo)
    shutil.copytree(DEMO_REPO, repo)
    proc = subprocess.run([sys.executable, "-m", "agent.cli", *args], cwd=ROOT, env=env(tmp_path),
                          capture_output=True, timeout=120)
    assert b"\x1b" not in proc.stdout and b"\x1b" not in proc.stderr, proc.stdout
    assert b"\\x1b]52;c;" in proc.stdout


def test_the_end_shows_the_diff_and_the_failing_tests_and_require_tests_fails_the_command(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_REPO, repo)
    model = script(tmp_path, [
        patch_call("notes.py", "NOTE = 'hello'"),
        {"tool_calls": [{"name": "run_test", "arguments": {}}]},
        {"message": "I left the bug alone."},
    ])
    base = ["run", "--repo", str(repo), "--model", model, "--policy", "workspace-write",
            "--test-cmd", "python3 -m pytest -q", "go"]
    proc = subprocess.run([sys.executable, "-m", "agent.cli", *base, "--require-tests"], cwd=ROOT,
                          env=env(tmp_path), capture_output=True, text=True, timeout=120)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "diff of what the run changed:" in out and "+NOTE = 'hello'" in out
    assert "failing tests (" in out and "test_backoff.py::" in out
    assert "codebox: --require-tests: the last test run ended failed (exit 1)" in out
    assert out.count("I left the bug alone.") == 1

    (repo / "notes.py").unlink()
    proc = subprocess.run([sys.executable, "-m", "agent.cli", *base, "--no-diff"], cwd=ROOT, env=env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0  # a completed run; tests not required
    assert "diff of what the run changed" not in proc.stdout


def test_a_missing_test_program_is_a_usage_error_before_the_model_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = script(tmp_path, [{"message": "never"}])
    args = ["run", "--repo", str(DEMO_REPO), "--model", model, "--test-cmd", "pytset -q", "--report",
            str(tmp_path / "r.json"), "go"]
    proc = subprocess.run([sys.executable, "-m", "agent.cli", *args], cwd=ROOT, env=env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr == (
        "codebox: --test-cmd: the program 'pytset' is not on PATH in the image codebox-sandbox:latest "
        "(a typo? or pass --image with one that has it)\n"
    )
    assert not (tmp_path / "r.json").exists()  # nothing ran
    # A program that is there passes, and the answer is cached for the next run.
    from agent.containers.probe import program_in_image

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert program_in_image("codebox-sandbox:latest", "python3") is True
    assert "python3" in (tmp_path / "cache" / "codebox" / "programs.json").read_text()
