"""`[project] name = "/abs/path/x"` once made `codebox env build` (and `codebox run`) write a
``x-1.0.dist-info/`` folder at that host path. Now the read refuses it: exit 2, one line naming
the file and key, and nothing is written outside the command's own temporary folders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from tests.agent.env.projects import write
from tests.agent.env.wheels import make_wheelhouse

ROOT = Path(__file__).resolve().parents[2]


def _tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.mark.parametrize("command", ["env", "run"])
def test_an_absolute_project_name_writes_nothing_and_exits_2(tmp_path: Path, command: str) -> None:
    target = tmp_path / "host" / "planted"
    repo = write(tmp_path / "repo", {"pyproject.toml": f'[project]\nname = "{target}"\nversion = "1.0"\n'
                                                       'dependencies = ["alpha"]\n',
                                     "planted/__init__.py": ""})
    home, temp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    temp.mkdir()
    # A wheelhouse that resolves everything: without the check, the build would get as far as writing.
    wheels = make_wheelhouse(tmp_path / "wheels")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home), "TMPDIR": str(temp),
           "XDG_CACHE_HOME": str(home / ".cache"), "CODEBOX_CACHE_DIR": str(home / "cache"), "CODEBOX_NO_INDEX": "1",
           "CODEBOX_FIND_LINKS": str(wheels)}
    before = _tree(repo)
    if command == "env":
        argv = ["env", "build", "--repo", str(repo)]
    else:
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"turns": [{"message": "done"}]}))
        argv = ["run", "--repo", str(repo), "--model", f"scripted:{script}", "--quiet", "look"]
    proc = subprocess.run([sys.executable, "-m", "agent.cli", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [f"codebox: pyproject.toml [project] name: '{target}' is not a valid project name (PEP 508: "
                     "letters, digits and '.', '_', '-' inside); refused"], proc.stderr
    # The old write went where the name pointed, after canonicalization (dashes became underscores).
    planted = Path(canonicalize_name(str(target)).replace("-", "_"))
    assert not (tmp_path / "host").exists() and not planted.parent.exists()
    assert _tree(repo) == before
    leftovers = [p for p in _tree(temp) if "dist-info" in p]
    assert leftovers == [] and not any("dist-info" in p for p in _tree(home))
