"""Superseded toolchain images: `codebox gc` removes the older images of a toolchain that nothing uses.

A toolchain image's tag names a hash of what it is made from (toolchain.py: build_base.sh, the suite, the
packages; a rustup copy: the toolchain's files and the linker image), so any change makes a new image beside the
old one, which this codebox never asks for again. The images of one toolchain are those of one repository and
one source: the Debian suite of the tag (``codebox-toolchain-go:trixie-<key>``), or a rustup copy's
``codebox.toolchain.source`` label (``rustup stable-x86_64-unknown-linux-gnu``: its tag's version changes with
``rustup update``). The newest of them stays; an older one goes unless an image or a container uses it.

An image uses another when its layers start with all of the other's (an environment loaded on a toolchain, an
image built FROM one, by anyone: the engine's own inspect says so); a container uses its image and every image
that one uses. A removal is never forced: a container made after the listing makes the engine refuse it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.containers.engine_api import Conflict, EngineClient, EngineError, NotFound
from agent.containers.toolchain import REPOSITORY_PREFIX, SOURCE_LABEL
from agent.errors import SandboxError

Log = Callable[[str], None]
PREFIX_VARIABLE = "CODEBOX_GC_TOOLCHAIN_PREFIX"  # tests: their own images' prefix, not the machine's toolchains


@dataclass(frozen=True)
class Image:
    """One image of the engine: its id, tags (as the engine writes them), layers, creation time and size."""

    id: str
    tags: tuple[str, ...]
    layers: tuple[str, ...]
    created: int
    size: int
    labels: dict[str, str]

    def uses(self, other: Image) -> bool:
        """Whether this image stands on ``other`` (its layers start with all of ``other``'s)."""
        n = len(other.layers)
        return self.id != other.id and n > 0 and len(self.layers) >= n and self.layers[:n] == other.layers


@dataclass(frozen=True)
class Superseded:
    """A toolchain image's tag with a newer image of the same toolchain."""

    tag: str
    image: Image
    newer: str  # the newest tag of that toolchain


@dataclass(frozen=True)
class Plan:
    removable: list[Superseded]  # images on top first
    kept: list[tuple[Superseded, str]]  # (superseded, why it stays)


def repository(tag: str) -> str:
    """A tag's repository without a registry (Podman writes ``localhost/codebox-toolchain-go``)."""
    return tag.rpartition(":")[0].rpartition("/")[2]


def toolchain_of(tag: str, image: Image, prefix: str = REPOSITORY_PREFIX) -> str | None:
    """Which toolchain ``tag`` is an image of (repository and source), or None for an image of no toolchain."""
    name = repository(tag)
    if not name.startswith(prefix):
        return None
    source = image.labels.get(SOURCE_LABEL) or tag.rpartition(":")[2].rpartition("-")[0]
    return f"{name} {source}"


def list_images(client: EngineClient) -> list[Image]:
    """Every image of the engine with its layers (one inspect each: the listing has no layers)."""
    try:
        listed = client.images()
    except EngineError as exc:
        raise SandboxError(f"cannot list the images to see which toolchains are superseded: {exc}") from exc
    found = []
    for row in listed:
        try:
            attrs = client.inspect_image(str(row.get("Id", "")))
        except NotFound:
            continue  # removed meanwhile
        except EngineError as exc:
            raise SandboxError(f"cannot inspect the image {str(row.get('Id', ''))[:19]}: {exc}") from exc
        found.append(_image(attrs, row))
    return found


def _image(attrs: dict[str, Any], row: dict[str, Any]) -> Image:
    tags = tuple(t for t in (attrs.get("RepoTags") or row.get("RepoTags") or []) if t and "<none>" not in t)
    return Image(id=_bare(attrs.get("Id")), tags=tags, layers=tuple((attrs.get("RootFS") or {}).get("Layers") or []),
                 created=int(row.get("Created") or 0), size=int(attrs.get("Size") or row.get("Size") or 0),
                 labels=dict((attrs.get("Config") or {}).get("Labels") or {}))


def _bare(image_id: object) -> str:
    return str(image_id or "").removeprefix("sha256:")


def container_images(client: EngineClient) -> dict[str, str]:
    """The image id of each container (running or stopped: a stopped one may start again) -> its name."""
    try:
        containers = client.containers(all=True)
    except EngineError as exc:
        raise SandboxError(f"cannot list containers to see which toolchain images are in use: {exc}") from exc
    used: dict[str, str] = {}
    for info in containers:
        name = str((info.get("Names") or [""])[0] or info.get("Id", "")).lstrip("/")
        used.setdefault(_bare(info.get("ImageID")), name)
    return used


def plan(images: list[Image], containers: dict[str, str], prefix: str = REPOSITORY_PREFIX) -> Plan:
    """Which superseded toolchain tags go (images on top first) and which stay, and why."""
    toolchains: dict[str, list[tuple[str, Image]]] = {}
    for image in images:
        for tag in image.tags:
            which = toolchain_of(tag, image, prefix)
            if which is not None:
                toolchains.setdefault(which, []).append((tag, image))
    superseded = []
    for members in toolchains.values():
        members.sort(key=lambda member: (member[1].created, member[0]))
        newest = members[-1]
        superseded += [Superseded(tag, image, newest[0]) for tag, image in members[:-1] if image.id != newest[1].id]
    by_id = {image.id: image for image in images}
    going = {s.tag for s in superseded}
    kept: dict[str, str] = {}
    changed = True
    while changed:  # an image that stays keeps what it stands on, which may keep more
        changed = False
        staying = [image for image in images if not set(image.tags) <= going or not image.tags]
        for entry in superseded:
            if entry.tag not in going:
                continue
            why = _user(entry.image, staying, containers, by_id)
            if why:
                going.discard(entry.tag)
                kept[entry.tag] = why
                changed = True
    removable = sorted((s for s in superseded if s.tag in going), key=lambda s: (-len(s.image.layers), s.tag))
    return Plan(removable, [(s, kept[s.tag]) for s in superseded if s.tag in kept])


def _user(image: Image, staying: list[Image], containers: dict[str, str], by_id: dict[str, Image]) -> str:
    """Why ``image`` is in use ("" when it is not)."""
    for container_image, container in sorted(containers.items()):
        under = by_id.get(container_image)
        if container_image == image.id or (under is not None and under.uses(image)):
            return f"the container {container} uses it"
    for other in staying:
        if other.uses(image):
            named = other.tags[0] if other.tags else f"an untagged image {other.id[:12]}"
            return f"{named} is built on it"
    return ""


def remove_superseded(client: EngineClient, log: Log, dry_run: bool = False, prefix: str | None = None) -> list[str]:
    """Remove (or, ``dry_run``, name) the superseded toolchain images nothing uses; return their tags (``prefix``:
    of the repositories ``prefix``<name>, default CODEBOX_GC_TOOLCHAIN_PREFIX, else codebox's toolchains')."""
    prefix = prefix or os.environ.get(PREFIX_VARIABLE) or REPOSITORY_PREFIX
    chosen = plan(list_images(client), container_images(client), prefix)
    for entry, why in chosen.kept:
        log(f"{'would keep' if dry_run else 'keeping'} superseded toolchain image {entry.tag}: {why}")
    removed = []
    for entry in chosen.removable:
        said = (f"superseded toolchain image {entry.tag} ({entry.image.size / 1e6:.0f} MB): {entry.newer} is newer "
                "and no image or container uses it")
        if dry_run:
            log(f"would remove {said}")
            removed.append(entry.tag)
            continue
        try:
            client.remove_image(entry.tag, force=False)
        except NotFound:
            pass  # gone meanwhile
        except Conflict:
            log(f"keeping superseded toolchain image {entry.tag}: the engine says something uses it")
            continue
        except EngineError as exc:
            raise SandboxError(f"could not remove the toolchain image {entry.tag}: {exc}") from exc
        log(f"removed {said}")
        removed.append(entry.tag)
    return removed
