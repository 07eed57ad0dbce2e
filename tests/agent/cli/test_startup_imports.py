"""Host start-up: what `codebox --help` and a scripted `codebox run` import.

`--help` (of any command) builds its parser from agent.defaults and imports no command module:
no pydantic, no Docker client, no console, no agent loop. A scripted `run --quiet` never loads
the OpenAI SDK, docker-py, rich (no console is drawn) or pathspec (a read-only policy matches no glob),
and its container's create request leaves before pydantic is imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
# Imported only by the real model client: a run that does not talk to a model never pays for them.
MODEL_SDKS = ("openai", "tenacity", "httpx")
# What `codebox --help` has no use for either.
HEAVY = (*MODEL_SDKS, "docker", "requests", "pydantic", "pydantic_settings", "rich", "pathspec", "agent.task.loop",
         "agent.protocol", "agent.cli.commands.run", "agent.cli.commands.batch")
# What a scripted, quiet, read-only run has no use for. The start path speaks to the daemon with
# agent.containers.engine_api: docker-py and requests (urllib3, ssl ...) are for image and
# environment builds only.
NOT_IN_A_QUIET_RUN = (*MODEL_SDKS, "docker", "requests", "pydantic_settings", "rich", "pathspec")


def _modules_after(code: str, cwd: Path) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter, with no config file or CODEBOX_* variable; it prints
    one JSON object as its last line."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("CODEBOX_")}
    env.update(PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(cwd / "no-config"))
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                         timeout=120, cwd=cwd)
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["batch", "--help"], ["env", "build", "--help"]])
def test_help_imports_no_pydantic_docker_console_or_loop(tmp_path: Path, argv: list[str]) -> None:
    found = _modules_after(
        f"""
        import contextlib, io, json, sys
        from agent.cli.parser import main
        with contextlib.redirect_stdout(io.StringIO()) as text, contextlib.suppress(SystemExit):
            main({argv!r})
        print(json.dumps({{"help": "usage: codebox" in text.getvalue(),
                          "loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
        """,
        tmp_path,
    )
    assert found == {"help": True, "loaded": []}


def test_help_with_config_files_imports_no_pydantic_either(tmp_path: Path) -> None:
    user = tmp_path / "no-config" / "codebox" / "codebox.toml"
    user.parent.mkdir(parents=True)
    user.write_text('max_steps = 44\ndeny = ["*.pem"]\n')
    (tmp_path / "pyproject.toml").write_text('[tool.codebox]\npids = 128\npolicy = "workspace-write"\n')
    found = _modules_after(
        f"""
        import contextlib, io, json, sys
        from agent.cli.parser import main
        with contextlib.redirect_stdout(io.StringIO()) as text, contextlib.suppress(SystemExit):
            main(["run", "--help"])
        help = " ".join(text.getvalue().split())
        print(json.dumps({{"defaults": "(default: 44)" in help and "(default: 128)" in help
                                       and "(default: read-only)" in help,  # an untrusted project only tightens
                          "loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
        """,
        tmp_path,
    )
    assert found == {"defaults": True, "loaded": []}


def test_help_shows_the_built_in_defaults(tmp_path: Path) -> None:
    found = _modules_after(
        """
        import contextlib, io, json
        from agent.cli.parser import main
        with contextlib.redirect_stdout(io.StringIO()) as text, contextlib.suppress(SystemExit):
            main(["run", "--help"])
        print(json.dumps(" ".join(text.getvalue().split())))
        """,
        tmp_path,
    )
    text = str(found)
    for shown in ("{read-only,workspace-write,ask}", "(default: read-only)", "(default: 30)", "(default: 900.0)",
                  "(default: 1g)", "(default: 256)", "(default: 1.0)"):
        assert shown in text, shown


def _scripted_run(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("hello\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {"tool_calls": [{"name": "search", "arguments": {"query": "hello"}}]},
        {"message": "done"},
    ]}))
    return repo, script


@pytest.mark.docker
@pytest.mark.parametrize("flags", [["--quiet"], ["--quiet", "--json"]])
def test_a_scripted_quiet_run_imports_no_model_sdk_docker_py_console_or_globs(tmp_path: Path, flags: list[str]) -> None:
    repo, script = _scripted_run(tmp_path)
    found = _modules_after(
        f"""
        import contextlib, io, json, sys
        from agent.cli.parser import main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["run", *{flags!r}, "--repo", {str(repo)!r}, "--model", "scripted:{script}", "read it"])
        print(json.dumps({{"code": code, "loaded": [m for m in {NOT_IN_A_QUIET_RUN!r} if m in sys.modules]}}))
        """,
        tmp_path,
    )
    assert found == {"code": 0, "loaded": []}


@pytest.mark.docker
def test_a_run_sends_its_create_request_before_pydantic_is_imported(tmp_path: Path) -> None:
    """The container is created first (agent.containers.launch); pydantic, the loop and the rest of
    codebox import while the daemon creates and boots it. One create: the run adopts that container."""
    repo, script = _scripted_run(tmp_path)
    found = _modules_after(
        f"""
        import contextlib, io, json, sys
        from agent.containers.engine_api import EngineClient
        seen = []
        real = EngineClient.create_container
        def create(self, *args, **kwargs):
            seen.append({{"pydantic": "pydantic" in sys.modules, "loop": "agent.task.loop" in sys.modules}})
            return real(self, *args, **kwargs)
        EngineClient.create_container = create
        from agent.cli.parser import main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["run", "--quiet", "--repo", {str(repo)!r}, "--model", "scripted:{script}", "read it"])
        print(json.dumps({{"code": code, "at_create": seen}}))
        """,
        tmp_path,
    )
    assert found == {"code": 0, "at_create": [{"pydantic": False, "loop": False}]}
