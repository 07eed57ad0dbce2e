"""A node's image step with real Docker: a `docker save` archive is loaded once, by image id."""

from __future__ import annotations

import contextlib
import io
import tarfile
import uuid
from collections.abc import Iterator

import pytest

from agent.engines.node import NodeError, ensure_image, local_image_id, missing_images, save_image

pytestmark = pytest.mark.docker


@pytest.fixture
def tiny_image() -> Iterator[str]:
    """An image of one file, made here (docker import) and removed at the end: this test's own."""
    import docker

    tag = f"codebox-test-ship:{uuid.uuid4().hex[:8]}"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        data = f"{tag}\n".encode()
        info = tarfile.TarInfo("hello.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    client = docker.from_env()
    repository, _, version = tag.partition(":")
    client.api.import_image_from_data(buffer.getvalue(), repository=repository, tag=version)
    image_id = client.images.get(tag).id
    try:
        yield tag
    finally:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(image_id, force=True)
        client.close()


def test_a_node_without_the_image_loads_the_archive_once(tiny_image: str) -> None:
    import docker

    image_id = local_image_id(tiny_image)
    assert image_id is not None and missing_images([image_id]) == []
    archive = save_image(tiny_image)
    assert ensure_image(image_id, archive, tiny_image) is False  # present: nothing is loaded
    client = docker.from_env()
    try:
        client.images.remove(image_id, force=True)  # now this "node" lacks it
    finally:
        client.close()
    assert missing_images([image_id]) == [image_id]
    with pytest.raises(NodeError, match="the driver sent none"):
        ensure_image(image_id, None, tiny_image)
    assert ensure_image(image_id, archive, tiny_image) is True
    assert local_image_id(image_id) == image_id and local_image_id(tiny_image) == image_id  # the tag came along
    assert ensure_image(image_id, archive, tiny_image) is False


def test_an_archive_without_the_image_is_a_clear_error(tiny_image: str) -> None:
    image_id = local_image_id(tiny_image)
    assert image_id is not None
    with pytest.raises(NodeError, match="did not hold image"):
        ensure_image("sha256:" + "0" * 64, save_image(tiny_image), "codebox-test-ship:none")
