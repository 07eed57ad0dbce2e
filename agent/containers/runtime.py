"""The in-box server's own runtime: codebox's sandbox image's CPython, its stdlib, ripgrep and the
shared libraries they load (the glibc loader included), copied ONCE per codebox version into the
host's cache, then mounted read-only at RUNTIME_MOUNT in every sandbox container.

The server and its init start through that runtime's own loader::

    /.codebox/lib/ld-linux-x86-64.so.2 --library-path /.codebox/lib /.codebox/bin/python3.11 -I -S -m ...

so the image needs nothing (no python3, any libc or none), and nothing of the runtime reaches
what the tools start: no LD_LIBRARY_PATH nor PYTHONHOME is set (``--library-path`` and ``-I``
instead), and run_test runs the image's own shell, toolchain and python3. The copy is made by
agent/containers/runtime_collect.py, run in a network-less container of the sandbox image as the
host's user, writing into a folder of the cache; the folder is renamed into place when complete.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
import zlib
from pathlib import Path

from agent import __version__
from agent.containers.engine_api import EngineClient, EngineError
from agent.containers.leftovers import owner_labels
from agent.errors import SandboxError

RUNTIME_MOUNT = "/.codebox"
COLLECT_SCRIPT = Path(__file__).resolve().parent / "runtime_collect.py"
MANIFEST = "runtime.json"
COLLECT_TIMEOUT_S = 300.0


class Runtime:
    """One runtime folder on the host and where its parts are once mounted at RUNTIME_MOUNT.

    A plain class, not a dataclass: `codebox run`'s early start imports this module, and
    dataclasses (with inspect) would be a third of its import time."""

    __slots__ = ("folder", "loader", "package", "python", "rg", "version")

    def __init__(self, folder: Path, loader: str, python: str, package: str, rg: str, version: str) -> None:
        self.folder = folder
        self.loader = loader  # paths relative to the folder (and to RUNTIME_MOUNT)
        self.python = python
        self.package = package  # the sandbox package's mount point, on the interpreter's own sys.path
        self.rg = rg  # "" when the sandbox image had no ripgrep
        self.version = version

    def __repr__(self) -> str:
        return f"Runtime({str(self.folder)!r}, python {self.version})"

    def inside(self, relative: str) -> str:
        return f"{RUNTIME_MOUNT}/{relative}"

    def start(self, program: str) -> list[str]:
        """The argv that runs ``program`` (a path relative to the runtime) through its own loader."""
        return [self.inside(self.loader), "--library-path", self.inside("lib"), self.inside(program)]

    def compile_on_host(self, package: Path) -> bool:
        """Compile ``package``'s bytecode with this runtime's Python, run here on the host through its own
        loader (a host whose Python is another minor); False when it could not."""
        import subprocess

        argv = [str(self.folder / self.loader), "--library-path", str(self.folder / "lib"),
                str(self.folder / self.python), "-I", "-S", "-m", "compileall", "-q", str(package)]
        try:
            return subprocess.run(argv, capture_output=True, timeout=120).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False

    def python_argv(self) -> list[str]:
        """The interpreter, isolated (-I: no PYTHON* variable, no user site, no working directory on
        sys.path) and without site (-S: the image's .pth files are not ours)."""
        return [*self.start(self.python), "-I", "-S"]


def cache_root() -> Path:
    """``$CODEBOX_CACHE_DIR``, else ``$XDG_CACHE_HOME/codebox``, else ``~/.cache/codebox``."""
    if os.environ.get("CODEBOX_CACHE_DIR"):
        return Path(os.environ["CODEBOX_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codebox"


# What the runtime is made from: the sandbox image's build files (agent.containers.image reads the same
# two for its image format) and the collect script.
_SOURCES = ("Dockerfile.sandbox", "build_base.sh", COLLECT_SCRIPT.name)


def runtime_key() -> str:
    """This codebox's version and the files the runtime is made from: a new one of any makes a new
    runtime (an old folder stays: a codebox of that version may still run). CRC-32s, not hashlib:
    this runs on `codebox run`'s early start, and a clash of two versions' files is not a threat."""
    sums = [zlib.crc32((COLLECT_SCRIPT.parent / name).read_bytes()) for name in _SOURCES]
    return f"{__version__}-" + "".join(f"{value:08x}" for value in sums)


def runtime_folder() -> Path:
    """``$CODEBOX_RUNTIME_DIR/<key>``, else under the cache (tests keep one for the session)."""
    parent = os.environ.get("CODEBOX_RUNTIME_DIR") or str(cache_root() / "runtime")
    return Path(parent) / runtime_key()


_LOADED: dict[Path, Runtime] = {}
_LOCK = threading.Lock()


def read_runtime(folder: Path) -> Runtime | None:
    """The runtime in ``folder``, or None when there is none (or an incomplete one)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        return Runtime(folder, str(manifest["loader"]), str(manifest["python"]), str(manifest["package"]),
                       str(manifest.get("rg") or ""), str(manifest.get("version") or ""))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def ensure_runtime(client: EngineClient | None = None) -> Runtime:
    """The runtime of this codebox, copied out of the sandbox image the first time (a few seconds,
    once per version; later calls read one small file, then nothing). Raises SandboxError."""
    folder = runtime_folder()
    with _LOCK:
        known = _LOADED.get(folder)
        if known is None:
            known = read_runtime(folder) or _collect_locked(folder, client)
            _LOADED[folder] = known
        return known


def _collect_locked(folder: Path, client: EngineClient | None) -> Runtime:
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # another codebox copying the same runtime: wait for it
        try:
            found = read_runtime(folder)
            if found is not None:
                return found
            return _collect(folder, client)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _collect(folder: Path, client: EngineClient | None) -> Runtime:
    import shutil

    from agent.containers.engine_api import connect_engine
    from agent.containers.image import SANDBOX_IMAGE, ImageError, image_problem

    client = client or connect_engine(SandboxError)
    # Not built here, silently, inside a task's start: building it is `codebox image build`'s (with its progress).
    try:
        problem = image_problem(SANDBOX_IMAGE, client)
    except ImageError as exc:
        problem = str(exc)
    if problem:
        raise SandboxError("the sandbox server's runtime is copied once out of codebox's own sandbox image, "
                           f"whatever --image says: {problem.replace(' (or pass --image)', '')}")
    image = SANDBOX_IMAGE
    work = folder.parent / f".{folder.name}.{os.getpid()}.tmp"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(mode=0o755)
    try:
        _run_collect(client, image, work)
        work.chmod(0o755)
        work.rename(folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    runtime = read_runtime(folder)
    if runtime is None:
        raise SandboxError(f"the sandbox's runtime copied into {folder} has no readable {MANIFEST}")
    return runtime


def _run_collect(client: EngineClient, image: str, out: Path) -> None:
    """Run the collect script in a network-less container of the sandbox image, as this user."""
    body = {
        "Image": image,
        "Cmd": ["python3", "-I", "-c", COLLECT_SCRIPT.read_text(encoding="utf-8"), "/out"],
        "Entrypoint": [],
        "User": f"{os.getuid()}:{os.getgid()}",
        "WorkingDir": "/",
        "Labels": owner_labels("runtime", "runtime", time.time() + COLLECT_TIMEOUT_S),
        "HostConfig": {
            "NetworkMode": "none",
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "ReadonlyRootfs": True,
            "Mounts": [{"Type": "bind", "Source": str(out), "Target": "/out", "ReadOnly": False}],
        },
    }
    try:
        container_id = client.create_container(body)
        try:
            client.start(container_id)
            code = client.wait(container_id, timeout_s=COLLECT_TIMEOUT_S)
            detail = "" if code == 0 else client.logs(container_id, stdout=True, stderr=True, limit=1 << 16).decode(
                "utf-8", "replace")[-800:]
        finally:
            with contextlib.suppress(EngineError):
                client.remove(container_id, force=True)
    except EngineError as exc:
        raise SandboxError(f"could not copy the sandbox's runtime out of {image}: {exc}") from exc
    if code != 0:
        raise SandboxError(f"could not copy the sandbox's runtime out of {image} (exit {code}): {detail.strip()}")
