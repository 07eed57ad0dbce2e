"""A host CPython (host_pythons.py) copied into a sandbox image, offline, as rustup.py copies the host's Rust.

The base is the host's own Debian suite (``/etc/os-release``: its glibc is the one the build was linked
against) debootstrapped by ``build_base.sh`` with the runtime libraries a pyenv build links from the host's
Debian (OpenSSL, libffi, SQLite, bzip2, xz, zlib, readline, ncurses, gdbm, uuid, nsl/tirpc; toolchain.py's
variant package list); git and ripgrep come with it, as in every sandbox image. On it, with no network: the
prefix's files under /usr/local (``python3`` and ``python`` naming ``pythonX.Y``), ``ldconfig`` for a shared
libpython, the sandbox image's environment and /repo; then the copy must import ssl, ctypes, sqlite3, bz2, lzma
and zlib, else the build fails with one line naming what is missing and the link is refused. pytest is not
put in: a task's environment brings it, and the in-box server runs on codebox's own runtime (/.codebox).

The tag names the minor and a hash of the copied files' paths and sizes, the base image and these build files,
so a cache hit costs a few thousand stat calls and two image lookups. The labels name the source folder and
the version. Like pythons.py this talks to Docker directly (a sandbox image, docs/backends.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from agent import __version__
from agent.containers import image
from agent.containers.engine_api import EngineError, connect_engine
from agent.containers.host_pythons import PREFIX, HostPython
from agent.containers.tar_folders import add_folders
from agent.debian import codename

Log = Callable[[str], None]
REPOSITORY = "codebox-sandbox"
LABEL_SOURCE = "codebox.python.source"
LABEL_VERSION = "codebox.python.version"
LABEL_KIND = "codebox.python.found-by"
LABEL_FILES = "codebox.python.files-sha256"
# The runtime libraries of a CPython built on each suite (their names change with the suite: t64 in trixie).
LIBRARIES: dict[str, list[str]] = {
    "bullseye": ["libssl1.1", "libffi7", "libsqlite3-0", "libbz2-1.0", "liblzma5", "zlib1g", "libreadline8",
                 "libncursesw6", "libgdbm6", "libgdbm-compat4", "libuuid1", "libnsl2", "libtirpc3", "libexpat1"],
    "bookworm": ["libssl3", "libffi8", "libsqlite3-0", "libbz2-1.0", "liblzma5", "zlib1g", "libreadline8",
                 "libncursesw6", "libgdbm6", "libgdbm-compat4", "libuuid1", "libnsl2", "libtirpc3", "libexpat1"],
    "trixie": ["libssl3t64", "libffi8", "libsqlite3-0", "libbz2-1.0", "liblzma5", "zlib1g", "libreadline8t64",
               "libncursesw6", "libgdbm6t64", "libgdbm-compat4t64", "libuuid1", "libnsl2", "libtirpc3t64",
               "libexpat1"],
}
REQUIRED_MODULES = ("ssl", "ctypes", "sqlite3", "bz2", "lzma", "zlib")
_MISSING = "codebox-missing:"
_CHECK = (
    "import sys\n"
    "missing = []\n"
    f"for name in {REQUIRED_MODULES!r}:\n"
    "    try:\n"
    "        __import__(name)\n"
    "    except Exception as exc:\n"
    "        missing.append(f'{name} ({type(exc).__name__}: {exc})')\n"
    f"if missing:\n    print({_MISSING!r}, '; '.join(missing))\n    sys.exit(1)\n"
    "print('codebox-python', sys.version.split()[0], sys.prefix)\n"
)
DOCKERFILE = "\n".join([
    "ARG BASE_IMAGE",
    "FROM ${BASE_IMAGE}",
    "COPY root/ /",
    "RUN ldconfig && git --version && rg --version | head -n 1 && mkdir -p /repo /opt/codebox",
    f"RUN {json.dumps(['python3', '-I', '-c', _CHECK])}",
    # As Dockerfile.sandbox: tests run as the host uid on a read-only repo and root.
    'ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/tmp PYTEST_ADDOPTS="-p no:cacheprovider"',
    "LABEL codebox.image=sandbox",
    "WORKDIR /repo",
    "",
])


class ImageError(image.ImageError):
    """The host's Python could not be copied into an image: the chain names it and goes on."""


def host_suite() -> str:
    """The host's Debian suite, the copy's base; ImageError when the host is not a Debian release codebox knows."""
    suite = codename()
    if suite not in LIBRARIES:
        raise ImageError(f"the host's release is {suite or 'not a Debian one'}: host Pythons are copied onto "
                         f"{', '.join(LIBRARIES)} only")
    return suite


def base_image(log: Log) -> str:
    """The host suite's debootstrapped base with the runtime libraries (built once per machine)."""
    from agent.containers.toolchain import ensure_toolchain

    suite = host_suite()
    return ensure_toolchain("python-libs", suite, LIBRARIES[suite], log)


def image_tag(host: HostPython, base_id: str) -> str:
    key = hashlib.sha256(f"{DOCKERFILE}\n{image.image_format()}\n{base_id}\n{host.stamp()}".encode()).hexdigest()
    return f"{REPOSITORY}:py{host.minor}-host-{key[:12]}"


def built_image(host: HostPython) -> str | None:
    """A tag of an image already made from ``host``'s files as they stand (by its label; nothing is built)."""
    try:
        found = connect_engine(ImageError).images(filters={"label": [f"{LABEL_FILES}={host.stamp()}"]})
    except EngineError:
        return None
    tags = sorted(tag for entry in found for tag in entry.get("RepoTags") or [] if tag.startswith(f"{REPOSITORY}:"))
    return tags[0] if tags else None


def ensure_host_sandbox(host: HostPython, log: Log) -> str:
    """The tag of ``host``'s sandbox image, built now (once) unless it is there; ImageError naming why not."""
    base = base_image(log)
    try:
        attrs = connect_engine(ImageError).inspect_image(base)
    except EngineError as exc:
        raise ImageError(f"Docker could not look up the base image {base}: {exc}") from None
    tag = image_tag(host, str(attrs.get("Id", "")))
    if image.image_labels(tag) is not None:
        return tag
    with image.build_lock(log):
        if image.image_labels(tag) is not None:
            return tag
        log(f"copying {host.describe()} ({host.prefix}) into {tag}, offline (once; reused after)")
        with tempfile.TemporaryDirectory(prefix="codebox-host-python-", dir=_scratch()) as tmp:
            try:
                context = write_context(host, Path(tmp) / "context.tar")
            except OSError as exc:  # a file of the prefix unreadable, the scratch disk full
                raise ImageError(f"{host.describe()} could not be copied: {exc}") from None
            _build(host, base, tag, context, log)
    return tag


def _scratch() -> str:
    """Where the build context (tens of MB) is written: TMPDIR, else /var/tmp (a disk, not a RAM /tmp)."""
    return os.environ.get("TMPDIR") or ("/var/tmp" if os.path.isdir("/var/tmp") else tempfile.gettempdir())


def write_context(host: HostPython, dest: Path) -> Path:
    """The build context at ``dest``: the Dockerfile and the prefix's files under root/ (root-owned, set-id bits
    off; a symlink to a copied file of its own folder stays a link, any other is copied as the file it names)."""
    folders: set[str] = set()
    files = list(host.files())
    copied = {inside for inside, _ in files}
    with tarfile.open(dest, "w") as tar:
        data = DOCKERFILE.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, _Bytes(data))
        for inside, path in files:
            name = f"root/{inside}"
            add_folders(tar, name.rsplit("/", 1)[0], folders)
            target = os.readlink(path) if path.is_symlink() else ""
            if target and "/" not in target and f"{inside.rsplit('/', 1)[0]}/{target}" in copied:
                _link(tar, name, target)
                continue
            real = path.resolve()
            if not real.is_file():
                continue
            info = tar.gettarinfo(str(real), arcname=name)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode = (info.mode & 0o777) | 0o444
            with real.open("rb") as source:
                tar.addfile(info, source)
        site = f"root/{PREFIX}/lib/python{host.minor}/site-packages"  # empty: the host's installs stay there
        add_folders(tar, site, folders)
        for alias in ("python3", "python"):
            _link(tar, f"root/{PREFIX}/bin/{alias}", f"python{host.minor}")
    return dest


def _link(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
    tar.addfile(info)


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def read(self, size: int = -1) -> bytes:
        end = len(self.data) if size < 0 else self.at + size
        chunk, self.at = self.data[self.at:end], min(end, len(self.data))
        return chunk


def _build(host: HostPython, base: str, tag: str, context: Path, log: Log) -> None:
    """``docker build`` of the context (network none); ImageError with the check's own line when it fails."""
    said: list[str] = []
    labels = {image.LABEL_VERSION: __version__, image.LABEL_FORMAT: image.image_format(),
              LABEL_SOURCE: str(host.prefix), LABEL_VERSION: host.version, LABEL_KIND: host.kind,
              LABEL_FILES: host.stamp()}
    try:
        with context.open("rb") as body:
            for chunk in connect_engine(ImageError).build(body, {
                "t": tag, "dockerfile": "Dockerfile", "buildargs": {"BASE_IMAGE": base}, "labels": labels,
                "networkmode": "none", "rm": 1, "forcerm": 1,
            }):
                text = chunk.get("stream") or ""
                for line in str(text).rstrip("\n").splitlines():
                    said = [*said[-20:], line]
                    log(line)
                if "error" in chunk:
                    raise EngineError(str(chunk.get("errorDetail", {}).get("message") or chunk["error"]).strip())
    except EngineError as exc:
        missing = next((line[len(_MISSING):].strip() for line in said if line.startswith(_MISSING)), None)
        if missing:
            raise ImageError(f"{host.describe()} copied in lacks {missing}") from None
        loader = next((line.strip() for line in said if "error while loading shared libraries" in line), None)
        raise ImageError(f"{host.describe()} copied in does not build: {loader or exc}") from None
    if not image.image_exists(tag):
        raise ImageError(f"docker build of {tag} reported no error but the image is missing")
