"""A new user's path, as the README writes it: a plain `git clone`, then `./dev.sh demo` on a terminal. It
installs codebox's run-time dependencies only (not the dev extra), in one progress line, and runs the demo to
its diff; its temporary folder goes. (Needs the package index, as a new user does; the sandbox image is the
one this session built.)"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.pty_screen import ROOT, final_screen, on_a_pty

pytestmark = pytest.mark.docker


def test_a_plain_clone_runs_the_demo_with_one_command(tmp_path: Path, sandbox_image: str) -> None:
    clone = tmp_path / "codebox"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    assert not (clone / ".venv").exists()
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "NO_COLOR")}
    env.update({"TERM": "xterm-256color", "TMPDIR": str(temp), "XDG_CONFIG_HOME": str(tmp_path / "config")})
    started = time.monotonic()
    raw, code = on_a_pty(["demo"], env, seconds=900, cwd=clone, program=[str(clone / "dev.sh")])
    took = time.monotonic() - started
    screen = final_screen(raw)
    shown = "\n".join(screen)
    if code != 0 and "could not" in shown.lower() and "pip" in shown and not os.environ.get("CI"):
        pytest.skip(f"the package index is not reachable: {screen[-3:]}")
    assert code == 0, shown[-4000:]
    said = [line for line in screen if line.startswith("dev.sh:")]
    assert len(said) == 1 and said[0].startswith("dev.sh: installed codebox into .venv in "), said  # one line left
    assert b"installing codebox and its run-time dependencies into .venv" in raw  # the live line, drawn over
    assert not any(word in shown for word in ("Collecting", "Successfully installed", "Requirement already"))
    assert "-    for n in range(1, attempts):" in shown and "+    for n in range(attempts):" in shown
    assert "completed (final_message)" in shown and list(temp.glob("codebox-demo-*")) == []
    python = str(clone / ".venv" / "bin" / "python")
    assert subprocess.run([python, "-c", "import agent, rich, openai"], timeout=60).returncode == 0
    assert subprocess.run([python, "-c", "import pytest"], capture_output=True, timeout=60).returncode != 0
    print(f"new user: git clone + ./dev.sh demo took {took:.0f} s")
