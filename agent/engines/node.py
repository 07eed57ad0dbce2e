"""A worker node's own upkeep before it runs codebox tasks: leftovers reaped once, sandbox images present.

Nodes without a registry get images the way the repository travels: the driver saves the
image it has (``docker save``) once, keyed by image id, and a node that lacks that id loads
the archive (``docker load``). A node that already has the id loads nothing. Tasks then run
on the image by its id, so a tag that means something else on a node changes nothing. Each
call reaches the engine through the backend seam (``Backend.builder()``'s image store): a
node's tasks run in Docker.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from agent.errors import CodeboxError, SandboxError
from agent.sandboxes.build import ImageStore

BACKEND = "docker"  # the engine a node's tasks run in: their images travel as its archives


class NodeError(CodeboxError):
    """A node could not be made ready (no Docker, an image that could not be loaded)."""


def _state_dir() -> Path:
    folder = Path(tempfile.gettempdir()) / f"codebox-node-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


@contextlib.contextmanager
def _node_lock(name: str) -> Iterator[Path]:
    """One process at a time on this machine for ``name``; yields a marker path next to the lock."""
    lock = _state_dir() / f"{name}.lock"
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield _state_dir() / f"{name}.done"
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def once_per_run(run_key: str, setup: Callable[[], object]) -> bool:
    """Run ``setup`` once per ``run_key`` (a batch run on a node) on this machine; True if this call ran it.

    Tasks that arrive meanwhile wait for it: no task starts before its node is set up.
    """
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_key)
    with _node_lock(f"setup-{safe}") as done:
        if done.exists():
            return False
        setup()
        done.touch()
        return True


def reap() -> list[str]:
    """`codebox gc` on this machine: the ids of the leftover containers removed.

    A node started with CODEBOX_NODE_GC=0 skips it (a machine shared with other codebox users
    whose leftovers are theirs to reap, as in this project's own tests).
    """
    if os.environ.get("CODEBOX_NODE_GC", "1") == "0":
        return []
    from agent.backends.registry import get_backend

    return get_backend(BACKEND).reap(log=lambda _msg: None)


def _images() -> ImageStore:
    """The image store of the node's backend; NodeError when its engine does not answer."""
    from agent.backends.registry import get_backend

    try:
        return get_backend(BACKEND).builder()
    except SandboxError as exc:
        raise NodeError(str(exc)) from exc


def local_image_id(ref: str) -> str | None:
    """The id (sha256:...) of the image ``ref`` names here; None if there is none (or no Docker)."""
    try:
        store = _images()
    except NodeError:
        return None
    try:
        found = store.inspect_image(ref)
    except SandboxError:
        return None
    finally:
        store.close()
    return str(found["Id"]) if found else None


def missing_images(image_ids: list[str]) -> list[str]:
    """The ids of ``image_ids`` this machine's Docker does not have (all of them without Docker)."""
    return [image_id for image_id in image_ids if local_image_id(image_id) is None]


def save_image(ref: str) -> bytes:
    """`docker save` of one image, tags included, as bytes (the driver ships it once)."""
    store = _images()
    try:
        return b"".join(store.save_image(ref))
    except SandboxError as exc:
        raise NodeError(f"cannot save image {ref!r}: {exc}") from exc
    finally:
        store.close()


def ensure_image(image_id: str, archive: bytes | None, ref: str) -> bool:
    """Make sure this machine has ``image_id``: load ``archive`` if it does not; True if it loaded.

    Raises NodeError when the image is missing and there is no archive, or the archive does
    not hold it. Tasks on one node load an image once: a file lock orders them.
    """
    if local_image_id(image_id) is not None:
        return False
    with _node_lock("image-" + image_id.replace(":", "-")):
        if local_image_id(image_id) is not None:
            return False  # another task on this node loaded it meanwhile
        if archive is None:
            raise NodeError(f"this node has no image {ref!r} ({image_id[:19]}) and the driver sent none; "
                            "load it here (docker load) or run the batch from a machine that has it")
        store = _images()
        with tempfile.NamedTemporaryFile(dir=_state_dir(), suffix=".tar") as file:
            file.write(archive)
            file.flush()
            try:
                store.load_image(Path(file.name))
            except SandboxError as exc:
                raise NodeError(f"docker load of {ref!r} failed: {exc}") from exc
            finally:
                store.close()
    if local_image_id(image_id) is None:
        raise NodeError(f"the archive of {ref!r} did not hold image {image_id[:19]}")
    return True
