"""The build box attacks of issue 36, for real, each judged on its harm to the host: the bytes written on its
disk, the CPU it spent, a box that goes on writing past its cap.

A hostile repository's build (as nobody, offline) replaces the build venv's python3 with a program that
writes 3 GB into whatever it is given: codebox's next step must not run it. A box streams a compressed
layer (a few KB of bz2, GBs of zeros): the host must not decompress it. A box writes past its caps: it is
removed and the build says so.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent import defaults
from agent.backends.registry import get_backend
from agent.containers.engine_api import EngineClient, NotFound
from agent.env.errors import EnvError
from agent.env.install.box import Box, BuildLimits, Deadline, Mount, StreamCapExceeded
from agent.env.install.ensure import EnvRequest, ensure_env
from agent.env.install.layer import check_layer
from agent.env.resolve.resolve import IndexConfig
from tests.agent.env.projects import write
from tests.agent.env.test_layer_limits import INSIDE, bz2_bomb
from tests.e2e.installed_wheels import pytest_wheelhouse
from tests.engine import remove_image

pytestmark = pytest.mark.docker
GB3 = 3 * 1024**3
# The repository's own build backend: its last hook replaces the build venv's python3 with a program that writes
# 3 GB into its standard output and into file descriptor 3 (where codebox's layer step once sent the layer).
HOSTILE = {
    "pyproject.toml": '[build-system]\nrequires = ["packaging"]\nbuild-backend = "hostile"\nbackend-path = ["_build"]\n'
                      '[project]\nname = "hostile"\nversion = "1.0"\ndynamic = ["dependencies"]\n',
    "hostile_pkg/__init__.py": "",
    "_build/hostile.py": f'''import os
import zipfile

FAKE = "#!/bin/sh\\nhead -c {GB3} /dev/zero >&3 2>/dev/null\\nexec head -c {GB3} /dev/zero\\n"
META = "Metadata-Version: 2.1\\nName: hostile\\nVersion: 1.0\\n"
WHEEL = "Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    folder = os.path.join(metadata_directory, "hostile-1.0.dist-info")
    os.makedirs(folder)
    with open(os.path.join(folder, "METADATA"), "w") as out:
        out.write(META)
    return "hostile-1.0.dist-info"


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    python3 = "/tmp/codebox-buildenv/bin/python3"
    os.unlink(python3)
    with open(python3, "w") as out:
        out.write(FAKE)
    os.chmod(python3, 0o755)
    name = "hostile-1.0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as wheel:
        wheel.writestr("hostile.pth", "/repo\\n")
        wheel.writestr("hostile-1.0.dist-info/METADATA", META)
        wheel.writestr("hostile-1.0.dist-info/WHEEL", WHEEL)
        wheel.writestr("hostile-1.0.dist-info/RECORD", "")
    return name
''',
}


@contextlib.contextmanager
def disk_watch(folder: Path) -> Iterator[list[int]]:
    """The most bytes the files under ``folder`` held at once (sampled every 20 ms), in a one-item list."""
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            total = 0
            for root, _dirs, files in os.walk(folder):
                for name in files:
                    with contextlib.suppress(OSError):
                        total += os.lstat(os.path.join(root, name)).st_blocks * 512
            peak[0] = max(peak[0], total)
            stop.wait(0.02)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        stop.set()
        thread.join()


def test_a_build_that_replaces_the_venv_python3_writes_nothing_big_on_the_host(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox_image: str, docker_client: Any) -> None:
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path / "cache"))
    host_tmp = tmp_path / "host-tmp"
    host_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(host_tmp))  # where a build's layers land on the host
    repo = write(tmp_path / "repo", HOSTILE)
    index = IndexConfig(find_links=[str(pytest_wheelhouse(tmp_path / "wheels"))], no_index=True)
    info = None
    try:
        with disk_watch(host_tmp) as peak:
            info = ensure_env(EnvRequest(repo=repo, base_image=sandbox_image, index=index))
        print(f"host bytes at most: {peak[0]}")
        assert peak[0] < 200 * 1024**2  # the replaced python3 would have written 3 GB here
        assert info.built and info.image_id
    finally:
        if info is not None and info.image_id:
            remove_image(docker_client, info.image_id)


def test_a_compressed_layer_from_a_box_is_refused_without_decompressing(
        tmp_path: Path, sandbox_image: str, docker_client: Any) -> None:
    """A box's stream that is bz2 (a few KB, 3 GiB of zeros inside): the layer check once spun the host's CPU
    decompressing it. The host's CPU time for the check is the measure."""
    folder = tmp_path / "bomb"
    folder.mkdir(mode=0o755)
    bz2_bomb(folder / "layer.tar", 3).chmod(0o644)
    dest = tmp_path / "out.tar"
    store = get_backend("docker").builder()
    try:
        with Box(store, sandbox_image, "attack", [Mount(host=str(folder), target="/bomb")], BuildLimits(),
                 Deadline(120)) as box:
            box.run("cat /bomb/layer.tar", "layer", stdout_to=dest)
    finally:
        store.close()
    started = time.process_time()
    with pytest.raises(EnvError, match="not a readable tar"):
        check_layer(dest, INSIDE)
    assert time.process_time() - started < 0.5


@pytest.fixture
def store() -> Iterator[Any]:
    """The Docker backend's build boxes and image store, as an environment build gets them."""
    builder = get_backend("docker").builder()
    yield builder
    builder.close()


def test_a_box_past_its_layer_cap_or_its_log_cap_is_removed_and_said(
        tmp_path: Path, sandbox_image: str, store: Any, docker_client: EngineClient,
        monkeypatch: pytest.MonkeyPatch) -> None:
    dest = tmp_path / "layer.tar"
    with Box(store, sandbox_image, "flood", [], BuildLimits(), Deadline(300)) as box:
        assert box.container is not None
        container = box.container.id
        with pytest.raises(StreamCapExceeded, match="the layer step of the flood build wrote more than 4194304 bytes"):
            box.run("head -c 268435456 /dev/zero", "layer", stdout_to=dest, max_bytes=4 * 1024**2)
        assert dest.stat().st_size <= 4 * 1024**2  # what went past the cap never reached the host file
        with pytest.raises(NotFound):
            docker_client.inspect_container(container)  # the box is gone, and what it ran
    monkeypatch.setattr(defaults, "ENV_STEP_LOG_MAX_BYTES", 2 * 1024**2)
    with Box(store, sandbox_image, "chatty", [], BuildLimits(), Deadline(300)) as box:
        assert box.container is not None
        container = box.container.id
        started = time.monotonic()
        with pytest.raises(StreamCapExceeded, match="wrote more than 2097152 bytes of log"):
            box.run("yes codebox", "log")  # never ends by itself
        assert time.monotonic() - started < 60
        with pytest.raises(NotFound):
            docker_client.inspect_container(container)
