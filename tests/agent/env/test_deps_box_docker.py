"""The dependencies box of a real build: how it is made for an all-wheels lock, and what runs in it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.env.install import box
from agent.env.install.ensure import EnvRequest, ensure_env
from agent.env.resolve.resolve import IndexConfig
from agent.protocol import EnvInfo
from tests.agent.env.projects import write
from tests.agent.env.wheels import make_wheel
from tests.engine import docker, run

pytestmark = pytest.mark.docker
BASE = "codebox-sandbox:latest"
LIMITS = box.BuildLimits(memory="700m", pids=111, cpus=1.0, timeout_s=600)
# A wheel whose .pth would leave a file in the venv if any interpreter started with its site folder.
PTH = ("import os; exec(\"try:\\n open('/opt/codebox-env/PTH_RAN', 'w').write('ran')\\n"
       "except OSError:\\n pass\")\n")


@pytest.fixture(scope="module", autouse=True)
def _image() -> None:
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()


@pytest.fixture(scope="module")
def made() -> Iterator[list[str]]:
    """Image ids this module made: removed at its end (ours only)."""
    ids: list[str] = []
    yield ids
    client = docker()
    for image_id in reversed(ids):
        with contextlib.suppress(Exception):  # cleanup only: gone already, or still in use
            client.remove_image(image_id)


@pytest.fixture()
def boxes(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The create options of every box (a spy: the real box is made)."""
    seen: list[dict[str, Any]] = []
    real = box.Box.create_options

    def spy(self: box.Box) -> dict[str, Any]:
        options = real(self)
        seen.append({"purpose": self.purpose, **options})
        return options

    monkeypatch.setattr(box.Box, "create_options", spy)
    return seen


@pytest.fixture()
def steps(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every box step: (box purpose, user)."""
    seen: list[tuple[str, str]] = []
    real = box.Box._exec

    def spy(self: box.Box, script: str, user: str, *args: Any, **kwargs: Any) -> str:
        seen.append((self.purpose, user))
        return real(self, script, user, *args, **kwargs)

    monkeypatch.setattr(box.Box, "_exec", spy)
    return seen


@pytest.fixture()
def pth_index(tmp_path: Path, wheelhouse: Path) -> IndexConfig:
    extra = tmp_path / "pth-wheels"
    make_wheel(extra, "pthpkg", "1.0", {"pthpkg/__init__.py": "VALUE = 1\n", "pthpkg_hook.pth": PTH})
    return IndexConfig(find_links=[str(wheelhouse), str(extra)], no_index=True)


def build(repo: Path, index: IndexConfig, made: list[str]) -> EnvInfo:
    info = ensure_env(EnvRequest(repo=repo, base_image=BASE, index=index, limits=LIMITS))
    made.append(info.image_id)
    return info


def listing(image: str, path: str) -> str:
    """``find path`` in the image, by sh alone (no Python starts, so no .pth of the image runs)."""
    return run(docker(), image, ["sh", "-c", f"find {path} | sort"])


def test_an_all_wheels_lock_is_installed_with_no_root_no_capability_no_cpu_quota_and_no_package_code(
    tmp_path: Path, pth_index: IndexConfig, made: list[str], boxes: list[dict[str, Any]],
    steps: list[tuple[str, str]]
) -> None:
    repo = write(tmp_path / "repo", {"requirements.txt": "pthpkg\nalpha\n", "app.py": ""})
    info = build(repo, pth_index, made)
    assert "pthpkg==1.0" in info.installed
    deps = next(o for o in boxes if o["purpose"] == "deps")
    assert deps["network_mode"] == "none" and deps["cap_drop"] == ["ALL"] and deps["cap_add"] == []
    # the keep-alive: neither root nor the build user (which ends every process of its own before codebox's steps)
    assert deps["security_opt"] == ["no-new-privileges"] and deps["user"] == box.BUILD_USER
    assert deps["nano_cpus"] == 0  # no quota; the memory, pids and time limits stay
    assert deps["mem_limit"] == "700m" and deps["memswap_limit"] == "700m" and deps["pids_limit"] == 111
    assert all(v["mode"] == "ro" for v in deps["volumes"].values())
    assert [user for purpose, user in steps if purpose == "deps"] == [box.BUILD_USER] * 2  # nothing as root
    files = listing(info.image_id, "/opt/codebox-env")
    assert "/opt/codebox-env/PTH_RAN" not in files  # the wheel's .pth never ran during the build
    assert "pthpkg/__pycache__/__init__.cpython-" in files  # bytecode compiled all the same


@pytest.fixture()
def loads(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every image load: the tags (or ``<untagged>``) of the images in its manifest (a spy: the load runs)."""
    import json
    import tarfile

    from agent.containers.builds import EngineBuilder

    seen: list[list[str]] = []
    real = EngineBuilder.load_image

    def spy(self: EngineBuilder, archive: Path, watch: Callable[[], None] | None = None) -> None:
        with tarfile.open(archive) as tar:
            member = tar.extractfile("manifest.json")
            assert member is not None
            seen.append([(m["RepoTags"] or ["<untagged>"])[0] for m in json.loads(member.read())])
        real(self, archive, watch)

    monkeypatch.setattr(EngineBuilder, "load_image", spy)
    return seen


def test_the_static_path_loads_the_dependencies_and_the_environment_image_in_one_docker_load(
    tmp_path: Path, wheelhouse: Path, made: list[str], loads: list[list[str]]
) -> None:
    from agent.env.install import images

    extra = tmp_path / "own-wheels"  # a lock of this test's own: its dependencies image is built here
    make_wheel(extra, "onlyhere", "1.0", {"onlyhere/__init__.py": f"WHERE = {str(tmp_path)!r}\n"})
    index = IndexConfig(find_links=[str(wheelhouse), str(extra)], no_index=True)
    files = {"requirements.txt": "onlyhere\n", "app.py": ""}
    info = build(write(tmp_path / "one", files), index, made)
    engine = images.EngineImages.connect()
    entry = images.find(engine, info.image_id)
    assert entry is not None and entry.deps
    made.append(entry.deps)
    # The venv, untagged, while the bytecode compiles; then the bytecode layer and the project layer in one load.
    assert len(loads) == 2 and loads[0] == ["<untagged>"] and loads[1][-1] == info.image
    assert loads[1][0].startswith(f"{images.REPOSITORY}-deps:")
    base_layers = (engine.inspect(BASE) or {})["RootFS"]["Layers"]
    deps_layers = (engine.inspect(entry.deps) or {})["RootFS"]["Layers"]
    env_layers = (engine.inspect(info.image_id) or {})["RootFS"]["Layers"]
    assert env_layers[:-1] == deps_layers  # the environment = its dependencies image + the project layer
    assert deps_layers[:-2] == base_layers  # the dependencies image = the base + the venv + its bytecode
    loads.clear()  # the same lock for another project: the dependencies image is reused, one load
    other = build(write(tmp_path / "two", {**files, "other.py": "", "setup.cfg": "[metadata]\nname = two\n"}),
                  index, made)
    assert other.image_id != info.image_id and loads == [[other.image]]
    engine.close()


@pytest.fixture()
def partials(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the untagged images the builds loaded (the venv while its bytecode compiles)."""
    from agent.env.cancel import NEVER
    from agent.env.install import layer

    seen: list[str] = []
    real = layer.load_stack

    def spy(client: Any, parent: str, stack: list[layer.Stacked], before: Any = None, cancel: Any = NEVER) -> list[str]:
        ids = real(client, parent, stack, before, cancel)
        seen.extend(i for i, image in zip(ids, stack, strict=True) if not image.tag)
        return ids

    monkeypatch.setattr(layer, "load_stack", spy)
    return seen


def test_the_untagged_venv_image_is_gone_after_a_build_and_after_a_failed_one(
    tmp_path: Path, wheelhouse: Path, made: list[str], partials: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent.env.errors import EnvError
    from agent.env.install import deps, images
    from tests.agent.env.slow import env_images

    extra = tmp_path / "own-wheels"
    make_wheel(extra, "onlyhere", "1.0", {"onlyhere/__init__.py": f"WHERE = {str(tmp_path)!r}\n"})
    index = IndexConfig(find_links=[str(wheelhouse), str(extra)], no_index=True)
    engine = images.EngineImages.connect()
    build(write(tmp_path / "one", {"requirements.txt": "onlyhere\n"}), index, made)
    assert len(partials) == 1 and engine.inspect(partials[0]) is None
    assert not list(images.record_dir().glob("loading-*"))  # nor the record's file naming it
    make_wheel(extra, "onlyhere", "2.0", {"onlyhere/__init__.py": f"WHERE = {str(tmp_path)!r}\n"})
    monkeypatch.setattr(deps, "_bytecode_script", lambda target: "sleep 3; exit 7")  # the venv loads meanwhile
    repo = write(tmp_path / "two", {"requirements.txt": "onlyhere>=2\n"})
    with pytest.raises(EnvError, match=r"the bytecode step failed \(exit 7\)"):
        build(repo, index, made)
    assert len(partials) == 2 and engine.inspect(partials[1]) is None
    assert env_images(docker(), repo) == []
    engine.close()


def test_the_box_starts_while_uv_resolves_and_a_reused_dependencies_image_starts_no_box(
    tmp_path: Path, wheelhouse: Path, made: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from agent.env.install import images
    from agent.env.resolve import sdists
    extra = tmp_path / "own-wheels"  # no recorded dependencies image can hold this package: a build is sure
    make_wheel(extra, "onlyhere", "1.0", {"onlyhere/__init__.py": f"WHERE = {str(tmp_path)!r}\n"})
    index = IndexConfig(find_links=[str(wheelhouse), str(extra)], no_index=True)
    resolved: list[float] = []
    real_resolve = sdists.resolve

    def slow_resolve(*args: Any, **kwargs: Any) -> Any:
        lock = real_resolve(*args, **kwargs)
        time.sleep(1.0)  # a resolve from a real index
        resolved.append(time.monotonic())
        return lock

    monkeypatch.setattr(sdists, "resolve", slow_resolve)
    real_options = box.Box.create_options
    created: list[float] = []

    def timed(self: box.Box) -> dict[str, Any]:
        if self.purpose == "deps":
            created.append(time.monotonic())
        return real_options(self)

    monkeypatch.setattr(box.Box, "create_options", timed)
    files = {"requirements.txt": "onlyhere\nalpha\n", "app.py": ""}
    info = build(write(tmp_path / "one", files), index, made)
    engine = images.EngineImages.connect()
    entry = images.find(engine, info.image_id)
    assert entry is not None
    made.append(entry.deps)
    assert len(created) == 1 and created[0] < resolved[0]  # one box, made before the resolve ended
    created.clear()
    other = build(write(tmp_path / "two", {**files, "setup.cfg": "[metadata]\nname = two\n"}), index, made)
    assert images.find(engine, other.image_id) is not None and created == []  # reused: no box at all
    engine.close()


def test_an_untagged_image_a_killed_build_left_is_removed_by_the_next_build(
    tmp_path: Path, wheelhouse: Path, made: list[str]
) -> None:
    import json
    import subprocess

    from agent.env.install import images, layer

    engine = images.EngineImages.connect()
    left, running = (layer.load_stack(engine.store, BASE, [layer.Stacked(
        [layer.layer_from_files(tmp_path / f"{name}.tar", {f"opt/codebox-env/{name}.txt": (str(tmp_path), 0o644)})],
        "", {})])[0] for name in ("left", "running"))
    gone = subprocess.Popen(["true"])  # a process that has ended: the killed build
    gone.wait()
    dead = images.mark_loading(left)
    dead.write_text(json.dumps({**json.loads(dead.read_text()), "pid": gone.pid}))
    alive = images.mark_loading(running)  # this process's: a build still on its way
    extra = tmp_path / "own-wheels"
    make_wheel(extra, "onlyhere", "1.0", {"onlyhere/__init__.py": f"WHERE = {str(tmp_path)!r}\n"})
    index = IndexConfig(find_links=[str(wheelhouse), str(extra)], no_index=True)
    build(write(tmp_path / "one", {"requirements.txt": "onlyhere\n"}), index, made)
    assert engine.inspect(left) is None and not dead.exists()
    assert engine.inspect(running) is not None and alive.exists()
    alive.unlink()
    assert engine.remove(running)
    engine.close()
