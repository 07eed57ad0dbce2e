"""Environments on every backend x runtime, through the seam as a task gets them: built in the backend's own
build boxes and kept in its own image store, then run by its sandbox (the environment's own pytest finds the
project); `codebox run --env auto` on each; a build box as the engine made it (no network, no capability,
the limits, read-only mounts, a tmpfs its user owns) whose keep-alive reaps what a step leaves behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.backends.registry import backend_for, get_backend
from agent.env.choose import choose_for_task
from agent.env.install import images
from agent.env.install.box import BUILD_USER, Box, BuildLimits, Deadline, Mount
from agent.protocol import TaskSpec
from agent.sandboxes.config import SandboxConfig
from tests import engine
from tests.agent.env.projects import FLAT, write
from tests.agent.env.wheels import make_wheelhouse

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def env_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One cache (and record) for the session: each backend builds the environment once, every runtime of it
    reuses it. At the end every image recorded there is removed from its own engine (ours only)."""
    folder = tmp_path_factory.mktemp("conformance-env")
    yield folder
    saved = os.environ.get("CODEBOX_CACHE_DIR")
    os.environ["CODEBOX_CACHE_DIR"] = str(folder)
    try:
        for backend in sorted({e.engine for e in images.entries()}):
            store = images.EngineImages.connect(backend)
            images.remove_env_images(store, [])
            store.close()
    finally:
        if saved is None:
            os.environ.pop("CODEBOX_CACHE_DIR", None)
        else:
            os.environ["CODEBOX_CACHE_DIR"] = saved


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = make_wheelhouse(tmp_path_factory.mktemp("conformance-wheels"))
    folder.chmod(0o755)
    return folder


@pytest.fixture
def offline(env_cache: Path, wheels: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The session's cache, and the local wheelhouse as the only index: what a `codebox` process needs too."""
    variables = {"CODEBOX_CACHE_DIR": str(env_cache), "CODEBOX_FIND_LINKS": str(wheels), "CODEBOX_NO_INDEX": "1"}
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return variables


@pytest.fixture
def flat(tmp_path: Path) -> Path:
    repo = write(tmp_path / "flat", FLAT)
    for path in [repo, *repo.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return repo


def test_a_task_environment_is_built_and_kept_in_its_backend_and_its_sandbox_runs_it(
    target: SandboxConfig, flat: Path, offline: dict[str, str]
) -> None:
    task = TaskSpec(repo=str(flat), goal="g", env="auto")
    info = choose_for_task(task, flat, target)
    assert info is not None and info.image.startswith("codebox-env:") and "alpha==1.0" in info.installed
    store = get_backend(target.backend).builder()
    try:
        found = store.inspect_image(info.image_id)
        assert found is not None and found["Id"] == info.image_id  # in this backend's own store
    finally:
        store.close()
    entry = images.find(images.EngineImages.connect(target.backend), info.image_id)
    assert entry is not None and entry.engine == target.backend
    again = choose_for_task(task, flat, target)
    assert again is not None and not again.built and again.image_id == info.image_id  # a hit, no box
    config = target.replace(image=info.run_image)
    session = backend_for(config).session(flat, config, task_id=f"conf-env-{target.backend}-{target.runtime}")
    try:
        session.start()
        result = session.call("run_test", {"argv": ["python3", "-m", "pytest", "flatproj", "gamma"], "timeout_s": 60})
    finally:
        session.close()
    assert result.ok, result.output
    assert "fake pytest 99.0 from /opt/codebox-env/" in result.output and "imported flatproj" in result.output


def test_codebox_run_with_env_auto_builds_in_the_backend_it_runs_on(
    target: SandboxConfig, flat: Path, offline: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"tool_calls": [{"name": "run_test", "arguments": {}}]},
                                            {"message": "ok"}]}))
    report = tmp_path / "report.json"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "HOME": str(tmp_path),
           "XDG_CONFIG_HOME": str(tmp_path / "no-config"), **offline}
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "run", "--quiet", "--repo", str(flat), "--model", f"scripted:{script}",
         "--backend", target.backend, "--runtime", target.runtime, "--image", target.image, "--env", "auto",
         "--test-cmd", "python3 -m pytest flatproj", "--report", str(report), "go"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    data = json.loads(report.read_text())
    assert data["backend"] == target.backend and data["env"]["image"].startswith("codebox-env:")
    assert data["last_test"]["outcome"] == "ok" and "Docker only" not in done.stderr


def test_a_build_box_is_made_as_asked_and_its_keep_alive_reaps(
    target: SandboxConfig, tmp_path: Path
) -> None:
    if target.runtime != "runc":
        pytest.skip("once per backend: build boxes run on the engine's default runtime")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    limits = BuildLimits(memory="300m", pids=64, cpus=1.0, timeout_s=120)
    uid, _, gid = BUILD_USER.partition(":")
    tmpfs = {"/opt/codebox-x": f"rw,exec,nosuid,uid={uid},gid={gid},mode=755,size=16m"}
    store = get_backend(target.backend).builder()
    client = engine.docker() if target.backend == "docker" else engine.podman()
    try:
        with Box(store, target.image, "conformance", [Mount(host=str(shared), target="/mnt/shared")], limits,
                 Deadline(120), caps=[], tmpfs=tmpfs, root_steps=False) as box:
            assert box.container is not None
            host = client.inspect_container(box.container.id)["HostConfig"]
            assert host["NetworkMode"] == "none"  # (Podman lists CapDrop cap by cap: the bounding set says it)
            assert "no-new-privileges" in host["SecurityOpt"] and host["Memory"] == 300 * 2**20
            assert host["PidsLimit"] == 64 and host["NanoCpus"] == 10**9
            assert any(b.startswith(f"{shared}:/mnt/shared:ro") for b in host["Binds"])
            bounding = box.run("grep -E '^Cap(Bnd|Eff|Prm):' /proc/self/status", "caps")
            assert [line.split()[1] for line in bounding.splitlines()] == ["0" * 16] * 3, bounding
            out = box.run("id -u; cat /sys/class/net/*/operstate 2>/dev/null | wc -l; ls /sys/class/net; "
                          "touch /mnt/shared/x 2>/dev/null && echo wrote-host || echo host-read-only; "
                          "touch /opt/codebox-x/y && stat -c %u /opt/codebox-x", "check")
            assert out.split()[0] == uid and "wrote-host" not in out and "host-read-only" in out
            assert out.split()[-1] == uid and set(out.split()[2:-2]) <= {"lo"}, out
            # A step whose child outlives it: the orphan ends after the step and must not stay a zombie.
            box.run("(sleep 0.3 &) ; exit 0", "orphan")
            time.sleep(1.5)
            states = box.run("for s in /proc/[0-9]*/stat; do cut -d' ' -f3 \"$s\"; done 2>/dev/null", "states")
            assert "Z" not in states.split(), states
    finally:
        store.close()
    assert not (shared / "x").exists()
