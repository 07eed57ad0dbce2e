"""Cancelling an environment build for real: during the install (the build container goes, no image
is tagged, the next build works and reuses the fetched wheels) and during the resolve (uv goes)."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.cancel import CancelToken
from agent.containers.engine_api import EngineClient, NotFound
from agent.env.cancel import EnvCancelled
from agent.env.install import deps
from agent.env.install.ensure import EnvRequest, ensure_env
from agent.env.resolve.fetch import cache_dir
from agent.env.resolve.resolve import IndexConfig
from agent.protocol import EnvInfo
from tests.agent.env import projects
from tests.agent.env.projects import write
from tests.agent.env.slow import build_containers, env_images, slow_install, wait_for_install
from tests.engine import docker, remove_image

pytestmark = pytest.mark.docker
BASE = "codebox-sandbox:latest"


@pytest.fixture(scope="module", autouse=True)
def _image() -> None:
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()


@pytest.fixture()
def client() -> Iterator[EngineClient]:
    c = docker()
    yield c
    c.close()


@pytest.fixture()
def repo(tmp_path: Path, client: EngineClient, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The flat project, with a cache of its own (so its dependencies image is built here, not found);
    every image made for it is removed at the end (ours only)."""
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path / "cache"))
    path = write(tmp_path / "repo", projects.FLAT)
    yield path
    for image in env_images(client, path):
        for tag in image.get("RepoTags") or []:
            remove_image(client, tag)


def test_cancel_during_the_install_removes_the_container_tags_nothing_and_a_rebuild_works(
    repo: Path, local_index: IndexConfig, client: EngineClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_install = deps._install_script
    slow_install(monkeypatch)  # the install would take ten minutes
    cancel, failure, took = CancelToken(), [], []

    def build() -> None:
        try:
            ensure_env(EnvRequest(repo=repo, base_image=BASE, index=local_index), cancel=cancel)
        except Exception as exc:
            failure.append(exc)
        took.append(time.monotonic())

    thread = threading.Thread(target=build)
    thread.start()
    try:
        install = wait_for_install(client, os.getpid())
        cancelled_at = time.monotonic()
    finally:
        cancel.cancel("test cancel")
        thread.join(60)
    assert not thread.is_alive(), "the build did not stop on the cancel"
    assert len(failure) == 1 and isinstance(failure[0], EnvCancelled), failure
    assert "cancelled (test cancel)" in str(failure[0])
    print(f"cancel -> EnvCancelled: {took[0] - cancelled_at:.2f} s")
    with pytest.raises(NotFound):
        client.inspect_container(install)
    assert build_containers(client, os.getpid()) == []
    assert env_images(client, repo) == []
    wheels = cache_dir() / "wheels"
    assert not [p for p in wheels.rglob("*.part-*")], "a half-written cache entry"
    fetched = {p.name for p in wheels.rglob("*.whl")}
    assert {"alpha-1.0-py3-none-any.whl", "gamma-3.0-py3-none-any.whl"} <= fetched

    monkeypatch.setattr(deps, "_install_script", real_install)  # the same build, not slowed: it works and reuses
    # the fetched wheels
    before = {p: p.stat().st_mtime_ns for p in wheels.rglob("*.whl")}
    info = ensure_env(EnvRequest(repo=repo, base_image=BASE, index=local_index), cancel=CancelToken())
    assert info.built and info.image.startswith("codebox-env:")
    tags = [t for i in env_images(client, repo) for t in i.get("RepoTags") or []]
    assert sorted(tags) == sorted([info.image, *deps_tags(info)])
    assert {p: p.stat().st_mtime_ns for p in before} == before
    assert build_containers(client, os.getpid()) == []


def deps_tags(info: EnvInfo) -> list[str]:
    """The tag of the dependencies image under the environment ``info`` names."""
    from agent.env.install import images

    engine = images.EngineImages.connect()
    entry = images.find(engine, info.image_id)
    assert entry is not None
    deps = images.find(engine, entry.deps)
    assert deps is not None
    return [deps.tag]


@pytest.fixture()
def silent_index() -> Iterator[str]:
    """An index on 127.0.0.1 that accepts connections and never answers: uv waits on it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/simple"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def _children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(stat.parent.name))
    return found


def test_cancel_during_the_resolve_stops_uv(repo: Path, silent_index: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_INDEX_URL", silent_index)
    before = _children(os.getpid())
    cancel, failure = CancelToken(), []
    thread = threading.Thread(target=lambda: failure.append(_build_error(repo, cancel)))
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while not (_children(os.getpid()) - before) and time.monotonic() < deadline:
            time.sleep(0.05)  # the probe runs in a container: the first child is uv
        assert _children(os.getpid()) - before, "uv never started"
    finally:
        cancel.cancel()
        thread.join(60)
    assert not thread.is_alive() and isinstance(failure[0], EnvCancelled), failure
    assert not (_children(os.getpid()) - before), "uv outlived the cancel"


def _build_error(repo: Path, cancel: CancelToken) -> Exception | None:
    try:
        ensure_env(EnvRequest(repo=repo, base_image=BASE, index=IndexConfig()), cancel=cancel)
    except Exception as exc:
        return exc
    return None
