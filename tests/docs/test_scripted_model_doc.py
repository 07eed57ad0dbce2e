"""docs/scripted-model.md is true: its "Try it" commands, run as written with a real sandbox, fix the bug; the
file format it shows is one the scripted model reads."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "scripted-model.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), re.M | re.S)


@pytest.mark.docker
def test_the_try_it_commands_fix_the_bug(tmp_path: Path, sandbox_image: str) -> None:
    commands = _blocks("sh")[0]
    bin_dir = tmp_path / "bin"  # `codebox` as the page calls it: this checkout's, by its entry point
    bin_dir.mkdir()
    (bin_dir / "codebox").write_text(f"#!/bin/sh\nexec {sys.executable} -m agent.cli \"$@\"\n")
    (bin_dir / "codebox").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "completed (final_message)" in ran.stdout
    assert "codebox: tests: python3 -m pytest -q (found tests/test_calc.py" in ran.stderr
    assert "return a + b" in (tmp_path / "try-codebox" / "calc.py").read_text()


def test_the_format_shown_is_a_script() -> None:
    from agent.model.scripted import Script, ScriptedTurn

    shown = _blocks("json")
    assert shown
    for block in shown:
        assert Script.model_validate_json(block).turns
    keys = set(ScriptedTurn.model_fields)
    table = PAGE.read_text(encoding="utf-8").split("| key of a turn |", 1)[1].split("\n\n", 1)[0]
    assert keys == set(re.findall(r"^\| `(\w+)` \|", table, re.M))  # every key documented, no more
