"""`codebox gc` as a user runs it, on real containers: --dry-run says what would go and what stays (and why) and
removes nothing; --owner PID touches only that process's containers; a live owner's containers stay; an older
toolchain image nothing uses goes, with its size said first. Each run sees only toolchain images of a prefix of
its own (CODEBOX_GC_TOOLCHAIN_PREFIX): the machine's own toolchains are never touched by a test."""

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
TOOLCHAINS = f"codebox-test-gc{os.getpid()}-"  # the only toolchain images these tests' gc sees


def gc(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent.cli", "gc", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT),
                                                       "CODEBOX_GC_TOOLCHAIN_PREFIX": TOOLCHAINS, **env})


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


def _runtime_like(folder: Path) -> Path:
    (folder / "lib").mkdir(parents=True)
    (folder / "runtime.json").write_text("{}", encoding="utf-8")
    (folder / "lib" / "libpython.so").write_bytes(b"\0" * 4096)
    return folder


def test_gc_removes_old_runtimes_no_container_mounts(tmp_path: Path, docker_client: Any, sandbox_image: str) -> None:
    from agent.containers.runtime import runtime_key

    parent = tmp_path / "runtimes"
    current = _runtime_like(parent / runtime_key())
    unused = _runtime_like(parent / "0.0.1-00000000")
    mounted = _runtime_like(parent / "0.0.2-11111111")
    being_made = parent / ".0.0.3-22222222.123.tmp"
    being_made.mkdir()
    not_a_runtime = parent / "notes"
    not_a_runtime.mkdir()
    box = docker_client.create_container(
        {"Image": sandbox_image, "Cmd": ["true"], "Labels": {LABEL_TASK: "gc-runtime"},
         "HostConfig": {"NetworkMode": "none", "Binds": [f"{mounted}:/.codebox:ro"]}},
        name=f"codebox-test-gc-runtime-{os.getpid()}-{time.monotonic_ns()}")
    try:
        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return gc(*args, CODEBOX_RUNTIME_DIR=str(parent))

        dry = run("--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert f"would remove old runtime {unused} (0 MB): no container mounts it" in dry.stdout
        assert f"would keep old runtime {mounted}: a container mounts it" in dry.stdout
        assert "would remove 1 old runtime folder(s)" in dry.stdout
        assert unused.is_dir()

        done = run()
        assert done.returncode == 0, done.stderr
        assert f"removing old runtime {unused}" in done.stdout and "removed 1 old runtime folder(s)" in done.stdout
        assert not unused.exists()
        assert current.is_dir() and mounted.is_dir() and being_made.is_dir() and not_a_runtime.is_dir()
    finally:
        docker_client.remove(box, force=True)


def test_gc_removes_an_older_toolchain_image_nothing_uses(tmp_path: Path, docker_client: Any) -> None:
    from tests import engine

    old, new = f"{TOOLCHAINS}go:trixie-aaaa", f"{TOOLCHAINS}go:trixie-bbbb"
    try:
        for tag in (old, new):
            (tmp_path / tag).mkdir()
            (tmp_path / tag / "f").write_text(tag)
            (tmp_path / tag / "Dockerfile").write_text("FROM scratch\nCOPY f /f\n")
            engine.build(docker_client, tmp_path / tag, tag)
            time.sleep(1.1)  # the listing says when an image was made to the second
        dry = gc("--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert f"would remove superseded toolchain image {old} (0 MB): {new} is newer and no image or container " \
               "uses it" in dry.stdout
        said = "codebox: would remove 1 superseded toolchain image(s) no image or container of docker uses"
        assert said in dry.stdout
        assert engine.image_id(docker_client, old) is not None

        done = gc()
        assert done.returncode == 0, done.stderr
        assert f"removed superseded toolchain image {old} (0 MB)" in done.stdout
        assert "codebox: removed 1 superseded toolchain image(s)" in done.stdout
        assert engine.image_id(docker_client, old) is None and engine.image_id(docker_client, new) is not None
    finally:
        for tag in (old, new):
            engine.remove_image(docker_client, tag)
