"""The start path against real containers: the warm pool, reaping once per process, the lazy write box."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from agent.backends.pool import LABEL_POOL, PlannedTask, WarmPool
from agent.console.render import summary_text
from agent.model.scripted import ScriptedModel
from agent.protocol import AgentEvent, TaskSpec
from agent.sandboxes.config import SandboxConfig
from agent.task.events import CallbackSink
from agent.task.runner import run_task
from tests.agent.containers.labelled import task_containers, wait_no_containers

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[3]
TASK = f"pytest-start-{os.getpid()}"


@pytest.fixture
def client(docker_client: Any) -> Any:
    """The suite's Docker client (tests/conftest.py), under this module's short name."""
    return docker_client


@pytest.fixture
def image(sandbox_image: str) -> str:
    return sandbox_image


def _repo(path: Path, marker: str) -> Path:
    (path / "src").mkdir(parents=True)
    (path / "README.md").write_text(f"repo {marker}\n")
    return path


def _wait_some(client: Any, task_id: str, timeout_s: float = 30) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    found = task_containers(client, task_id)
    while not found and time.monotonic() < deadline:
        time.sleep(0.1)
        found = task_containers(client, task_id)
    return found


# --- the warm pool -------------------------------------------------------------------------------


def test_the_pool_starts_the_next_tasks_sandbox_labelled_on_its_own_repo(
    image: str, client: Any, tmp_path: Path
) -> None:
    config = SandboxConfig(image=image)
    ids = [f"{TASK}-p{i}" for i in range(4)]
    repos = [_repo(tmp_path / f"r{i}", ids[i]) for i in range(4)]
    plan = [PlannedTask(ids[i], repos[i].resolve(), config) for i in range(4)]
    with WarmPool(1, plan) as pool:
        assert not any(task_containers(client, t) for t in ids)  # nothing before the first task begins
        assert pool.claim(ids[0], repos[0].resolve(), config) is None  # the first task starts its own
        assert pool.wait_started(ids[1], timeout_s=60)  # ... while the next one's sandbox starts
        [warm] = task_containers(client, ids[1])
        assert not task_containers(client, ids[2]), "more than `size` sandboxes started ahead"
        labels = warm["Labels"]
        assert labels[LABEL_POOL] == "warm" and labels["codebox.owner"] == str(os.getpid())
        assert labels["codebox.host"] == socket.gethostname() and float(labels["codebox.expires"]) > time.time()
        info = client.inspect_container(warm["Id"])
        mounts = {m["Destination"]: m for m in info["Mounts"]}
        assert mounts["/repo"]["Source"] == str(repos[1].resolve()) and mounts["/repo"]["RW"] is False
        assert info["HostConfig"]["NetworkMode"] == "none"

        sandbox = pool.claim(ids[1], repos[1].resolve(), config)
        assert sandbox is not None and pool.hits == 1
        try:
            assert sandbox.container_ids == [warm["Id"]]
            read = sandbox.call("read_file", {"path": "README.md"})
            assert read.ok and f"repo {ids[1]}" in read.output
        finally:
            sandbox.close()
        assert _wait_some(client, ids[2])  # the claim started the one after

        # Other limits than planned: the warm container is not handed out, and it is removed.
        other = config.replace(memory="512m")
        assert pool.claim(ids[2], repos[2].resolve(), other) is None
        assert wait_no_containers(client, ids[2])
        assert _wait_some(client, ids[3])
    # close() removed the unclaimed one
    assert all(wait_no_containers(client, t) for t in ids)


def test_a_batch_task_runs_in_its_warm_sandbox(image: str, client: Any, tmp_path: Path) -> None:
    config = SandboxConfig(image=image)
    ids = [f"{TASK}-b{i}" for i in range(2)]
    repos = [_repo(tmp_path / f"b{i}", ids[i]) for i in range(2)]
    pool = WarmPool(1, [PlannedTask(ids[i], repos[i].resolve(), config) for i in range(2)])
    seen: list[dict[str, str]] = []

    def on_event(event: AgentEvent) -> None:
        if event.type == "tool.end":
            seen.extend(c["Labels"] for c in task_containers(client, event.task_id))

    script: dict[str, Any] = {
        "turns": [{"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]}, {"message": "done"}]
    }
    try:
        reports = []
        for i in range(2):
            task = TaskSpec(id=ids[i], repo=str(repos[i]), goal="read")
            model = ScriptedModel(script["turns"])
            reports.append(run_task(task, model, CallbackSink(on_event), sandbox_config=config, warm=pool))
    finally:
        pool.close()
    assert [r.status for r in reports] == ["completed", "completed"], [summary_text(r) for r in reports]
    assert pool.hits == 1  # the second task found its sandbox started
    assert [labels.get(LABEL_POOL) for labels in seen] == [None, "warm"]
    assert all(wait_no_containers(client, t) for t in ids)


def test_a_warm_sandbox_goes_with_its_sigkilled_owner(image: str, client: Any, tmp_path: Path) -> None:
    repos = [_repo(tmp_path / f"k{i}", str(i)) for i in range(2)]
    ids = [f"{TASK}-k{i}" for i in range(2)]
    script = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from agent.backends.pool import PlannedTask, WarmPool
        from agent.sandboxes.config import SandboxConfig
        cfg = SandboxConfig(image={image!r})
        plan = [PlannedTask(t, Path(r), cfg) for t, r in {list(zip(ids, map(str, repos), strict=True))!r}]
        pool = WarmPool(1, plan)
        pool.claim(plan[0].task_id, plan[0].repo, cfg)
        print("started" if pool.wait_started(plan[1].task_id, 60) else "not started", flush=True)
        time.sleep(120)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
        [warm] = task_containers(client, ids[1])
        assert warm["State"] == "running", warm["State"]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)
        assert wait_no_containers(client, ids[1]), "a warm container outlived its SIGKILLed owner"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --- reaping: once per process, beside the start ---------------------------------------------------


def test_leftovers_are_reaped_once_per_process_beside_the_first_start(image: str, tmp_path: Path) -> None:
    """The first start of a process reaps (in the background); later starts of that process do not."""
    repo = _repo(tmp_path / "reap", "reap")
    script = textwrap.dedent(
        f"""
        import json
        from pathlib import Path
        from agent.containers import leftovers
        from agent.containers.engine import DOCKER
        from agent.containers.sandbox import Sandbox
        from agent.sandboxes.config import SandboxConfig
        reaps = []
        real = leftovers.reap_leftovers
        def counting(*args, **kwargs):
            reaps.append(1)
            return real(*args, **kwargs)
        leftovers.reap_leftovers = counting  # counts the real reaper's runs, changes nothing
        for n in range(3):
            with Sandbox(Path({str(repo)!r}), SandboxConfig(image={image!r}), task_id="{TASK}-reaper-%d" % n) as sb:
                assert sb.call("read_file", {{"path": "README.md"}}).ok
        import time
        end = time.monotonic() + 20
        while not reaps and time.monotonic() < end:  # it runs beside the first start: let it finish
            time.sleep(0.05)
        again = leftovers.reap_in_background("docker", DOCKER.connect) is not None
        print(json.dumps({{"reaps": len(reaps), "again": again}}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"reaps": 1, "again": False}


# --- the write box -------------------------------------------------------------------------------


def test_the_write_box_starts_only_at_the_first_allowed_write(image: str, client: Any, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "w", "w")
    os.chown(repo, os.getuid(), os.getgid())
    task_id = f"{TASK}-write"
    roles_after: list[list[str]] = []

    def on_event(event: AgentEvent) -> None:
        if event.type == "tool.end":
            roles_after.append(sorted(c["Labels"]["codebox.role"] for c in task_containers(client, task_id)))

    def add(path: str) -> dict[str, Any]:
        patch = f"*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch\n"
        return {"name": "apply_patch", "arguments": {"patch": patch}}

    script: dict[str, Any] = {"turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {"tool_calls": [add("docs/denied.txt")]},
        {"tool_calls": [{"name": "search", "arguments": {"query": "repo"}}]},
        {"tool_calls": [add("src/allowed.txt")]},
        {"tool_calls": [add("src/second.txt")]},
        {"message": "done"},
    ]}
    task = TaskSpec(id=task_id, repo=str(repo), goal="write", policy="workspace-write", allow=["src/**"])
    model = ScriptedModel(script["turns"])
    report = run_task(task, model, CallbackSink(on_event), sandbox_config=SandboxConfig(image=image))
    assert report.status == "completed", summary_text(report)
    assert roles_after == [["tools"], ["tools"], ["tools"], ["tools", "write"], ["tools", "write"]]
    assert (repo / "src" / "allowed.txt").exists() and not (repo / "docs").exists()
    assert wait_no_containers(client, task_id)


# --- early starts and a missing image --------------------------------------------------------------


def test_a_missing_image_still_fails_fast_when_the_sandbox_was_started_early(client: Any, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "m", "m")
    task_id = f"{TASK}-noimage"
    config = SandboxConfig(image="codebox-no-such-image:none")
    pool = WarmPool(1)
    pool.prestart(PlannedTask(task_id, repo.resolve(), config))
    model = ScriptedModel([{"message": "never asked"}])
    try:
        task = TaskSpec(id=task_id, repo=str(repo), goal="g")
        report = run_task(task, model, CallbackSink(lambda _e: None), sandbox_config=config, warm=pool)
    finally:
        pool.close()
    assert report.stop_reason == "sandbox_error" and "codebox image build" in (report.error or ""), summary_text(report)
    assert model.requests == []
    assert wait_no_containers(client, task_id)


def test_codebox_run_starts_its_sandbox_early_and_leaves_nothing(image: str, client: Any, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "c", "cli")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {"message": "done"},
    ]}))
    report_path = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    base = [sys.executable, "-m", "agent.cli", "run", "--quiet", "--repo", str(repo), "--model", f"scripted:{script}"]
    done = subprocess.run([*base, "--report", str(report_path), "read"], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_path.read_text())
    assert report["status"] == "completed" and report["tool_calls"][0]["ok"] is True
    assert not task_containers(client, report["task_id"])

    missing = subprocess.run([*base, "--image", "codebox-no-such-image:none", "--report", str(report_path), "read"],
                             env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 1, missing.stdout + missing.stderr
    report = json.loads(report_path.read_text())
    assert report["stop_reason"] == "sandbox_error" and "codebox image build" in report["error"]
    assert report["steps"] == 0 and not task_containers(client, report["task_id"])
