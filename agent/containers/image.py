"""Build and find the sandbox image (host side).

Two images:

- ``BASE_IMAGE`` (``codebox-base:bookworm``): an offline base made by
  ``agent/containers/build_base.sh`` (debootstrap of Debian with python3, git, ripgrep and
  pytest, then ``docker import``) for hosts that reach no container registry.
- ``SANDBOX_IMAGE`` (``codebox-sandbox:latest``): ``Dockerfile.sandbox`` built on a
  base, always with ``network_mode="none"``.

The tool server is not part of the image: the client bind-mounts it read-only, on
codebox's own runtime copied out of this image (agent/containers/runtime.py), so any
Linux image can serve as a sandbox.

``Dockerfile.sandbox`` and ``build_base.sh`` are package data next to this module,
so an installed wheel builds its images from any directory. Every image built here
is labelled with the codebox version and the *image format* (a hash of those two
files): an image made by a codebox with other build files is found and rebuilt
(``ensure_sandbox_image``) or explained (``image_problem``), never used blindly.
Builds of one machine are serialised by a lock file, and docker tags an image only
when its build succeeded, so nothing half-built is ever tagged.

Lookups (``image_exists``, ``image_labels``, ``image_problem``: a task's start asks one), builds
and pulls all go through ``engine_api`` (a build's progress is streamed to ``log``, message by message).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import signal
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agent import __version__
from agent.containers.engine_api import EngineClient, EngineError, NotFound, connect_engine
from agent.defaults import DEFAULT_IMAGE
from agent.errors import CodeboxError

BASE_IMAGE = "codebox-base:bookworm"
SANDBOX_IMAGE = DEFAULT_IMAGE
# The Dockerfile's default base when a registry can be reached.
REGISTRY_BASE_IMAGE = "python:3.11-slim-bookworm"

PACKAGE_DIR = Path(__file__).resolve().parent
BUILD_BASE_SCRIPT = PACKAGE_DIR / "build_base.sh"
DOCKERFILE_NAME = "Dockerfile.sandbox"
DOCKERFILE = PACKAGE_DIR / DOCKERFILE_NAME
LABEL_VERSION = "codebox.version"
LABEL_FORMAT = "codebox.format"

Log = Callable[[str], None]

class ImageError(CodeboxError):
    """An image could not be found or built; the message says why and what to do."""


def _inspect(tag: str, client: EngineClient | None = None) -> dict[str, Any] | None:
    """The daemon's description of a local image; None when there is none (no pull is tried)."""
    client = client or connect_engine(ImageError)
    try:
        return client.inspect_image(tag)
    except NotFound:
        return None
    except EngineError as exc:
        raise ImageError(f"Docker could not look up image {tag!r}: {exc}") from exc


def image_exists(tag: str) -> bool:
    """True when the local engine has an image with this tag (no pull is tried)."""
    return _inspect(tag) is not None


def image_size(tag: str) -> int:
    """Size in bytes of a local image, as ``docker images`` counts it."""
    info = _inspect(tag)
    if info is None:
        raise ImageError(f"no local image {tag!r}")
    return int(info.get("Size") or 0)


def find_dockerfile() -> Path:
    """``Dockerfile.sandbox`` (package data), or a clear error for a broken install."""
    if not DOCKERFILE.is_file():
        raise ImageError(
            f"{DOCKERFILE_NAME} is missing from this codebox install ({DOCKERFILE}); "
            "reinstall codebox (pip install --force-reinstall codebox)"
        )
    return DOCKERFILE


def image_format() -> str:
    """A hash of the files an image is built from: images of another format are rebuilt."""
    digest = hashlib.sha256()
    for path in (find_dockerfile(), BUILD_BASE_SCRIPT):
        digest.update(path.read_bytes() if path.is_file() else b"")
    return digest.hexdigest()[:12]


def image_labels(tag: str, client: EngineClient | None = None) -> dict[str, str] | None:
    """The labels of a local image, or None when there is no such image."""
    info = _inspect(tag, client)
    if info is None:
        return None
    return dict((info.get("Config") or {}).get("Labels") or {})


def stale(labels: dict[str, str]) -> str | None:
    """Why an image built by codebox does not fit this codebox (None: it fits, or it is not ours)."""
    built = labels.get(LABEL_FORMAT)
    if labels.get("codebox.image") != "sandbox" or built == image_format():
        return None
    by = labels.get(LABEL_VERSION, "an older codebox")
    return f"it was built by codebox {by} from other build files (image format {built or 'none'}, now {image_format()})"


def image_problem(tag: str, client: EngineClient | None = None, build: str = "codebox image build") -> str | None:
    """Why ``tag`` cannot serve as the sandbox image (of the engine ``client`` speaks to), with what
    to do (``build``: the command that builds it there); None when it can.

    Images not built by codebox (``--image python:3.12``) are taken as they are.
    """
    labels = image_labels(tag, client)
    if labels is None:
        return f"the sandbox image {tag!r} is not there; build it with `{build}` (or pass --image)"
    why = stale(labels)
    if why:
        return f"the sandbox image {tag!r} does not fit this codebox {__version__}: {why}; run `{build}`"
    return None


@contextlib.contextmanager
def build_lock(log: Log) -> Iterator[None]:
    """One image build at a time on this machine (per user): a second waits, then reuses."""
    path = Path(tempfile.gettempdir()) / f"codebox-image-build-{os.getuid()}.lock"
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("another codebox is building images on this machine; waiting for it to finish")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_base(force: bool = False, log: Log = print, suite: str = "bookworm", tag: str = BASE_IMAGE,
               mirror: str | None = None, packages: tuple[str, ...] = ()) -> None:
    """Build ``tag`` (default ``BASE_IMAGE``) offline from Debian ``suite`` with ``build_base.sh`` (it reuses an
    existing one unless ``force``; ``mirror``: CODEBOX_DEBIAN_MIRROR when the user set none; ``packages``: more
    Debian packages), streaming the script's output line by line to ``log``."""
    if not BUILD_BASE_SCRIPT.is_file():
        raise ImageError(
            f"{BUILD_BASE_SCRIPT.name} is missing from this codebox install ({BUILD_BASE_SCRIPT}); "
            "reinstall codebox (pip install --force-reinstall codebox)"
        )
    cmd = ["bash", str(BUILD_BASE_SCRIPT), "--tag", tag, *(["--packages", ",".join(packages)] if packages else [])]
    if force:
        cmd.append("--force")
    try:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            bufsize=1,
            # Own process group: on an interrupt the whole build (debootstrap, dpkg)
            # gets SIGTERM, and the script's trap unmounts and removes its tree.
            start_new_session=True,
            env={**({"CODEBOX_DEBIAN_MIRROR": mirror} if mirror else {}), **os.environ, "CODEBOX_SUITE": suite},
        )
    except OSError as exc:
        raise ImageError(f"could not run {BUILD_BASE_SCRIPT}: {exc}") from exc
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            log(line.rstrip("\n"))
        returncode = proc.wait()
    except BaseException:
        _stop_group(proc)
        raise
    if returncode != 0:
        raise ImageError(
            f"building the offline base image {tag} failed "
            f"(build_base.sh exited {returncode}); its output is above"
        )


def _stop_group(proc: subprocess.Popen[str]) -> None:
    """SIGTERM the build's process group, give its cleanup time, then SIGKILL."""
    for sig, grace in ((signal.SIGTERM, 60.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _context_tar(dockerfile: Path) -> io.BytesIO:
    """A build context holding only the Dockerfile: it copies nothing, so nothing
    else of the project is sent to the daemon."""
    data = dockerfile.read_bytes()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(DOCKERFILE_NAME)
        info.size = len(data)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


def _stream_build(chunks: Iterator[dict[str, Any]], log: Log) -> None:
    for chunk in chunks:
        if "error" in chunk:
            detail = chunk.get("errorDetail", {}).get("message") or chunk["error"]
            raise ImageError(f"docker build failed: {str(detail).strip()}")
        text = chunk.get("stream")
        if text is None and "status" in chunk:
            text = " ".join(str(chunk[k]) for k in ("id", "status", "progress") if chunk.get(k))
        if text:
            for line in str(text).rstrip("\n").splitlines():
                log(line)


def build_sandbox(
    base: str = BASE_IMAGE,
    tag: str = SANDBOX_IMAGE,
    force: bool = False,
    log: Log = print,
) -> str:
    """Build ``Dockerfile.sandbox`` on ``base`` as ``tag`` with no network.

    Reuses an existing ``tag`` unless ``force`` (which also skips the layer cache).
    If ``base`` is not local, the daemon tries to pull it (the build step itself
    never has a network). Returns the tag.
    """
    labels = image_labels(tag)
    if not force and labels is not None:
        why = stale(labels)
        if why is None:
            log(f"image {tag} already exists; reusing it")
            return tag
        log(f"image {tag} is rebuilt: {why}")
    dockerfile = find_dockerfile()
    client = connect_engine(ImageError)  # its build stream has no timeout: a build step may be silent for minutes
    log(f"building {tag} from {DOCKERFILE_NAME} on {base} (network none)")
    try:
        chunks = client.build(_context_tar(dockerfile).getvalue(), {
            "t": tag,
            "dockerfile": DOCKERFILE_NAME,
            "buildargs": {"BASE_IMAGE": base},
            "labels": {LABEL_VERSION: __version__, LABEL_FORMAT: image_format()},
            "networkmode": "none",
            "nocache": int(force),
            "rm": 1,
            "forcerm": 1,
        })
        _stream_build(chunks, log)
    except EngineError as exc:
        raise ImageError(f"docker build of {tag} on {base} failed: {exc}") from exc
    if not image_exists(tag):
        raise ImageError(f"docker build of {tag} reported no error but the image is missing")
    return tag


def pull(tag: str, log: Log) -> bool:
    """Try to pull ``tag``; False (with the reason logged) when no registry answers."""
    name, colon, version = tag.rpartition(":")
    if not colon or "/" in version:  # no tag, or the colon was a registry's port
        name, version = tag, "latest"
    log(f"pulling {tag}")
    try:
        for _message in connect_engine(ImageError).pull(name, version):
            pass
    except (EngineError, ImageError) as exc:
        log(f"cannot pull {tag}: {str(exc).strip()}")
        return False
    return True


def ensure_sandbox_image(
    tag: str = SANDBOX_IMAGE,
    offline: bool | None = None,
    log: Log = print,
) -> str:
    """Make sure the sandbox image ``tag`` exists; build it if not. Returns ``tag``.

    - ``offline=True``: build the offline base (reused if present), then the sandbox on it.
    - ``offline=False``: build on the registry base (pulled if missing); fail if no pull.
    - ``offline=None``: use whichever base is already local (registry base first);
      else build the offline base. No pull is tried unless CODEBOX_PULL_BASE=1: a
      machine without a registry should not send a single packet looking for one.
    """
    with build_lock(log):
        return _ensure_sandbox_image(tag, offline, log)


def _ensure_sandbox_image(tag: str, offline: bool | None, log: Log) -> str:
    labels = image_labels(tag)
    if labels is not None and stale(labels) is None:
        return tag
    if offline is None:
        if image_exists(REGISTRY_BASE_IMAGE):
            offline = False
        elif image_exists(BASE_IMAGE):
            offline = True
        else:
            offline = not (os.environ.get("CODEBOX_PULL_BASE") == "1" and pull(REGISTRY_BASE_IMAGE, log))
            if offline:
                log(f"building the offline base image {BASE_IMAGE} (set CODEBOX_PULL_BASE=1 to pull instead)")
    elif not offline and not image_exists(REGISTRY_BASE_IMAGE) and not pull(REGISTRY_BASE_IMAGE, log):
        raise ImageError(
            f"cannot pull {REGISTRY_BASE_IMAGE} (no registry?); build offline instead "
            "(offline=True, or `bash agent/containers/build_base.sh`)"
        )
    if offline:
        build_base(log=log)
        return build_sandbox(base=BASE_IMAGE, tag=tag, log=log)
    return build_sandbox(base=REGISTRY_BASE_IMAGE, tag=tag, log=log)
