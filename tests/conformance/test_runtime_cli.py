"""The runtime as a user asks for it: `codebox run --runtime runsc`, a batch whose task names runsc,
and the preflight's one clear error for a runtime the daemon does not have."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.sandboxes.config import SandboxConfig

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
RELEASE = ["python3", "-c", "import platform; print('kernel', platform.release())"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    repo.chmod(0o755)
    (repo / "README.md").write_text("hi\n")
    return repo


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"tool_calls": [{"name": "run_test", "arguments": {}}]}, {"message": "ok"}]}))
    return path


def codebox(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin:/usr/local/bin", "PYTHONPATH": str(ROOT), "HOME": str(cwd),
           "XDG_CONFIG_HOME": str(cwd / "no-config")}
    return subprocess.run([sys.executable, "-m", "agent.cli", *argv], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def _runsc(target: SandboxConfig) -> None:
    if target.backend != "docker" or target.runtime != "runsc":
        pytest.skip("once, for docker-runsc")


def test_codebox_run_runtime_runsc_runs_under_gvisor_and_says_so(
    target: SandboxConfig, repo: Path, script: Path, tmp_path: Path
) -> None:
    _runsc(target)
    report = tmp_path / "report.json"
    done = codebox("run", "--quiet", "--repo", str(repo), "--model", f"scripted:{script}", "--runtime", "runsc",
                   "--image", target.image, "--env", "none", "--test-cmd", " ".join(RELEASE[:2]) + " \"" + RELEASE[2]
                   + "\"", "--report", str(report), "go", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(report.read_text())
    assert (data["backend"], data["runtime"], data["last_test"]["outcome"]) == ("docker", "runsc", "ok")
    events = codebox("run", "--quiet", "--json", "--repo", str(repo), "--model", f"scripted:{script}", "--runtime",
                     "runsc", "--image", target.image, "--env", "none", "--test-cmd", "uname -r", "go", cwd=tmp_path)
    assert "4.4.0" in events.stdout  # gVisor's kernel answered the test command


def test_a_batch_task_that_names_runsc_runs_under_it(
    target: SandboxConfig, repo: Path, script: Path, tmp_path: Path
) -> None:
    _runsc(target)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a", "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "i"],
                   check=True)
    tasks = tmp_path / "tasks.jsonl"
    base = {"repo": str(repo), "goal": "g", "model": f"scripted:{script}", "test_cmd": ["uname", "-r"],
            "image": target.image, "env": "none"}
    tasks.write_text(json.dumps({**base, "id": "gvisor", "runtime": "runsc"}) + "\n"
                     + json.dumps({**base, "id": "plain"}) + "\n")
    out = tmp_path / "out"
    done = codebox("batch", str(tasks), "--out", str(out), "--jobs", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    gvisor = json.loads((out / "gvisor" / "report.json").read_text())
    plain = json.loads((out / "plain" / "report.json").read_text())
    assert (gvisor["runtime"], plain["runtime"]) == ("runsc", "runc")
    events = (out / "gvisor" / "events.jsonl").read_text()
    assert "4.4.0" in events and "4.4.0" not in (out / "plain" / "events.jsonl").read_text()


def test_a_runtime_the_daemon_lacks_is_one_clear_error_before_anything_runs(
    target: SandboxConfig, repo: Path, script: Path, tmp_path: Path
) -> None:
    if target.runtime != "runc":
        pytest.skip("once per backend")
    done = codebox("run", "--quiet", "--backend", target.backend, "--repo", str(repo), "--model",
                   f"scripted:{script}", "--runtime", "runsc-not-registered", "--image", target.image, "--env", "none",
                   "go", cwd=tmp_path)
    assert done.returncode == 1
    message = done.stdout + done.stderr
    assert "no runtime 'runsc-not-registered'" in message and "Traceback" not in message
    assert "apt-get install runsc" in message
    if target.backend == "docker":
        assert '"runtimeArgs": ["--network=none"]' in message and "kill -HUP" in message
