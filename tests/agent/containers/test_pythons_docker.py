"""Each Python source that can run here, for real: a Debian suite's image built offline once (bullseye, 3.9) whose
tools work; an image the user registered; the nearest newer version standing in for one nobody has."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.containers import image
from agent.containers.pythons import PythonImages, ensure_suite_sandbox
from agent.containers.sandbox import Sandbox
from agent.sandboxes.config import SandboxConfig
from tests.engine import docker, remove_image, run

pytestmark = pytest.mark.docker
REGISTERED = "codebox-test-registered-python"


@pytest.fixture(scope="module")
def bullseye() -> str:
    """codebox-sandbox:py3.9, built once (minbase bullseye, offline) and kept: later runs reuse it."""
    return ensure_suite_sandbox("3.9")


@pytest.fixture()
def registered(bullseye: str) -> Iterator[str]:
    """An image of the user's own (here: another name for bullseye's), untagged at the end."""
    client = docker()
    client.tag_image(bullseye, REGISTERED, "mine")
    yield f"{REGISTERED}:mine"
    remove_image(client, f"{REGISTERED}:mine")


def test_bullseye_s_image_holds_python_3_9_and_every_tool_works_on_it(bullseye: str, tmp_path: Path) -> None:
    assert ensure_suite_sandbox("3.9") == bullseye == "codebox-sandbox:py3.9"  # reused, not built again
    labels = image.image_labels(bullseye)
    assert labels is not None and labels["codebox.image"] == "sandbox" and image.stale(labels) is None
    assert run(docker(), bullseye, ["python3", "-c", "import sys, distutils; print(sys.version_info[:2])"]) \
        == "(3, 9)\n"
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    tmp_path.chmod(0o755)
    with Sandbox(tmp_path, SandboxConfig(image=bullseye), task_id="python-3-9") as box:
        read = box.call("read_file", {"path": "calc.py"})
        found = box.call("search", {"query": "def add"})
        tests = box.call("run_test", {"argv": ["python3", "-m", "pytest", "-q", "test_calc.py"], "timeout_s": 60})
    assert read.ok and "return a + b" in read.output
    assert found.ok and "calc.py" in found.output
    assert tests.ok and "1 passed" in tests.output, tests.output


def test_a_registered_image_wins_and_stands_in_as_the_nearest_newer(registered: str) -> None:
    chain = PythonImages(registered={"3.10": "codebox-test-no-such-image:none", "3.11": registered}, host=False)
    provided = chain.provide("3.10")  # its registered image is not there; no suite ships 3.10; 3.11's stands in
    assert (provided.image, provided.minor, provided.link) == (registered, "3.11", "the image registered for 3.11")
    assert chain.provide("3.10") is provided  # asked once per run


def test_an_old_minor_runs_on_the_nearest_newer_suite(bullseye: str) -> None:
    provided = PythonImages(host=False).provide("3.7")  # no host build of 3.7 either
    assert (provided.image, provided.minor, provided.link) == (bullseye, "3.9", "Debian bullseye, built offline")
