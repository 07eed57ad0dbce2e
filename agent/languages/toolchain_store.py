"""A language's Debian toolchain image (agent/containers/toolchain.py) in the image store of the task's backend.

The image is made in Docker's store (debootstrap and ``docker import``, as the sandbox's base is). A task on
Podman runs in Podman's store, so it gets the same image there: Docker's save streamed into Podman's load
(agent.backends.podman.copy_image_from_docker), the same id and labels, once. Podman's store is asked first by
the tag, which names a hash of everything the image is made from: a task whose copy is there never asks Docker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agent.env.cancel import NEVER, Cancel
from agent.env.errors import EnvError

if TYPE_CHECKING:
    from agent.env.install.images import EngineImages

Log = Callable[[str], None]


def toolchain_image(engine: EngineImages, name: str, suite: str, packages: list[str], log: Log,
                    env: dict[str, str] | None = None, cancel: Cancel = NEVER) -> str:
    """The tag of ``name``'s toolchain image, in ``engine``'s store: built in Docker's unless it is there, and
    copied from there into Podman's (``cancel`` ends the wait for another task's copy). EnvError in one line
    saying what to do when it cannot be."""
    from agent.containers.toolchain import ensure_toolchain, toolchain_tag
    from agent.errors import CodeboxError

    if engine.name == "docker":
        try:
            return ensure_toolchain(name, suite, packages, log, env)
        except CodeboxError as exc:
            raise EnvError(str(exc)) from exc
    tag = toolchain_tag(name, suite, packages, env)
    if engine.inspect(tag) is not None:
        return tag
    if engine.name != "podman":
        raise EnvError(f"the {name} toolchain image is made in Docker's image store, and the {engine.name} backend "
                       f"takes no copy of it: pass --image with a {name} toolchain image of {engine.name}'s",
                       usage=True)
    from agent.env.install.images import held, record_dir

    # One copy at a time per image (a batch's tasks on Podman all miss it at once): the others then find it.
    with held(record_dir() / f"copy-{tag.replace(':', '-')}.lock", f"copy-{tag}", cancel):
        if engine.inspect(tag) is None:
            _copy(tag, name, suite, packages, log, env)
    return tag


def _copy(tag: str, name: str, suite: str, packages: list[str], log: Log, env: dict[str, str] | None) -> None:
    from agent.containers.toolchain import ensure_toolchain
    from agent.errors import CodeboxError

    try:
        ensure_toolchain(name, suite, packages, log, env)
    except CodeboxError as exc:
        raise EnvError(f"the {name} toolchain image is made in Docker and copied into Podman's store, and Docker "
                       f"failed: {exc} (start Docker once to make it, or pass --image with a {name} toolchain "
                       "image of Podman's)") from exc
    from agent.backends.podman import copy_image_from_docker

    log(f"copying {tag} into Podman's image store (Docker's save, Podman's load), once")
    try:
        copy_image_from_docker(tag)
    except CodeboxError as exc:
        raise EnvError(f"copying {tag} into Podman's image store failed: {exc}") from exc
