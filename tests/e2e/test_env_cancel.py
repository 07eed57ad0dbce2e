"""Ctrl-C while an environment builds, as a user does it: `codebox run` exits 130 with one line, and
`codebox batch` ends its tasks `cancelled`; neither waits for the build, neither leaves a container
or an image behind. The build is made slow (tests/agent/env/slow.py) so that it is still running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.containers.leftovers import LABEL_OWNER
from agent.env.install import images
from tests import engine
from tests.agent.env import projects
from tests.agent.env.projects import write
from tests.agent.env.slow import sitecustomize_folder, wait_for_install
from tests.agent.env.wheels import make_wheelhouse
from tests.repos import sh

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
BOUND_S = 10  # the build would take ten minutes; the cancel must not wait for it


@pytest.fixture(scope="module", autouse=True)
def _image() -> None:
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()


def start(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    """`codebox ARGS` in the background, its environment builds from a local wheelhouse and block."""
    path = os.pathsep.join([str(sitecustomize_folder(tmp_path)), str(ROOT)])
    env = {**os.environ, "PYTHONPATH": path, "CODEBOX_CACHE_DIR": str(tmp_path / "cache"),
           "CODEBOX_FIND_LINKS": str(make_wheelhouse(tmp_path / "wheels")), "CODEBOX_NO_INDEX": "1",
           "CODEBOX_WORKSPACE_ROOT": str(tmp_path / "ws")}
    return subprocess.Popen([sys.executable, "-m", "agent.cli", *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def interrupt_during_the_install(
    proc: subprocess.Popen[str], signum: int = signal.SIGINT
) -> tuple[int, str, str, float]:
    """``signum`` once the build container runs; the exit code, stdout, stderr and seconds to exit."""
    client = engine.docker()
    try:
        wait_for_install(client, proc.pid)
        sent = time.monotonic()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
        return proc.returncode, out, err, time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def leftovers(owner: int, folder: Path) -> tuple[list[str], list[str]]:
    """Containers of process ``owner``, and env images made from a repository under ``folder``."""
    client = engine.docker()
    containers = [c["Names"][0].lstrip("/") for c in engine.containers(client, f"{LABEL_OWNER}={owner}")]
    made = [i["Id"] for i in engine.images(client, images.LABEL_REPO)
            if (i.get("Labels") or {}).get(images.LABEL_REPO, "").startswith(str(folder))]
    return containers, made


def scripted(tmp_path: Path) -> str:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"message": "done"}]}))
    return f"scripted:{script}"


def test_ctrl_c_of_codebox_run_during_the_env_build_exits_130_with_one_line(tmp_path: Path) -> None:
    repo = write(tmp_path / "repo", projects.FLAT)
    proc = start(tmp_path, "run", "--repo", str(repo), "--model", scripted(tmp_path), "--env", "auto", "go")
    code, out, err, took = interrupt_during_the_install(proc)
    print(f"codebox run: SIGINT -> exit {took:.2f} s")
    assert code == 130, out + err
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if "cancel" in line] == [
        "codebox: cancelled while preparing the environment"], err
    assert took < BOUND_S
    assert leftovers(proc.pid, tmp_path) == ([], [])


def test_ctrl_c_of_codebox_batch_during_the_env_build_cancels_its_tasks(tmp_path: Path) -> None:
    repo = write(tmp_path / "repo", projects.FLAT)
    sh("git", "init", "-q", cwd=repo)
    sh("git", "add", ".", cwd=repo)
    sh("git", "commit", "-qm", "init", cwd=repo)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "repo": str(repo), "goal": "go", "env": "auto"}) + "\n"
                             for i in range(3)))
    out_dir = tmp_path / "out"
    proc = start(tmp_path, "batch", str(tasks), "--jobs", "2", "--out", str(out_dir), "--model", scripted(tmp_path))
    code, out, err, took = interrupt_during_the_install(proc)
    print(f"codebox batch: SIGINT -> exit {took:.2f} s\n{err}")
    assert code == 130, out + err
    assert "Traceback" not in err
    reports = {p.parent.name: json.loads(p.read_text()) for p in out_dir.glob("*/report.json")}
    assert reports and set(reports) <= {"t0", "t1", "t2"}, reports
    assert {r["status"] for r in reports.values()} == {"cancelled"}, reports
    assert took < BOUND_S
    assert leftovers(proc.pid, tmp_path) == ([], [])
    assert not list((tmp_path / "ws").iterdir()), "a workspace was left"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_of_codebox_env_build_stops_the_build_with_one_line(tmp_path: Path, signum: int) -> None:
    repo = write(tmp_path / "repo", projects.FLAT)
    proc = start(tmp_path, "env", "build", "--repo", str(repo))
    code, out, err, took = interrupt_during_the_install(proc, signum)
    name = signal.Signals(signum).name
    print(f"codebox env build: {name} -> exit {took:.2f} s")
    assert code == 130 and out == "", err
    assert "Traceback" not in err
    assert err.splitlines()[-1] == f"codebox: the environment build was cancelled ({name} received)", err
    assert took < BOUND_S
    assert leftovers(proc.pid, tmp_path) == ([], [])
