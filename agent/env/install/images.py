"""The images codebox built, found through its own record, never through labels.

An image built ``FROM`` an environment image inherits every label of it, so labels say
nothing about who built an image. codebox keeps a record instead: one small JSON file per
image it built, in ``<cache>/env-images/``, named by what it is and the hash of its inputs
(``env-<key>.json``, ``deps-<key>.json``, ``tools-<key>.json``), written whole or not at all
(a temporary file renamed over it), so builders in several processes never see half an entry.
A lookup reads one file and asks the engine whether that image id is still there: no image
list, no network. The engine is the task's backend's image store (``Backend.builder()``): an
image built for Podman is Podman's, and its key names the engine (``engine_part``), so the two
stores' records never stand for each other. ``codebox env ls`` and ``env rm`` see only recorded ids; ``env rm`` removes
nothing else. ``loading-<pid>-*.json`` names an untagged image a build loads on its way
(``mark_loading``), so that one a killed build left is removed later (``reap_loading``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, Field, ValidationError

from agent import defaults
from agent.env.cancel import NEVER, POLL_S, Cancel, check, holding
from agent.env.errors import EnvError
from agent.env.resolve.fetch import cache_dir

if TYPE_CHECKING:
    from agent.sandboxes.build import Builder

REPOSITORY = "codebox-env"
# What codebox sets on its images, for people reading `docker images`: never read back to decide anything.
LABEL_KIND = "codebox.image"
KIND = "env"
LABEL_REPO = "codebox.env.repo"  # the repository the image was first built for
Kind = Literal["env", "deps", "tools"]
KINDS: tuple[Kind, ...] = ("env", "deps", "tools")
_KEY = re.compile(r"^[0-9a-f]{16,64}$")
DEFAULT_ENGINE = "docker"  # the backend whose keys name no engine (they were made before any other had images)


class Entry(BaseModel):
    """One image codebox built: its id, and what it was made from and holds."""

    kind: Kind
    key: str  # the hash of its inputs (the cache key)
    id: str  # the image id (sha256:...): what a lookup checks and a sandbox runs
    tag: str
    repo: str = ""
    base: str = ""
    base_id: str = ""
    python: str = ""
    lock: str = ""  # the pinned requirements with their hashes, as installed
    packages: list[str] = Field(default_factory=list)  # name==version
    apt: list[str] = Field(default_factory=list)
    as_of: str = ""
    deps: str = ""  # an env image's dependencies image (its id)
    pytest_plugins: list[str] | None = None  # the project's pytest11 entry points (None: a record made before)
    notes: list[str] = Field(default_factory=list)
    toolchain: str = ""  # a language's env image: its toolchain's version (EnvInfo.toolchain); "": not recorded
    created: float = Field(default_factory=time.time)
    engine: str = DEFAULT_ENGINE  # the backend whose image store holds it
    candidate: int = 0  # an env image: which candidate environment (1-based; 0: not known), of ``candidates``
    candidates: int = 0


class EnvImage(BaseModel):
    """One recorded image as `codebox env ls` shows it."""

    entry: Entry
    size: int

    @property
    def tag(self) -> str:
        return self.entry.tag


def record_dir() -> Path:
    return cache_dir() / "env-images"


def _path(kind: Kind, key: str) -> Path:
    if kind not in KINDS or not _KEY.match(key):
        raise EnvError(f"not a record key: {kind}-{key}")
    return record_dir() / f"{kind}-{key}.json"


def write(entry: Entry) -> None:
    """Record ``entry`` (whole or not at all; the last writer of a key wins)."""
    path = _path(entry.kind, entry.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.part")
    try:
        partial.write_text(entry.model_dump_json(), encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def read(kind: Kind, key: str) -> Entry | None:
    try:
        return Entry.model_validate_json(_path(kind, key).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, ValidationError):
        return None  # a damaged entry is no entry: the image is built again and the entry rewritten


def forget(entry: Entry) -> None:
    _path(entry.kind, entry.key).unlink(missing_ok=True)


def entries() -> list[Entry]:
    """Every recorded entry, newest first."""
    folder = record_dir()
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        kind = next((k for k in KINDS if path.stem.startswith(k + "-")), None)
        entry = read(kind, path.stem[len(kind) + 1:]) if kind is not None else None
        if entry is not None:
            found.append(entry)
    return sorted(found, key=lambda e: e.created, reverse=True)


@contextlib.contextmanager
def building(kind: Kind, key: str, cancel: Cancel = NEVER) -> Iterator[None]:
    """Held while an image of these inputs is built: a second process (or thread) building the same
    inputs waits, then finds the first one's entry. The wait ends on a cancel."""
    with held(_path(kind, key).with_suffix(".lock"), f"{kind}-{key}", cancel):
        yield


@contextlib.contextmanager
def held(path: Path, name: str, cancel: Cancel = NEVER) -> Iterator[None]:
    """The lock file ``path`` held by this thread (``name``: its key among this process's threads)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _guard(name, cancel), path.open("a") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                check(cancel)
                time.sleep(POLL_S)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_guards: dict[str, threading.Lock] = {}
_guards_lock = threading.Lock()


def _guard(name: str, cancel: Cancel) -> contextlib.AbstractContextManager[None]:
    """One thread of this process at a time per key (flock does not exclude threads of one process)."""
    with _guards_lock:
        lock = _guards.setdefault(name, threading.Lock())
    return holding(lock, cancel)


class Engine(Protocol):
    """What the record asks of a backend's image store."""

    name: str
    """The backend's name (engine_part)."""

    def inspect(self, name: str) -> dict[str, Any] | None:
        """The image's attributes; None when there is no such image."""

    def remove(self, image_id: str) -> bool:
        """Remove the image (not forced); False when it stays because a container or a child image uses it."""


def engine_part(name: str) -> dict[str, str]:
    """What a cache key adds for the engine its images live in (Docker's keys are as they always were)."""
    return {} if name == DEFAULT_ENGINE else {"engine": name}


class EngineImages:
    """``Engine`` over a backend's builder (agent.sandboxes.build), its failures as EnvError. ``store`` is the
    builder itself: a build's boxes and loads use it. A lookup loads no build machinery."""

    def __init__(self, store: Builder) -> None:
        self.store = store
        self.name = store.name

    @classmethod
    def connect(cls, backend: str = defaults.DEFAULT_BACKEND) -> EngineImages:
        """The image store of the backend named ``backend``; EnvError with what to do when it does not answer."""
        from agent.backends.registry import get_backend
        from agent.errors import SandboxError

        try:
            return cls(get_backend(backend).builder())
        except SandboxError as exc:
            raise EnvError(str(exc)) from exc

    def inspect(self, name: str) -> dict[str, Any] | None:
        from agent.errors import SandboxError

        try:
            return self.store.inspect_image(name)
        except SandboxError as exc:
            raise EnvError(str(exc)) from exc

    def remove(self, image_id: str) -> bool:
        from agent.errors import SandboxError

        try:
            return self.store.remove_image(image_id)  # False: a container, or an image built FROM it, uses it
        except SandboxError as exc:
            raise EnvError(str(exc)) from exc

    def close(self) -> None:
        self.store.close()


def mark_loading(image_id: str, engine: str = DEFAULT_ENGINE) -> Path:
    """A file in the record naming ``image_id`` (an untagged image a build loads on its way into ``engine``'s
    store, see layer.BackgroundLoad) and this process, written before the load: if the process dies before
    it removes the image, the next build there removes it (``reap_loading``). The caller deletes the file."""
    from agent.sandboxes.owner import process_start_ticks

    path = record_dir() / f"loading-{os.getpid()}-{secrets.token_hex(4)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    owner = {"id": image_id, "pid": os.getpid(), "start": process_start_ticks(os.getpid()) or "", "engine": engine}
    path.write_text(json.dumps(owner), encoding="utf-8")
    return path


def reap_loading(engine: Engine) -> list[str]:
    """Remove the untagged images whose builds died before removing them (``mark_loading``); their ids."""
    from agent.sandboxes.owner import process_start_ticks

    removed = []
    for path in record_dir().glob("loading-*.json") if record_dir().is_dir() else []:
        try:
            owner = json.loads(path.read_text(encoding="utf-8"))
            image_id, pid, start = str(owner["id"]), int(owner["pid"]), str(owner["start"])
            where = str(owner.get("engine", DEFAULT_ENGINE))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if where != engine.name:
            continue  # another engine's: its next build reaps it
        if process_start_ticks(pid) not in (None, "") and process_start_ticks(pid) == start:
            continue  # its build is still running
        if engine.remove(image_id):
            removed.append(image_id)
        path.unlink(missing_ok=True)
    return removed


def lookup(engine: Engine, kind: Kind, key: str) -> Entry | None:
    """The recorded image of these inputs when the engine still has it; a stale entry is dropped."""
    entry = read(kind, key)
    if entry is None:
        return None
    found = engine.inspect(entry.id)
    if found is not None and found.get("Id") == entry.id:
        return entry
    forget(entry)
    return None


def find(engine: Engine, name: str) -> Entry | None:
    """The recorded image ``name`` (a tag or an id) stands for now; None when it is not one codebox built."""
    found = engine.inspect(name)
    image_id = str((found or {}).get("Id", ""))
    return next((e for e in entries() if e.id == image_id), None) if image_id else None


def list_env_images(engine: Engine, kinds: tuple[Kind, ...] = KINDS) -> list[EnvImage]:
    """The recorded images the engine still has, newest first."""
    found = []
    for entry in entries():
        attrs = engine.inspect(entry.id) if entry.kind in kinds and entry.engine == engine.name else None
        if attrs is not None and attrs.get("Id") == entry.id:
            found.append(EnvImage(entry=entry, size=int(attrs.get("Size") or 0)))
    return found


def remove_env_images(engine: Engine, names: list[str], kinds: tuple[Kind, ...] = KINDS) -> list[str]:
    """Remove the named recorded images (every recorded one when ``names`` is empty); return their tags
    (``TAG (kept: in use)`` for one a container or an image built FROM it still uses: only its record goes).

    An image codebox did not build (one made FROM an environment image included) is refused:
    this never removes anyone else's image.
    """
    if names:
        targets = []
        for name in names:
            entry = find(engine, name)
            if entry is None:
                raise EnvError(f"{name} is not an image codebox built (see `codebox env ls`); nothing removed",
                               usage=True)
            targets.append(entry)
    else:
        targets = [e.entry for e in list_env_images(engine, kinds)]
        reap_loading(engine)
    order = {"env": 0, "deps": 1, "tools": 2}  # the images on top first
    removed = []
    for entry in sorted(targets, key=lambda e: order[e.kind]):
        gone = engine.remove(entry.id)
        forget(entry)
        removed.append(entry.tag if gone else f"{entry.tag} (kept: in use)")
    return removed
