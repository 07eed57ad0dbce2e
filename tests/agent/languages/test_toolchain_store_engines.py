"""A language's toolchain image in the task backend's store, with real Docker and Podman (required in CI with
CODEBOX_REQUIRE_PODMAN=1): the image Docker has is copied into Podman's store once, the same id; a task whose
copy is there never asks Docker (a closed DOCKER_HOST); without the copy and without Docker it is one line
saying what to do. The toolchain is a tag of this test's own on the sandbox image (no minutes of debootstrap),
named as ensure_toolchain names one, so Docker's lookup finds it built; every tag is removed after."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from agent.containers.toolchain import toolchain_tag
from agent.env.errors import EnvError
from agent.env.install.images import EngineImages
from agent.languages.toolchain_store import toolchain_image
from tests import engine

pytestmark = pytest.mark.docker
PACKAGES = ["tiny"]
ENV = {"TINY": "1"}


def test_docker_s_toolchain_is_copied_into_podman_once_then_found_there_without_docker(
        sandbox_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("podman") is None:
        assert os.environ.get("CODEBOX_REQUIRE_PODMAN") != "1", "podman is required here and not installed"
        pytest.skip("podman is not installed (apt-get install podman)")
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path / "cache"))
    name = f"test-{uuid.uuid4().hex[:8]}"
    tag = toolchain_tag(name, "trixie", PACKAGES, ENV)
    repository, _, version = tag.rpartition(":")
    docker, podman = engine.docker(), engine.podman()
    docker.tag_image(sandbox_image, repository, version)  # stands for the built toolchain
    store = EngineImages.connect("podman")
    try:
        said: list[str] = []
        assert toolchain_image(store, name, "trixie", PACKAGES, said.append, ENV) == tag
        assert said == [f"copying {tag} into Podman's image store (Docker's save, Podman's load), once"]
        assert podman.inspect_image(tag)["Id"] == docker.inspect_image(tag)["Id"]

        monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
        said.clear()
        assert toolchain_image(store, name, "trixie", PACKAGES, said.append, ENV) == tag
        assert said == []  # Podman's own copy, found by its tag: Docker was not asked

        engine.remove_image(podman, tag)
        with pytest.raises(EnvError) as caught:
            toolchain_image(store, name, "trixie", PACKAGES, said.append, ENV)
        message = str(caught.value)
        assert "\n" not in message
        assert message.startswith(f"the {name} toolchain image is made in Docker and copied into Podman's store, "
                                  "and Docker failed: ")
        assert message.endswith(f"(start Docker once to make it, or pass --image with a {name} toolchain image "
                                "of Podman's)")
    finally:
        store.close()
        engine.remove_image(podman, tag)
        engine.remove_image(docker, tag)


def test_on_docker_the_toolchain_docker_has_is_the_one(sandbox_image: str) -> None:
    name = f"test-{uuid.uuid4().hex[:8]}"
    tag = toolchain_tag(name, "trixie", PACKAGES, ENV)
    repository, _, version = tag.rpartition(":")
    docker = engine.docker()
    docker.tag_image(sandbox_image, repository, version)
    store = EngineImages.connect("docker")
    try:
        said: list[str] = []
        assert toolchain_image(store, name, "trixie", PACKAGES, said.append, ENV) == tag
        assert said == []  # there already: nothing built, nothing copied
    finally:
        store.close()
        engine.remove_image(docker, tag)
