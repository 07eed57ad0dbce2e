"""Bring your own image (issue 34): what an image lacks is said in one line, exit 2, before the model is
asked (a scripted model that fails the run if asked); a python-less image whose test program is there
runs like any other, from first call to final message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.foreign_images import Unbuildable, foreign_image

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]


def _image(name: str) -> str:
    try:
        return foreign_image(name)
    except Unbuildable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"the image {name} cannot be built here: {exc}")


def _run(tmp_path: Path, image: str, test_cmd: str, turns: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    repo = tmp_path / "repo"
    if not repo.exists():
        repo.mkdir()
        (repo / "check.sh").write_text("#!/bin/sh\ngrep -q answer notes.txt && echo CHECKED\n")
        (repo / "notes.txt").write_text("the answer\n")
        repo.chmod(0o755)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": turns}))
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache"),
               "XDG_CONFIG_HOME": str(tmp_path / "config")}
    argv = [sys.executable, "-m", "agent.cli", "run", "--repo", str(repo), "--model", f"scripted:{script}",
            "--image", image, "--env", "none", "--test-cmd", test_cmd, "--report", str(tmp_path / "r.json"),
            "--quiet", "go"]
    return subprocess.run(argv, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300)


# The model's first turn would end the run with a message no check below accepts: asked, the run fails.
NEVER = [{"message": "the model was asked"}]


@pytest.mark.parametrize(("name", "test_cmd", "said"), [
    ("busybox", "python3 -m pytest", "the program 'python3' is not on PATH in the image"),
    ("no-shell", "./check.sh", "'./check.sh' starts '/bin/sh' (its #! line), which is not at that path"),
    ("repo-is-a-file", "sh check.sh", "cannot hold the repository at /repo (it is a file in the image)"),
    ("arm64", "true", "is built for linux/arm64, and this machine runs linux/amd64"),
])
def test_what_an_image_lacks_is_one_line_before_the_model_is_asked(
    tmp_path: Path, name: str, test_cmd: str, said: str
) -> None:
    image = _image(name)
    proc = _run(tmp_path, image, test_cmd, NEVER)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert said in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert "the model was asked" not in proc.stdout + proc.stderr
    assert not (tmp_path / "r.json").exists()  # nothing ran, no token spent


def test_a_python_less_image_runs_its_test_program_from_first_call_to_final_message(tmp_path: Path) -> None:
    image = _image("busybox")
    turns = [{"tool_calls": [{"name": "search", "arguments": {"query": "answer"}}]},
             {"tool_calls": [{"name": "run_test", "arguments": {}}]},
             {"message": "checked"}]
    proc = _run(tmp_path, image, "sh check.sh", turns)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stop_reason"] == "final_message" and report["final_message"] == "checked"
    calls = report["tool_calls"]
    assert [c["name"] for c in calls] == ["search", "run_test"] and all(c.get("error") is None for c in calls), calls
    assert report["last_test"]["outcome"] == "ok"
