"""`codebox image build --backend podman`'s copy: Docker's image streamed into Podman's store through both
backends' image stores (no docker or podman command), the same image id and labels on both sides."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from agent.backends.podman import copy_image_from_docker
from tests import engine

pytestmark = pytest.mark.docker


def test_docker_s_image_is_copied_into_podman_as_the_same_image(sandbox_image: str) -> None:
    if shutil.which("podman") is None:
        assert os.environ.get("CODEBOX_REQUIRE_PODMAN") != "1", "podman is required here and not installed"
        pytest.skip("podman is not installed (apt-get install podman)")
    version = uuid.uuid4().hex[:8]
    tag = f"codebox-test-copy:{version}"
    docker = engine.docker()
    docker.tag_image(sandbox_image, "codebox-test-copy", version)  # a tag of this test's own, on both sides
    try:
        assert copy_image_from_docker(tag) is True
        podman = engine.podman()
        try:
            copied, original = podman.inspect_image(tag), docker.inspect_image(tag)
            assert copied["Id"] == original["Id"]
            assert copied["Config"]["Labels"] == original["Config"]["Labels"]
            assert copy_image_from_docker(tag) is False  # there already: every eval on Podman asks
        finally:
            engine.remove_image(podman, tag)
    finally:
        docker.remove_image(tag)


def test_a_tag_docker_moved_to_another_image_is_copied_again(sandbox_image: str, tmp_path: Path) -> None:
    if shutil.which("podman") is None:
        assert os.environ.get("CODEBOX_REQUIRE_PODMAN") != "1", "podman is required here and not installed"
        pytest.skip("podman is not installed (apt-get install podman)")
    version = uuid.uuid4().hex[:8]
    tag = f"codebox-test-copy:{version}"
    docker, podman = engine.docker(), engine.podman()
    stale, had = "", engine.image_id(podman, sandbox_image)  # Podman's copy of the sandbox image stays
    try:
        docker.tag_image(sandbox_image, "codebox-test-copy", version)
        assert copy_image_from_docker(tag) is True
        stale = str(podman.inspect_image(tag)["Id"])
        # The tag moves to another image in Docker (a label's child of the sandbox image: a rebuilt image).
        (tmp_path / "Dockerfile").write_text(f"FROM {sandbox_image}\nLABEL codebox.test.moved={version}\n")
        engine.build(docker, tmp_path, tag)
        assert copy_image_from_docker(tag) is True
        assert podman.inspect_image(tag)["Id"] == docker.inspect_image(tag)["Id"] != stale
    finally:
        engine.remove_image(podman, tag)
        if stale and had is None:  # the first copy, left untagged in Podman's store
            engine.remove_image(podman, stale)
        engine.remove_image(docker, tag)
