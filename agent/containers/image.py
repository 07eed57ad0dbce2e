"""Build and find the sandbox image (host side).

Two images:

- ``BASE_IMAGE`` (``codebox-base:bookworm``): an offline base made by
  ``agent/containers/build_base.sh`` (debootstrap of Debian with python3, git, ripgrep and
  pytest, then ``docker import``) for hosts that reach no container registry.
- ``SANDBOX_IMAGE`` (``codebox-sandbox:latest``): ``Dockerfile.sandbox`` built on a
  base, always with ``network_mode="none"``.

The tool server is not part of the image: the client bind-mounts it read-only
at /opt/codebox, so any image with python3 >= 3.9 can serve as a sandbox.

``Dockerfile.sandbox`` lives at the project root and the script next to this
module: both are found from a clone (``pip install -e .``); a missing file is a
clear ``ImageError``.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import docker.errors

from agent.containers.docker_client import connect
from agent.errors import CodeboxError

BASE_IMAGE = "codebox-base:bookworm"
SANDBOX_IMAGE = "codebox-sandbox:latest"
# The Dockerfile's default base when a registry can be reached.
REGISTRY_BASE_IMAGE = "python:3.11-slim-bookworm"

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parents[1]
BUILD_BASE_SCRIPT = PACKAGE_DIR / "build_base.sh"
DOCKERFILE_NAME = "Dockerfile.sandbox"

Log = Callable[[str], None]

class ImageError(CodeboxError):
    """An image could not be found or built; the message says why and what to do."""


def _client() -> docker.DockerClient:
    return connect(ImageError)


def image_exists(tag: str) -> bool:
    """True when the local engine has an image with this tag (no pull is tried)."""
    client = _client()
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    except docker.errors.APIError as exc:
        raise ImageError(f"Docker could not look up image {tag!r}: {exc}") from exc
    finally:
        client.close()
    return True


def image_size(tag: str) -> int:
    """Size in bytes of a local image, as ``docker images`` counts it."""
    client = _client()
    try:
        return int(client.images.get(tag).attrs["Size"])
    except docker.errors.ImageNotFound as exc:
        raise ImageError(f"no local image {tag!r}") from exc
    finally:
        client.close()


def find_dockerfile() -> Path:
    """``Dockerfile.sandbox`` at the project root, or a clear error."""
    path = PROJECT_ROOT / DOCKERFILE_NAME
    if not path.is_file():
        raise ImageError(
            f"{DOCKERFILE_NAME} not found at {path}. Image builds need a clone of the "
            "codebox project installed with `pip install -e .`; or build it by hand: "
            f"`docker build --network none -f {DOCKERFILE_NAME} "
            f"--build-arg BASE_IMAGE={BASE_IMAGE} -t {SANDBOX_IMAGE} .` in the clone."
        )
    return path


def build_base(force: bool = False, log: Log = print) -> None:
    """Build ``BASE_IMAGE`` offline with ``build_base.sh`` (it reuses an existing one
    unless ``force``), streaming the script's output line by line to ``log``."""
    if not BUILD_BASE_SCRIPT.is_file():
        raise ImageError(
            f"{BUILD_BASE_SCRIPT.name} not found at {BUILD_BASE_SCRIPT}; "
            "use a clone of the codebox project (`pip install -e .`)."
        )
    cmd = ["bash", str(BUILD_BASE_SCRIPT)]
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
            f"building the offline base image {BASE_IMAGE} failed "
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
    if not force and image_exists(tag):
        log(f"image {tag} already exists; reusing it")
        return tag
    dockerfile = find_dockerfile()
    client = _client()
    log(f"building {tag} from {DOCKERFILE_NAME} on {base} (network none)")
    try:
        chunks = client.api.build(
            fileobj=_context_tar(dockerfile),
            custom_context=True,
            dockerfile=DOCKERFILE_NAME,
            tag=tag,
            buildargs={"BASE_IMAGE": base},
            network_mode="none",
            nocache=force,
            rm=True,
            forcerm=True,
            decode=True,
        )
        _stream_build(chunks, log)
    except docker.errors.APIError as exc:
        raise ImageError(f"docker build of {tag} on {base} failed: {exc}") from exc
    finally:
        client.close()
    if not image_exists(tag):
        raise ImageError(f"docker build of {tag} reported no error but the image is missing")
    return tag


def _pull(tag: str, log: Log) -> bool:
    """Try to pull ``tag``; False (with the reason logged) when no registry answers."""
    client = _client()
    log(f"pulling {tag}")
    try:
        client.images.pull(tag)
    except docker.errors.DockerException as exc:
        log(f"cannot pull {tag}: {str(exc).strip()}")
        return False
    finally:
        client.close()
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
    if image_exists(tag):
        return tag
    if offline is None:
        if image_exists(REGISTRY_BASE_IMAGE):
            offline = False
        elif image_exists(BASE_IMAGE):
            offline = True
        else:
            offline = not (os.environ.get("CODEBOX_PULL_BASE") == "1" and _pull(REGISTRY_BASE_IMAGE, log))
            if offline:
                log(f"building the offline base image {BASE_IMAGE} (set CODEBOX_PULL_BASE=1 to pull instead)")
    elif not offline and not image_exists(REGISTRY_BASE_IMAGE) and not _pull(REGISTRY_BASE_IMAGE, log):
        raise ImageError(
            f"cannot pull {REGISTRY_BASE_IMAGE} (no registry?); build offline instead "
            "(offline=True, or `bash agent/containers/build_base.sh`)"
        )
    if offline:
        build_base(log=log)
        return build_sandbox(base=BASE_IMAGE, tag=tag, log=log)
    return build_sandbox(base=REGISTRY_BASE_IMAGE, tag=tag, log=log)
