"""The Podman backend: the same Engine API driver as Docker's, spoken to `podman system service`.

Podman 4.3's Docker-compatible API differs where it matters to a sandbox, and this module is
where that is handled (docs/backends.md lists what does not work):

- It ignores ``HostConfig.Runtime``: a service runs every container with its own ``--runtime``.
  So there is one service per runtime, each on its own unix socket, started by the first code
  that needs it (``--time``: it ends by itself once idle); gVisor's gets ``--network=none``, as
  the Docker daemon's registration does.
- Its default rlimits (nofile, nproc) exceed what this kind of machine allows a container, and
  runc refuses to start it: every container gets explicit ones (``Ulimits``).
- It has its own image store: ``codebox image build --backend podman`` copies Docker's image
  into it (Docker's save streamed into Podman's load); environments are built and kept there.
- Its tmpfs mounts take no ``uid=``/``gid=`` options: a build box's tmpfs owned by the box's
  own user gets ``U`` instead (Podman gives it to the container's user).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from agent.backends.docker import EngineBackend
from agent.containers.builds import EngineBuilder
from agent.containers.engine import Engine
from agent.containers.engine_api import Endpoint, EngineClient, EngineError
from agent.defaults import DEFAULT_RUNTIME
from agent.errors import CodeboxError, SandboxError
from agent.sandboxes.build import Builder
from agent.sandboxes.config import SandboxConfig

# Explicit rlimits: Podman's defaults (1048576 open files, 4194304 processes) exceed the hard
# limits of a machine like this one, and the OCI runtime refuses to start the container then.
ULIMITS = [{"Name": "nofile", "Soft": 1024, "Hard": 1024}, {"Name": "nproc", "Soft": 4096, "Hard": 4096}]
# A service ends this long after its last connection closed (a task's attach keeps it alive).
SERVICE_IDLE_S = 300
SERVICE_START_TIMEOUT_S = 20.0
# Runtime flags a service needs for a runtime: gVisor's own network stack must stay off, as the
# sandbox has no network (and Podman's network namespace is set up for it already).
RUNTIME_FLAGS = {"runsc": ["--runtime-flag=network=none"]}
INSTALL_HINT = "install it (apt-get install podman)"


def socket_dir() -> Path:
    """Where this user's services listen (private to the user)."""
    folder = Path(os.environ.get("CODEBOX_PODMAN_DIR") or Path(tempfile.gettempdir()) / f"codebox-podman-{os.getuid()}")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def _podman() -> str:
    found = shutil.which("podman")
    if found is None:
        raise SandboxError(f"the podman backend needs Podman and there is no `podman` on PATH: {INSTALL_HINT}")
    return found


class PodmanService:
    """One `podman system service` for one runtime: started when nothing answers on its socket."""

    def __init__(self, runtime: str) -> None:
        self.runtime = runtime
        self._lock = threading.Lock()

    @property
    def socket(self) -> Path:
        return socket_dir() / f"{self.runtime}.sock"

    def client(self, error: type[CodeboxError]) -> EngineClient:
        """A client of the service, started first if it does not answer; ``error`` if it cannot be."""
        path = str(self.socket)
        client = EngineClient(Endpoint(url=f"unix://{path}", unix_path=path))
        with self._lock:
            if not _answers(client):
                self._start(client, error)
        return client

    def _start(self, client: EngineClient, error: type[CodeboxError]) -> None:
        lock = socket_dir() / f"{self.runtime}.lock"
        with lock.open("a") as handle:  # one process of this user starts it; the others wait
            fcntl.flock(handle, fcntl.LOCK_EX)
            if _answers(client):
                return
            with contextlib.suppress(FileNotFoundError):
                self.socket.unlink()  # a service that ended leaves its socket file
            try:
                command = [_podman(), *self._runtime_options(), "system", "service",
                           f"--time={SERVICE_IDLE_S}", f"unix://{self.socket}"]
            except SandboxError as exc:
                raise error(str(exc)) from exc
            log = (socket_dir() / f"{self.runtime}.log").open("ab")
            with log:
                # Its own session: a Ctrl-C of this run does not stop a service other runs use.
                # Its cwd is its own folder: conmon writes files there (an "oom" when a test runs out of memory).
                subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                 cwd=socket_dir())
            deadline = time.monotonic() + SERVICE_START_TIMEOUT_S
            while time.monotonic() < deadline:
                if _answers(client):
                    return
                time.sleep(0.05)
        tail = _tail(socket_dir() / f"{self.runtime}.log")
        raise error(f"the Podman service for runtime {self.runtime!r} did not start in "
                    f"{SERVICE_START_TIMEOUT_S:g} s" + (f": {tail}" if tail else ""))

    def _runtime_options(self) -> list[str]:
        if self.runtime == DEFAULT_RUNTIME:
            return []  # Podman's own default, whatever runs it: runc, or crun
        flags = next((f for prefix, f in RUNTIME_FLAGS.items() if self.runtime.startswith(prefix)), [])
        return [f"--runtime={self.runtime}", *flags]


def _answers(client: EngineClient) -> bool:
    try:
        client.ping()
    except EngineError:
        return False
    return True


def _tail(path: Path, limit: int = 300) -> str:
    try:
        text = path.read_bytes()[-limit:].decode("utf-8", "replace")
    except OSError:
        return ""
    return " ".join(text.split())


class PodmanBackend(EngineBackend):
    """Sandboxes in Podman (rootful, or rootless where the user's namespaces allow it)."""

    def __init__(self) -> None:
        self._services: dict[str, PodmanService] = {}
        self._engines: dict[str, Engine] = {}
        self._guard = threading.Lock()
        super().__init__(self.engine_for(DEFAULT_RUNTIME))

    def engine_for(self, runtime: str) -> Engine:
        with self._guard:
            engine = self._engines.get(runtime)
            if engine is None:
                service = self._services[runtime] = PodmanService(runtime)
                engine = Engine("podman", service.client, {"Ulimits": ULIMITS})
                self._engines[runtime] = engine
        return engine

    def preflight(self, config: SandboxConfig) -> None:
        if os.getuid() != 0:
            self._check_limits_hold(self.connect())
        super().preflight(config)

    def _check_limits_hold(self, client: EngineClient) -> None:
        """Rootless Podman on cgroup v1 ignores every resource limit (memory, pids, cpus): a sandbox
        without them is no sandbox for a hostile repository, so it is refused."""
        try:
            version = str(client.info().get("CgroupVersion") or "")
        except EngineError as exc:
            raise SandboxError(f"podman did not describe itself: {exc}") from exc
        if version == "1":
            raise SandboxError(
                "rootless Podman on a cgroup v1 host ignores memory, process and CPU limits, which the sandbox "
                "needs: run codebox as root for --backend podman, or on a host with cgroup v2 (delegated to users)"
            )

    def runtimes(self, client: EngineClient) -> frozenset[str]:
        """The runtimes Podman lists whose program is installed (it lists its defaults either way)."""
        return frozenset(name for name, path in listed_runtimes(client).items() if _installed(path))

    def register_hint(self, runtime: str) -> str:
        if runtime.startswith("runsc"):
            return "install gVisor (apt-get install runsc): Podman finds /usr/bin/runsc by itself"
        return f'add it to /etc/containers/containers.conf: [engine.runtimes] {runtime} = ["/path/to/{runtime}"]'

    def build_command(self) -> str:
        return "codebox image build --backend podman"

    def builder(self) -> Builder:
        engine = self.engine_for(DEFAULT_RUNTIME)
        return PodmanBuilder(engine.connect(SandboxError), self.name, engine.host_config)


class PodmanBuilder(EngineBuilder):
    """Build boxes in Podman, whose tmpfs mounts take no uid=/gid=: one owned by the box's own user is mounted
    with ``U`` (Podman gives it to the container's user). One owned by another user stays root's: a box like
    that has a root step, which gives it away (the dependencies box's with Debian packages: deps._root_script)."""

    def tmpfs_options(self, options: str, user: str) -> str:
        parts = options.split(",")
        owner = {key: value for key, _, value in (p.partition("=") for p in parts) if key in ("uid", "gid")}
        if not owner:
            return options
        kept = [p for p in parts if p.partition("=")[0] not in ("uid", "gid")]
        uid, _, gid = user.partition(":")
        return ",".join([*kept, "U"] if owner.get("uid", uid) == uid and owner.get("gid", gid) == gid else kept)


def listed_runtimes(client: EngineClient) -> dict[str, str]:
    """Each runtime Podman lists, with its program's path. Podman's /info takes ~0.3 s (it sizes its store)
    and its runtimes come from the configuration its service read when it started: the list is kept beside
    the service's socket and asked again when another service answers there (a new socket file)."""
    stamp = _socket_stamp(client.endpoint.unix_path)
    memo = Path(f"{client.endpoint.unix_path}.runtimes.json") if stamp else None
    if memo is not None:
        with contextlib.suppress(OSError, ValueError, TypeError):
            saved = json.loads(memo.read_text(encoding="utf-8"))
            if saved.get("socket") == stamp and isinstance(saved.get("runtimes"), dict):
                return {str(name): str(path) for name, path in saved["runtimes"].items()}
    try:
        listed = (client.info().get("Runtimes") or {}).items()
    except EngineError as exc:
        raise SandboxError(f"podman did not say which runtimes it has: {exc}") from exc
    runtimes = {str(name): str((spec or {}).get("path") or "") for name, spec in listed}
    if memo is not None:
        with contextlib.suppress(OSError):
            scratch = memo.with_name(f".{memo.name}.{os.getpid()}")
            scratch.write_text(json.dumps({"socket": stamp, "runtimes": runtimes}), encoding="utf-8")
            scratch.replace(memo)
    return runtimes


def _socket_stamp(path: str | None) -> list[int] | None:
    """What tells one service's socket from the next one's at the same path: its inode and change time."""
    try:
        found = os.stat(path) if path else None
    except OSError:
        return None
    return [found.st_ino, found.st_ctime_ns] if found is not None and stat.S_ISSOCK(found.st_mode) else None


def _installed(path: object) -> bool:
    return isinstance(path, str) and os.access(path, os.X_OK)


def copy_image_from_docker(tag: str) -> bool:
    """Put Docker's image ``tag`` into Podman's store (Docker's save, Podman's load, each through its
    backend's image store): the same offline image, byte for byte, its codebox labels included. Nothing is
    copied when Podman's ``tag`` is that image already (a copy keeps the image's id): every eval on Podman
    asks, and a copy is ~200 MB. Returns whether it copied. Raises SandboxError."""
    from agent.backends.registry import get_backend

    source = get_backend("docker").builder()
    try:
        target = BACKEND.builder()
        try:
            if _same_image(source.inspect_image(tag), target.inspect_image(tag)):
                return False
            with tempfile.NamedTemporaryFile(prefix="codebox-image-", suffix=".tar") as archive:
                for chunk in source.save_image(tag):
                    archive.write(chunk)
                archive.flush()
                target.load_image(Path(archive.name))
        finally:
            target.close()
    finally:
        source.close()
    return True


def _same_image(docker: dict[str, Any] | None, podman: dict[str, Any] | None) -> bool:
    """Both stores hold the image, with one id (Docker writes it ``sha256:<hex>``, Podman the bare hex)."""
    if not docker or not podman:
        return False
    ids = [str(attrs.get("Id", "")).removeprefix("sha256:") for attrs in (docker, podman)]
    return bool(ids[0]) and ids[0] == ids[1]


BACKEND = PodmanBackend()
