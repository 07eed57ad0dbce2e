"""The compose path for batches on a server, as its user runs it: `./dev.sh wheels` (codebox's wheel and its
dependencies' on the host), `docker-compose build` (the runner image installs codebox from its wheel, with no
package index: here from the offline debootstrap base, which has no pip, venv or ensurepip), then
`docker-compose run --rm batch` on scripted tasks. And compose.yaml keeps the same-path mount the sandbox
client depends on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.repos import sh

ROOT = Path(__file__).resolve().parents[2]
OFFLINE_BASE = "codebox-base:bookworm"
REGISTRY_BASE = "python:3.11-slim-bookworm"
FIX = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
       "*** End Patch\n")


def _compose_problem() -> str | None:
    if shutil.which("docker-compose") is None:
        return "docker-compose is not installed (apt-get install docker-compose)"
    return None


def _need_compose() -> None:
    problem = _compose_problem()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)


def test_compose_config_mounts_the_project_at_the_same_path() -> None:
    _need_compose()
    env = {**os.environ, "PWD": str(ROOT), "CODEBOX_JOBS": "3"}
    out = subprocess.run(
        ["docker-compose", "-f", str(ROOT / "compose.yaml"), "config"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    ).stdout
    # The runner hands host paths to the Docker daemon: the project must be at the same path inside.
    assert f"- {ROOT}:{ROOT}:rw" in out
    assert "- /var/run/docker.sock:/var/run/docker.sock:rw" in out
    assert f"working_dir: {ROOT}" in out
    assert f"PYTHONPATH: {ROOT}" in out  # the checkout first: its sandbox/ is what the sandboxes mount
    assert "codebox image build && exec codebox batch" in out and "- '3'" in out


def _base_image() -> str:
    from agent.containers.image import image_exists

    for base in (OFFLINE_BASE, REGISTRY_BASE):
        if image_exists(base):
            return base
    message = f"neither {OFFLINE_BASE} nor {REGISTRY_BASE} is there: `codebox image build` makes the first"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A server's checkout: codebox's code and compose files, wheels made by `./dev.sh wheels`, a task file."""
    project = tmp_path / "project"
    project.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("agent", "sandbox"):
        shutil.copytree(ROOT / folder, project / folder, ignore=ignore)
    for name in ("compose.yaml", "Dockerfile.runner", ".dockerignore"):
        shutil.copy2(ROOT / name, project / name)
    wheels = subprocess.run([str(ROOT / "dev.sh"), "wheels", str(project / ".wheels")], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    if wheels.returncode != 0 and not os.environ.get("CI") and "pip download" in wheels.stderr + wheels.stdout:
        pytest.skip(f"./dev.sh wheels could not download (no package index?): {wheels.stderr[-300:]}")
    assert wheels.returncode == 0, wheels.stdout[-2000:] + wheels.stderr[-2000:]
    assert list((project / ".wheels").glob("codebox_agent-*.whl")) and list((project / ".wheels").glob("pip-*.whl"))
    return project


def _tasks(project: Path) -> None:
    repo = project / "work" / "repo"
    repo.mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "tests").mkdir()
    test = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    (repo / "tests" / "test_calc.py").write_text(test)
    sh("git", "init", "-q", cwd=repo)
    sh("git", "add", ".", cwd=repo)
    sh("git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init", cwd=repo)
    script = project / "work" / "fix.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
        {"tool_calls": [{"name": "apply_patch", "arguments": {"patch": FIX}}]},
        {"tool_calls": [{"name": "run_test", "arguments": {}}]},
        {"message": "Fixed add; the tests pass."},
    ]}))
    # No test_cmd: the runner finds pytest as `codebox run` does. No env build: the runner reaches no index.
    lines = [{"id": f"fix-{n}", "repo": str(repo), "goal": "fix add", "policy": "workspace-write", "env": "none",
              "model": f"scripted:{script}"} for n in (1, 2)]
    (project / "tasks.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.fixture
def compose(project: Path) -> Iterator[tuple[list[str], dict[str, str]]]:
    """The docker-compose command for this project (its own name and runner image tag), removed afterwards."""
    _need_compose()
    name = f"codeboxtest{uuid.uuid4().hex[:10]}"
    image = f"codebox-runner-test:{name}"
    env = {**os.environ, "PWD": str(project), "CODEBOX_RUNNER_IMAGE": image,
           "CODEBOX_RUNNER_BASE_IMAGE": _base_image(), "CODEBOX_TASKS": "tasks.jsonl", "CODEBOX_OUT": "runs"}
    env.pop("OPENAI_API_KEY", None)
    command = ["docker-compose", "-p", name, "-f", str(project / "compose.yaml")]
    try:
        yield command, env
    finally:
        subprocess.run([*command, "down", "--remove-orphans"], cwd=project, env=env, capture_output=True, timeout=120)
        subprocess.run(["docker", "image", "rm", "-f", image], capture_output=True, timeout=120)


@pytest.mark.docker
def test_compose_builds_the_runner_offline_and_runs_a_scripted_batch(
    project: Path, compose: tuple[list[str], dict[str, str]], sandbox_image: str
) -> None:
    command, env = compose
    built = subprocess.run([*command, "build"], cwd=project, env=env, capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-2000:]
    assert "codebox-agent" in built.stdout and "Successfully installed" in built.stdout
    _tasks(project)
    ran = subprocess.run([*command, "run", "--rm", "batch"], cwd=project, env=env, capture_output=True, text=True,
                         timeout=600)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-4000:]
    assert "ModuleNotFoundError" not in ran.stdout + ran.stderr
    summary = [json.loads(line) for line in (project / "runs" / "summary.jsonl").read_text().splitlines()]
    assert [(row["task_id"], row["status"], row["last_test"]) for row in summary] == [
        ("fix-1", "completed", "ok"), ("fix-2", "completed", "ok")]
    patch = (project / "runs" / "fix-1" / "patch.diff").read_text()
    assert "-    return a - b" in patch and "+    return a + b" in patch
    events = [json.loads(line) for line in (project / "runs" / "fix-1" / "events.jsonl").read_text().splitlines()]
    start = next(e["data"] for e in events if e["type"] == "turn.start")
    assert start["test_cmd"] == ["python3", "-m", "pytest", "-q"]
    assert "return a - b" in (project / "work" / "repo" / "calc.py").read_text()  # the user's tree untouched
