"""`codebox gc`'s toolchain images on real engines (Docker, and Podman where it is installed; required in CI with
CODEBOX_REQUIRE_PODMAN=1): small images of this test's own prefix, built one after another, stand for three
toolchains' old and new keys. The old one nothing uses goes; the one an image is built on and the one a container
uses stay, and go once those are gone. Everything this test made is removed after it."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.containers.engine_api import EngineClient, NotFound
from agent.containers.toolchain_gc import remove_superseded
from tests import engine

pytestmark = pytest.mark.docker


def _client(backend: str) -> EngineClient:
    if backend == "podman" and shutil.which("podman") is None:
        assert os.environ.get("CODEBOX_REQUIRE_PODMAN") != "1", "podman is required here and not installed"
        pytest.skip("podman is not installed (apt-get install podman)")
    return engine.podman() if backend == "podman" else engine.docker()


@pytest.fixture(params=["docker", "podman"])
def client(request: pytest.FixtureRequest, sandbox_image: str) -> Iterator[EngineClient]:
    yield _client(request.param)


def _build(client: EngineClient, folder: Path, tag: str, base: str = "scratch") -> str:
    folder.mkdir(parents=True)
    (folder / "f").write_text(tag)  # a layer of its own
    (folder / "Dockerfile").write_text(f"FROM {base}\nCOPY f /f-{uuid.uuid4().hex[:6]}\n")
    return engine.build(client, folder, tag)


def test_gc_removes_the_old_key_nothing_uses_and_keeps_what_is_used(client: EngineClient, tmp_path: Path) -> None:
    prefix = f"codebox-test-tc{uuid.uuid4().hex[:8]}-"
    old = {name: f"{prefix}{name}:trixie-aaaa" for name in ("go", "node", "rust")}
    new = {name: f"{prefix}{name}:trixie-bbbb" for name in ("go", "node", "rust")}
    on_old_node = f"{prefix[:-1]}-env:node"  # not a toolchain's repository: an environment built on the old node
    made: list[str] = []
    container = ""
    try:
        for name, tag in old.items():
            _build(client, tmp_path / f"old-{name}", tag)
            made.append(tag)
        _build(client, tmp_path / "env", on_old_node, base=old["node"])
        made.append(on_old_node)
        container = client.create_container({"Image": old["rust"], "Cmd": ["/f"], "HostConfig": {"NetworkMode": "none"},
                                             "Labels": {"codebox.test": prefix}})
        time.sleep(1.1)  # the engines' listing says when an image was made to the second
        for name, tag in new.items():
            _build(client, tmp_path / f"new-{name}", tag)
            made.append(tag)

        listed = {tag: _as_listed(client, tag) for tag in made}
        said: list[str] = []
        assert remove_superseded(client, said.append, dry_run=True, prefix=prefix) == [listed[old["go"]]]
        assert engine.image_id(client, old["go"]) is not None  # a dry run removes nothing
        assert any(line.startswith(f"would remove superseded toolchain image {listed[old['go']]} (0 MB): "
                                   f"{listed[new['go']]} is newer") for line in said), said
        assert (f"would keep superseded toolchain image {listed[old['node']]}: {listed[on_old_node]} is built on it"
                in said), said
        assert any(line.startswith(f"would keep superseded toolchain image {listed[old['rust']]}: the container ")
                   for line in said), said

        assert remove_superseded(client, lambda _: None, prefix=prefix) == [listed[old["go"]]]
        assert engine.image_id(client, old["go"]) is None
        assert all(engine.image_id(client, tag) is not None for tag in (old["node"], old["rust"], *new.values()))

        client.remove(container, force=True)
        container = ""
        engine.remove_image(client, on_old_node)
        gone = remove_superseded(client, lambda _: None, prefix=prefix)
        assert sorted(gone) == sorted(listed[old[name]] for name in ("node", "rust"))
        assert all(engine.image_id(client, tag) is not None for tag in new.values())
        assert remove_superseded(client, lambda _: None, prefix=prefix) == []
    finally:
        if container:
            with contextlib.suppress(NotFound):
                client.remove(container, force=True)
        for tag in reversed(made):
            engine.remove_image(client, tag)


def _as_listed(client: EngineClient, tag: str) -> str:
    """The tag as the engine lists it (Podman: under localhost/)."""
    tags = client.inspect_image(tag).get("RepoTags") or [tag]
    return next(t for t in tags if t.endswith(tag))
