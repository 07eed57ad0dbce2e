"""`codebox gc` as a user runs it, on real containers: --dry-run says what would go and what stays (and why) and
removes nothing; --owner PID touches only that process's containers; a live owner's containers stay."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.containers.leftovers import LABEL_EXPIRES, LABEL_HOST, LABEL_OWNER, LABEL_ROLE, LABEL_TASK

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]


def gc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent.cli", "gc", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.fixture
def containers(docker_client: Any, sandbox_image: str) -> Iterator[dict[str, tuple[str, str]]]:
    """Two stopped sandbox-labelled containers, one of a process that is gone, one of this test's (alive):
    name -> (id, owner pid)."""
    made: dict[str, tuple[str, str]] = {}
    owners = {"dead": str(_dead_pid()), "alive": str(os.getpid())}
    for kind, owner in owners.items():
        name = f"codebox-test-gc-{kind}-{os.getpid()}-{time.monotonic_ns()}"
        labels = {LABEL_TASK: f"gc-{kind}", LABEL_OWNER: owner, LABEL_HOST: socket.gethostname(),
                  LABEL_ROLE: "tools", LABEL_EXPIRES: str(int(time.time() + 3600))}
        container_id = docker_client.create_container(
            {"Image": sandbox_image, "Cmd": ["true"], "Labels": labels, "HostConfig": {"NetworkMode": "none"}},
            name=name)
        made[kind] = (name, owner)
        made[f"{kind}-id"] = (container_id, owner)
    try:
        yield made
    finally:
        for kind in ("dead", "alive"):
            with contextlib.suppress(Exception):
                docker_client.remove(made[f"{kind}-id"][0], force=True)


def _exists(docker_client: Any, container_id: str) -> bool:
    try:
        docker_client.inspect_container(container_id)
    except Exception:
        return False
    return True


def test_gc_dry_run_and_owner_filter(containers: dict[str, tuple[str, str]], docker_client: Any) -> None:
    dead_name, dead_pid = containers["dead"]
    alive_name, alive_pid = containers["alive"]

    dry = gc("--dry-run")  # every codebox container on this engine: nothing removed
    assert dry.returncode == 0, dry.stderr
    assert f"would remove leftover sandbox container {dead_name}: its owner process {dead_pid} is gone" in dry.stdout
    assert f"would keep sandbox container {alive_name}: its owner process {alive_pid} is running" in dry.stdout
    assert "codebox: would remove " in dry.stdout
    assert _exists(docker_client, containers["dead-id"][0]) and _exists(docker_client, containers["alive-id"][0])

    other = gc("--owner", alive_pid)  # a live owner's containers stay, and the dead one is not its to remove
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip().endswith(f"codebox: removed 0 leftover container(s) of process {alive_pid} (docker)")
    assert _exists(docker_client, containers["dead-id"][0]) and _exists(docker_client, containers["alive-id"][0])

    mine = gc("--owner", dead_pid)
    assert mine.returncode == 0, mine.stderr
    assert f"removing leftover sandbox container {dead_name}: its owner process {dead_pid} is gone" in mine.stdout
    assert mine.stdout.strip().endswith(f"codebox: removed 1 leftover container(s) of process {dead_pid} (docker)")
    assert not _exists(docker_client, containers["dead-id"][0]) and _exists(docker_client, containers["alive-id"][0])


def test_gc_owner_must_be_a_process_id() -> None:
    bad = gc("--owner", "0")
    assert bad.returncode == 2 and "--owner must be a process id" in bad.stderr and "Traceback" not in bad.stderr
