"""A node's image step with real Docker: a `docker save` archive is loaded once, by image id."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.engines.node import NodeError, ensure_image, local_image_id, missing_images, save_image
from tests import engine

pytestmark = pytest.mark.docker


@pytest.fixture
def tiny_image(tmp_path: Path) -> Iterator[str]:
    """An image of one file, made here (FROM scratch) and removed at the end: this test's own."""
    tag = f"codebox-test-ship:{uuid.uuid4().hex[:8]}"
    (tmp_path / "hello.txt").write_text(f"{tag}\n")
    (tmp_path / "Dockerfile").write_text("FROM scratch\nCOPY hello.txt /\n")
    client = engine.docker()
    image_id = engine.build(client, tmp_path, tag)
    try:
        yield tag
    finally:
        if engine.image_id(client, image_id) is not None:
            client.remove_image(image_id, force=True)


def test_a_node_without_the_image_loads_the_archive_once(tiny_image: str) -> None:
    image_id = local_image_id(tiny_image)
    assert image_id is not None and missing_images([image_id]) == []
    archive = save_image(tiny_image)
    assert ensure_image(image_id, archive, tiny_image) is False  # present: nothing is loaded
    engine.docker().remove_image(image_id, force=True)  # now this "node" lacks it
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
