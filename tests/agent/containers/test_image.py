"""The sandbox image: built once per session, then checked from inside real containers
run the way the sandbox runs them (no network, a uid with no passwd entry, read-only
root, tmpfs /tmp, no capabilities)."""

from __future__ import annotations

import os
import re
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.containers import image
from agent.containers.engine_api import EngineClient, EngineError
from tests import engine

pytestmark = pytest.mark.docker

TEST_LABEL = {"codebox.test": "test_image"}


@pytest.fixture(scope="module")
def client() -> EngineClient:
    c = engine.docker()
    try:
        c.ping()
    except EngineError as exc:
        pytest.skip(f"Docker daemon not answering (docker info fails): {exc}")
    return c


@pytest.fixture(scope="module")
def sandbox_image(client: EngineClient) -> str:
    lines: list[str] = []
    tag = image.ensure_sandbox_image(log=lines.append)
    assert tag == image.SANDBOX_IMAGE
    return tag


def run_in_sandbox(
    client: EngineClient,
    tag: str,
    command: list[str] | None,
    binds: list[str] | None = None,
) -> tuple[int, str]:
    """Run ``command`` (None: the image's) to completion in a hardened, networkless container; always remove it."""
    body: dict[str, Any] = {"Image": tag, "User": "1000:1000", "Labels": TEST_LABEL, "HostConfig": {
        "NetworkMode": "none", "ReadonlyRootfs": True, "Tmpfs": {"/tmp": "rw,exec,size=64m"}, "CapDrop": ["ALL"],
        "SecurityOpt": ["no-new-privileges"], "Binds": binds or []}}
    if command is not None:
        body["Cmd"] = command
    container = client.create_container(body)
    try:
        client.start(container)
        status = client.wait(container, timeout_s=120)
        output = client.logs(container, stdout=True, stderr=True).decode("utf-8", "replace")
    finally:
        client.remove(container, force=True)
    return status, output


def test_sandbox_image_exists_with_its_config(client: EngineClient, sandbox_image: str) -> None:
    assert image.image_exists(sandbox_image)
    config = client.inspect_image(sandbox_image)["Config"]
    assert config["Labels"]["codebox.image"] == "sandbox"
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["HOME"] == "/tmp"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["PYTEST_ADDOPTS"] == "-p no:cacheprovider"
    assert config["WorkingDir"] == "/repo"


def test_ensure_is_idempotent(sandbox_image: str) -> None:
    lines: list[str] = []
    before = image.image_size(sandbox_image)
    assert image.ensure_sandbox_image(log=lines.append) == sandbox_image
    assert lines == []  # nothing built, nothing pulled
    assert image.image_size(sandbox_image) == before


def test_python_is_at_least_3_9(client: EngineClient, sandbox_image: str) -> None:
    code, out = run_in_sandbox(client, sandbox_image, ["python3", "--version"])
    assert code == 0, out
    match = re.search(r"Python (\d+)\.(\d+)", out)
    assert match, out
    assert (int(match[1]), int(match[2])) >= (3, 9), out


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["git", "--version"], "git version"),
        (["rg", "--version"], "ripgrep"),
        (["python3", "-m", "pytest", "--version"], "pytest"),
    ],
    ids=["git", "ripgrep", "pytest"],
)
def test_tool_present(client: EngineClient, sandbox_image: str, command: list[str], expected: str) -> None:
    code, out = run_in_sandbox(client, sandbox_image, command)
    assert code == 0, out
    assert expected in out


def test_default_command_runs(client: EngineClient, sandbox_image: str) -> None:
    # An imported base has no CMD unless the import sets one; a run without a command must work.
    code, out = run_in_sandbox(client, sandbox_image, None)
    assert code == 0, out


def test_pytest_runs_on_a_read_only_repo(client: EngineClient, sandbox_image: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_ok.py").write_text(
        textwrap.dedent(
            """
            import os
            from pathlib import Path

            def test_home_is_writable():
                Path(os.environ["HOME"], "probe").write_text("x")

            def test_repo_is_read_only():
                try:
                    Path("/repo/x").write_text("x")
                except OSError:
                    return
                raise AssertionError("wrote into a read-only /repo")
            """
        )
    )
    repo.chmod(0o755)
    (repo / "test_ok.py").chmod(0o644)
    code, out = run_in_sandbox(
        client,
        sandbox_image,
        ["python3", "-m", "pytest", "-q"],
        binds=[f"{repo}:/repo:ro"],
    )
    assert code == 0, out
    assert "2 passed" in out, out
    assert not (repo / ".pytest_cache").exists()
    assert not (repo / "__pycache__").exists()


def test_image_size_reported(sandbox_image: str, record_property: Any, capsys: pytest.CaptureFixture[str]) -> None:
    sizes = {sandbox_image: image.image_size(sandbox_image)}
    if image.image_exists(image.BASE_IMAGE):
        sizes[image.BASE_IMAGE] = image.image_size(image.BASE_IMAGE)
    for tag, size in sizes.items():
        assert size > 0
        record_property(f"size_mb[{tag}]", round(size / 1e6, 1))
    with capsys.disabled():
        print("\nimage sizes: " + ", ".join(f"{t} {s / 1e6:.0f} MB" for t, s in sizes.items()))


# --- versions and formats (issue 19) ----------------------------------------------------------


def test_the_sandbox_image_carries_the_version_and_format_that_built_it(sandbox_image: str) -> None:
    from agent import __version__

    labels = image.image_labels(sandbox_image)
    assert labels is not None
    assert labels[image.LABEL_VERSION] == __version__
    assert labels[image.LABEL_FORMAT] == image.image_format()
    assert image.image_problem(sandbox_image) is None


@pytest.fixture
def stale_tag(client: EngineClient, sandbox_image: str, tmp_path: Path) -> Iterator[str]:
    """An image that looks like one an older codebox built (other build files, old version)."""
    tag = f"codebox-sandbox:pytest-stale-{os.getpid()}"
    folder = tmp_path / "stale"
    folder.mkdir()
    labels = "LABEL codebox.version=0.0.1 codebox.format=000000000000"
    (folder / "Dockerfile").write_text(f"FROM {sandbox_image}\n{labels}\n")
    engine.build(client, folder, tag)
    yield tag
    engine.remove_image(client, tag)


def test_an_image_built_by_another_codebox_is_explained(stale_tag: str) -> None:
    problem = image.image_problem(stale_tag)
    assert problem is not None
    assert "built by codebox 0.0.1" in problem and "codebox image build" in problem
    assert image.image_problem("python:3.12-not-built-by-codebox") is not None  # missing: says so
    assert "is not there" in (image.image_problem("codebox-sandbox:pytest-missing") or "")


def test_ensure_rebuilds_an_image_of_another_format(stale_tag: str) -> None:
    lines: list[str] = []
    assert image.ensure_sandbox_image(tag=stale_tag, log=lines.append) == stale_tag
    assert image.image_problem(stale_tag) is None
    assert any("rebuilt" in line and "0.0.1" in line for line in lines), lines


def test_an_image_not_built_by_codebox_is_taken_as_it_is(client: EngineClient) -> None:
    tag = f"codebox-base:pytest-plain-{os.getpid()}"
    client.tag_image(image.BASE_IMAGE, *tag.split(":"))
    try:
        assert image.image_problem(tag) is None  # e.g. --image with the user's own image
    finally:
        client.remove_image(tag)


def test_a_second_build_waits_for_the_first(tmp_path: Path) -> None:
    entered = threading.Event()
    release = threading.Event()
    order: list[str] = []
    waited: list[str] = []

    def first() -> None:
        with image.build_lock(order.append):
            entered.set()
            release.wait(10)
            order.append("first done")

    def second() -> None:
        entered.wait(10)
        with image.build_lock(waited.append):
            order.append("second in")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    entered.wait(10)
    deadline = time.monotonic() + 10
    while not waited and time.monotonic() < deadline:
        time.sleep(0.01)
    release.set()
    for t in threads:
        t.join(10)
    assert order == ["first done", "second in"]
    assert waited and "waiting" in waited[0]
