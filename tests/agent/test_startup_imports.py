"""Host start-up: what `codebox --help` and a scripted `codebox run` import (the OpenAI SDK: nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Imported only by the real model client: a run that does not talk to a model never pays for them.
MODEL_SDKS = ("openai", "tenacity", "httpx")
# What `codebox --help` has no use for either (it reads the run's defaults from TaskSpec: pydantic).
HEAVY = (*MODEL_SDKS, "docker", "requests")


def _modules_after(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; it prints one JSON object as its last line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_help_imports_no_model_sdk_and_no_docker() -> None:
    found = _modules_after(
        f"""
        import contextlib, io, json, sys
        from agent.cli import main
        with contextlib.redirect_stdout(io.StringIO()) as text, contextlib.suppress(SystemExit):
            main(["--help"])
        print(json.dumps({{"help": "usage: codebox" in text.getvalue(),
                          "loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
        """
    )
    assert found == {"help": True, "loaded": []}


@pytest.mark.docker
def test_a_scripted_run_imports_no_model_sdk_and_no_docker_py(tmp_path: Path) -> None:
    """The start path speaks to the daemon with agent.containers.engine_api: docker-py and
    requests (urllib3, charset_normalizer...) are for image and environment builds only."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("hello\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {"tool_calls": [{"name": "search", "arguments": {"query": "hello"}}]},
        {"message": "done"},
    ]}))
    found = _modules_after(
        f"""
        import contextlib, io, json, sys
        from agent.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["run", "--quiet", "--repo", {str(repo)!r}, "--model", "scripted:{script}", "read it"])
        print(json.dumps({{"code": code, "loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
        """
    )
    assert found == {"code": 0, "loaded": []}
