"""`codebox image build --backend podman`'s copy: Docker's image streamed into Podman's store through both
backends' image stores (no docker or podman command), the same image id and labels on both sides."""

from __future__ import annotations

import os
import shutil
import uuid

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
        copy_image_from_docker(tag)
        podman = engine.podman()
        try:
            copied, original = podman.inspect_image(tag), docker.inspect_image(tag)
            assert copied["Id"] == original["Id"]
            assert copied["Config"]["Labels"] == original["Config"]["Labels"]
        finally:
            engine.remove_image(podman, tag)
    finally:
        docker.remove_image(tag)
