"""`codebox env build|ls|rm` and `codebox run --env` as a user runs them, offline from a local wheelhouse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.env import projects
from tests.agent.env.projects import write
from tests.agent.env.wheels import make_wheelhouse

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]


def codebox(tmp_path: Path, wheels: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CODEBOX_CACHE_DIR": str(tmp_path / "cache"),
           "CODEBOX_FIND_LINKS": str(wheels), "CODEBOX_NO_INDEX": "1"}
    return subprocess.run([sys.executable, "-m", "agent.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_env_build_ls_rm_and_run_with_env_auto_and_none(tmp_path: Path) -> None:
    wheels = make_wheelhouse(tmp_path / "wheels")
    repo = write(tmp_path / "repo", projects.FLAT)
    built = codebox(tmp_path, wheels, "env", "build", "--repo", str(repo))
    assert built.returncode == 0, built.stderr
    image = built.stdout.strip()
    assert image.startswith("codebox-env:") and "codebox: env: building" in built.stderr
    try:
        assert image in codebox(tmp_path, wheels, "env", "ls").stdout
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"turns": [{"tool_calls": [{"name": "run_test", "arguments": {}}]},
                                                {"message": "done"}]}))
        for env in ("auto", "none"):
            report = tmp_path / f"report-{env}.json"
            run = codebox(tmp_path, wheels, "run", "--repo", str(repo), "--model", f"scripted:{script}",
                          "--env", env, "--test-cmd", "python3 -m pytest flatproj", "--report", str(report),
                          "--events", str(tmp_path / f"events-{env}.jsonl"), "go")
            assert run.returncode == 0, run.stdout + run.stderr
            data = json.loads(report.read_text())
            results = [json.loads(line) for line in (tmp_path / f"events-{env}.jsonl").read_text().splitlines()]
            output = next(e["data"]["content"] for e in results if e["type"] == "tool.end")
            # auto: the env's own pytest (the fake 99.0 from the wheelhouse); none: the image's
            assert ("fake pytest 99.0" in output) == (env == "auto"), output
            assert (data["env"] or {}).get("image") == (image if env == "auto" else None)
        refused = codebox(tmp_path, wheels, "env", "rm", "codebox-sandbox:latest")
        assert refused.returncode == 2 and "not an image codebox built" in refused.stderr
    finally:
        removed = codebox(tmp_path, wheels, "env", "rm", image)
    assert removed.returncode == 0 and f"removed {image}" in removed.stdout


def test_env_build_of_an_unresolvable_requirement_exits_2(tmp_path: Path) -> None:
    wheels = make_wheelhouse(tmp_path / "wheels")
    repo = write(tmp_path / "repo", {"requirements-dev.txt": "gamma\nnowhere-to-be-found==1\n"})
    result = codebox(tmp_path, wheels, "env", "build", "--repo", str(repo))
    assert result.returncode == 2
    assert "nowhere-to-be-found==1 (declared in requirements-dev.txt:2)" in result.stderr
    assert "Traceback" not in result.stderr
