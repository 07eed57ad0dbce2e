"""Image layers: loaded into the backend's image store as ``parent + layers`` (``docker load``'s format; the
parent's layers are named, not sent; several images stacked in one load), made in memory from files codebox
writes, and checked before a container's layer is loaded.

A layer a box wrote is read as a plain tar only (never decompressed: a compressed stream could spin the
host's CPU for minutes, and the engine would decompress it too), up to a size cap, its members checked
one by one with the cancel watched between them. Hashing a layer and sending it to the engine watch the
cancel every MiB; the engine's unpacking, once the load is sent, is bounded by its client's timeout.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import tarfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from agent import defaults
from agent.env.cancel import NEVER, Cancel, check
from agent.env.errors import EnvError
from agent.errors import SandboxError
from agent.sandboxes.build import ImageStore

VENV = "/opt/codebox-env"  # the dependencies: a venv made from the lock
PROJECT = "/opt/codebox-project"  # the project: its install, what its build generated, its scripts
_SAFE_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+!-]*$")


class Stacked(NamedTuple):
    """One image of a stack: the image below it plus ``layers`` (uncompressed tars)."""

    layers: list[Path]
    tag: str  # "": untagged (docker image prune removes it if codebox dies before it does)
    labels: dict[str, str]
    env: dict[str, str] = {}  # variables the image's config adds (a toolchain's)


def load_image(client: ImageStore, parent: str, layers: list[Path], tag: str,
               labels: dict[str, str], cancel: Cancel = NEVER, env: dict[str, str] | None = None) -> str:
    """``tag`` = the image ``parent`` plus ``layers`` (uncompressed tars), loaded; its image id.

    Why not ``docker commit``: on fuse-overlayfs it diffs the whole base file by file (11 s
    for a 210 MB base here); loading ready layers takes well under a second.
    """
    return load_stack(client, parent, [Stacked(layers, tag, labels, env or {})], cancel=cancel)[0]


def load_stack(client: ImageStore, parent: str, stack: list[Stacked],
               before: Callable[[list[str]], None] | None = None, cancel: Cancel = NEVER) -> list[str]:
    """Each image of ``stack`` = the one before it (the first: ``parent``) plus its layers, all in
    one load (one request, one pass of the engine); their image ids (given to ``before`` too,
    before the load starts)."""
    attrs = client.inspect_image(parent)
    if attrs is None:
        raise EnvError(f"the image {parent[:40]} is not in {client.name}'s image store (removed meanwhile?)")
    below_config: dict[str, Any] = {"Config": attrs.get("Config")}
    below_layers: list[str] = list(attrs["RootFS"]["Layers"])
    # An engine reads a layer file only when it lacks that layer: the parent's are named, not sent. Each is
    # an empty file (Docker would not open it; Podman's loader wants a file for every layer it names).
    names = [f"parent{i}/layer.tar" for i in range(len(below_layers))]
    parents = list(names)
    manifest: list[dict[str, Any]] = []
    configs: list[tuple[str, bytes]] = []
    files: list[tuple[Path, str]] = []
    ids: list[str] = []
    for n, image in enumerate(stack):
        digests = [f"sha256:{_sha256(layer, cancel)}" for layer in image.layers]
        config = {
            "architecture": attrs.get("Architecture", "amd64"),
            "os": attrs.get("Os", "linux"),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "config": image_config(below_config, image.labels, image.env),
            "rootfs": {"type": "layers", "diff_ids": [*below_layers, *digests]},
        }
        data = json.dumps(config).encode()
        config_name = hashlib.sha256(data).hexdigest() + ".json"
        new = [f"image{n}-layer{i}/layer.tar" for i in range(len(image.layers))]
        names = [*names, *new]
        manifest.append({"Config": config_name, "RepoTags": [image.tag] if image.tag else [], "Layers": names})
        configs.append((config_name, data))
        files += zip(image.layers, new, strict=True)
        ids.append("sha256:" + config_name[: -len(".json")])
        below_config, below_layers = {"Config": config["config"]}, [*below_layers, *digests]
    what = ", ".join(image.tag or "an untagged image" for image in stack)
    archive = stack[-1].layers[-1].with_name(f"image-{configs[-1][0][:12]}.tar")
    with tarfile.open(archive, "w") as tar:
        for name, data in [("manifest.json", json.dumps(manifest).encode()), *configs]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name in parents:
            tar.addfile(tarfile.TarInfo(name))
        for layer, name in files:
            info = tar.gettarinfo(str(layer), arcname=name)
            with layer.open("rb") as source:
                tar.addfile(info, _Watched(source, cancel))
    try:
        if before is not None:
            before(ids)
        client.load_image(archive, watch=lambda: check(cancel))
    except SandboxError as exc:
        raise EnvError(f"the environment image {what} could not be loaded: {exc}") from exc
    finally:
        archive.unlink(missing_ok=True)
    return ids


class BackgroundLoad:
    """``parent + layers`` loaded as an untagged image in a thread while the caller works on; a context
    manager whose exit waits for the load and removes that image (an image stacked on it keeps the
    layers). The record names the image while it may exist (images.mark_loading): one a killed build
    left is removed by the next build that loads one, or by ``codebox env rm --all``."""

    def __init__(self, client: ImageStore, parent: str, layers: list[Path], labels: dict[str, str],
                 cancel: Cancel = NEVER, check_first: Callable[[], object] | None = None) -> None:
        self.client = client
        self.cancel = cancel
        self.check_first = check_first  # run in the thread before the load (a layer's check: off the caller's path)
        self.image = Stacked(layers, "", labels)
        self.parent = parent
        self.result: dict[str, Any] = {}
        self.marked: tuple[str, Path] | None = None  # the image's id and the record's file naming it
        self.thread = threading.Thread(target=self._load, name="codebox-env-load", daemon=True)

    def __enter__(self) -> BackgroundLoad:
        self.thread.start()
        return self

    def _load(self) -> None:
        from agent.env.install import images

        def mark(ids: list[str]) -> None:
            self.marked = ids[0], images.mark_loading(ids[0], self.client.name)

        try:
            if self.check_first is not None:
                self.check_first()
            self.result["id"] = load_stack(self.client, self.parent, [self.image], mark, self.cancel)[0]
        except Exception as exc:  # given to the caller by wait()
            self.result["error"] = exc

    def wait(self) -> str:
        """The loaded image's id (the load's error, raised here)."""
        self.thread.join()
        if "error" in self.result:
            raise self.result["error"]
        image_id: str = self.result["id"]
        return image_id

    def __exit__(self, *exc: object) -> None:
        self.thread.join()
        if self.marked is None:
            return  # the load never started
        image_id, marker = self.marked
        with contextlib.suppress(SandboxError):  # kept by a container, or the engine went away: the next build reaps it
            self.client.remove_image(image_id)
        marker.unlink(missing_ok=True)


def _sha256(path: Path, cancel: Cancel = NEVER) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            check(cancel)
            digest.update(block)
    return digest.hexdigest()


class _Watched:
    """A file read in blocks of at most 1 MiB, the cancel checked before each (EnvCancelled mid-read): what a
    tar of the layers reads its members through."""

    def __init__(self, source: BinaryIO, cancel: Cancel) -> None:
        self.source, self.cancel = source, cancel

    def read(self, size: int = -1) -> bytes:
        check(self.cancel)
        return self.source.read(1 << 20 if size is None or size < 0 or size > 1 << 20 else size)


def image_config(attrs: dict[str, Any], labels: dict[str, str], extra: dict[str, str] | None = None) -> dict[str, Any]:
    """The parent's config with the venv and the project's scripts first on PATH, ``extra``'s variables, and
    our labels."""
    config = dict(attrs.get("Config") or {})
    added = [f"{key}={value}" for key, value in sorted((extra or {}).items())]
    replaced = tuple(f"{key}=" for key in ("PATH", "VIRTUAL_ENV", *(extra or {})))
    env = [e for e in (config.get("Env") or []) if not e.startswith(replaced)] + added
    path = next((e[5:] for e in config.get("Env") or [] if e.startswith("PATH=")),
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    prefix = f"{PROJECT}/bin:{VENV}/bin:"
    path = path if path.startswith(prefix) else prefix + path
    config["Env"] = [f"PATH={path}", f"VIRTUAL_ENV={VENV}", *env]
    config["Labels"] = {**(config.get("Labels") or {}), **labels}
    return config


def _checked(relative: str) -> str:
    """A member path built by codebox: plain parts only (no '..', no absolute path, no odd character)."""
    parts = relative.split("/")
    if not parts or not all(_SAFE_PART.match(p) for p in parts):
        raise EnvError(f"refusing to write {relative!r} into an image layer (not a plain relative path)", usage=True)
    return relative


def layer_from_files(dest: Path, files: dict[str, tuple[str, int]]) -> Path:
    """A layer tar at ``dest`` holding ``files`` (path inside the image -> (text, mode)), owned by root.

    Every path is checked part by part: a name read from a repository can never write outside
    the folder it was meant for, and nothing here is a host path.
    """
    folders: set[str] = set()
    for path in files:
        parts = _checked(path.lstrip("/")).split("/")
        folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
    with tarfile.open(dest, "w") as tar:
        for folder in sorted(folders):
            info = tarfile.TarInfo(folder)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for path, (text, mode) in sorted(files.items()):
            data = text.encode("utf-8")
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.mtime = len(data), mode, 0
            tar.addfile(info, io.BytesIO(data))
    return dest


def check_layer(path: Path, inside: str, cancel: Cancel = NEVER,
                max_bytes: int = defaults.ENV_LAYER_MAX_BYTES) -> int:
    """Refuse a layer tar a build container wrote unless it is a plain (uncompressed) tar of at most
    ``max_bytes`` whose every member is under ``inside`` (e.g. ``opt/codebox-project``) with a plain
    relative name and no device; the member count."""
    size = path.stat().st_size
    if size > max_bytes:
        raise EnvError(f"the build container's layer is {size} bytes, over the cap of {max_bytes}; refused")
    count = 0
    try:
        with tarfile.open(path, mode="r:") as tar:  # plain tar only: never decompress what a box wrote
            for member in tar:
                check(cancel)
                name = member.name.rstrip("/")
                parts = name.split("/")
                link = member.linkname.rstrip("/") if member.islnk() else inside
                if (name != inside and not name.startswith(inside + "/")) or ".." in parts or \
                        member.isdev() or member.name.startswith("/") or \
                        (link != inside and not link.startswith(inside + "/")) or ".." in link.split("/"):
                    raise EnvError(f"the build wrote {member.name!r} outside {inside}; refused")
                count += 1
    except tarfile.TarError as exc:
        raise EnvError(f"the build container's layer is not a readable tar: {exc}") from exc
    return count
