"""The environment builder's boxes and images over the Engine API (agent.sandboxes.build.Builder), for any
engine that speaks it: Docker, and Podman's service (its host config adds explicit rlimits).

Every box option is turned into the create body or refused: an option this module does not know
is an error, never dropped (a box without a limit it was promised is no box for package code).
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, cast

from agent.containers.engine_api import Conflict, EngineClient, EngineError, NotFound
from agent.containers.leftovers import remove_container
from agent.errors import SandboxError

if TYPE_CHECKING:
    from agent.sandboxes.build import BoxOptions, OnOutput

# Loading or removing an image on a busy daemon (fuse-overlayfs) can take minutes, not one.
SLOW_S = 900.0
# After a step's output ends, the engine may not have its exit status yet: asked again for this long.
EXIT_STATUS_WAIT_S = 5.0


def box_body(image: str, options: BoxOptions, host_config: Mapping[str, Any] | None = None,
             tmpfs: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The create body of a build box: every one of ``options``, or SandboxError naming the one it cannot make.
    ``tmpfs``: the tmpfs mounts in this engine's own options, when they differ (Podman's)."""
    from agent.sandboxes.build import BoxOptions  # a box's start needs these; an image lookup does not
    from agent.sandboxes.config import size_bytes

    unknown = sorted(set(options) - set(BoxOptions.__annotations__))
    if unknown:
        raise SandboxError(f"a build box option the Engine API builder does not know: {', '.join(unknown)}")
    if options["network_mode"] != "none":
        raise SandboxError(f"a build box has no network, not {options['network_mode']!r}")
    config: dict[str, Any] = {
        "NetworkMode": "none",
        "CapDrop": list(options["cap_drop"]),
        "CapAdd": list(options["cap_add"]),
        "SecurityOpt": list(options["security_opt"]),
        "Memory": size_bytes(options["mem_limit"], "memory limit"),
        "MemorySwap": size_bytes(options["memswap_limit"], "memory + swap limit"),
        "PidsLimit": options["pids_limit"],
        "NanoCpus": options["nano_cpus"],
        "Binds": [f"{host}:{bind['bind']}:{_read_only(bind['mode'])}" for host, bind in options["volumes"].items()],
        "Tmpfs": dict(options["tmpfs"] if tmpfs is None else tmpfs),
        **(host_config or {}),
    }
    return {
        "Image": image,
        "Cmd": list(options["command"]),
        "Entrypoint": [],  # not the image's: an empty list, not null, resets it
        "User": options["user"],
        "Labels": dict(options["labels"]),
        "WorkingDir": options["working_dir"],
        "Env": [f"{key}={value}" for key, value in options["environment"].items()],
        "HostConfig": config,
    }


def _read_only(mode: str) -> str:
    if mode != "ro":
        raise SandboxError(f"a build box sees host paths read-only, not {mode!r}")
    return "ro"


class EngineBox:
    """One started build container (agent.sandboxes.build.BuildBox)."""

    def __init__(self, client: EngineClient, container_id: str) -> None:
        self.client = client
        self.id = container_id

    def exec(self, argv: list[str], user: str, env: Mapping[str, str], on_output: OnOutput) -> int | None:
        try:
            exec_id = self.client.exec_create(self.id, argv, user=user, env=env, workdir="/")
            for stream, data in self.client.exec_start(exec_id):
                on_output(stream, data)
            return self._exit_status(exec_id)
        except NotFound:
            return None  # the box was removed (a cancel, the deadline)
        except (EngineError, OSError) as exc:
            raise SandboxError(f"a step in the build container {self.id[:12]} failed to run: {exc}") from exc

    def _exit_status(self, exec_id: str) -> int | None:
        deadline = time.monotonic() + EXIT_STATUS_WAIT_S
        while True:
            state = self.client.exec_inspect(exec_id)
            if not state.get("Running") or time.monotonic() > deadline:
                code = state.get("ExitCode")
                return None if code is None else int(code)
            time.sleep(0.01)

    def archive(self, path: str) -> Iterator[bytes] | None:
        try:
            body = self.client.get_archive(self.id, path)
        except NotFound:
            return None
        except EngineError as exc:
            raise SandboxError(f"could not read {path} from the build container: {exc}") from exc
        return _chunks(body, f"reading {path} from the build container")

    def remove(self) -> None:
        remove_container(self.client, self.id)


def _chunks(chunks: Any, what: str) -> Iterator[bytes]:
    """A stream's chunks, its close guaranteed, an engine failure a SandboxError."""
    try:
        with chunks:
            yield from chunks
    except EngineError as exc:
        raise SandboxError(f"{what} failed: {exc}") from exc


class EngineBuilder:
    """Build boxes and images of one engine (agent.sandboxes.build.Builder)."""

    def __init__(self, client: EngineClient, name: str, host_config: Mapping[str, Any] | None = None) -> None:
        self.client = EngineClient(client.endpoint, SLOW_S)  # a build's engine is often a busy one
        self.name = name
        self.host_config = dict(host_config or {})

    def tmpfs_options(self, options: str, user: str) -> str:
        """A tmpfs mount's options as this engine takes them (Docker's syntax: as they are)."""
        return options

    def create_box(self, image: str, options: BoxOptions) -> EngineBox:
        tmpfs = {path: self.tmpfs_options(opts, options["user"]) for path, opts in options["tmpfs"].items()}
        body = box_body(image, options, self.host_config, tmpfs)
        try:
            container_id = self.client.create_container(body)
        except EngineError as exc:
            raise SandboxError(f"{self.name} could not create a build container from {image}: {exc}") from exc
        try:
            self.client.start(container_id)
        except BaseException as exc:
            remove_container(self.client, container_id)
            if isinstance(exc, EngineError):
                raise SandboxError(f"{self.name} could not start a build container from {image}: {exc}") from exc
            raise
        return EngineBox(self.client, container_id)

    def inspect_image(self, name: str) -> dict[str, Any] | None:
        try:
            return self.client.inspect_image(name)
        except NotFound:
            return None
        except EngineError as exc:
            raise SandboxError(f"{self.name} could not look up the image {name[:40]!r}: {exc}") from exc

    def load_image(self, archive: Path, watch: Callable[[], None] | None = None) -> None:
        try:
            with archive.open("rb") as data:
                self.client.load_image(data if watch is None else cast(IO[bytes], _Paced(data, watch)))
        except EngineError as exc:
            raise SandboxError(f"{self.name} could not load the image archive: {exc}") from exc

    def save_image(self, name: str) -> Iterator[bytes]:
        try:
            body = self.client.save_image(name)
        except EngineError as exc:
            raise SandboxError(f"{self.name} could not save the image {name[:40]!r}: {exc}") from exc
        return _chunks(body, f"saving the image {name[:40]!r}")

    def remove_image(self, image_id: str) -> bool:
        try:
            self.client.remove_image(image_id, force=False)
        except NotFound:
            return True
        except Conflict:
            return False
        except EngineError as exc:
            raise SandboxError(f"{self.name} could not remove the image {image_id[:19]}: {exc}") from exc
        return True

    def close(self) -> None:
        self.client.close()


class _Paced(io.RawIOBase):
    """A file sent in blocks of at most 1 MiB with ``watch`` called before each. It has no fileno, so the socket
    sends it by reading it (sendfile would hand the whole file to the kernel, past every watch)."""

    def __init__(self, source: BinaryIO, watch: Callable[[], None]) -> None:
        super().__init__()
        self.source, self.watch = source, watch

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self.source.seek(offset, whence)

    def tell(self) -> int:
        return self.source.tell()

    def read(self, size: int = -1) -> bytes:
        self.watch()
        return self.source.read(1 << 20 if size is None or size < 0 or size > 1 << 20 else size)

