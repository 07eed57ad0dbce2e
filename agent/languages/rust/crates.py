"""A Rust repository's crates: read from its Cargo.lock, downloaded on the host from crates.io (the only
networked step), checked against the lock's sha256, and written as cargo's vendored-sources layout into an
image layer that the sandbox reads offline.

No cargo runs on the host: the lock says every crate and its checksum, and crates.io serves each as a
plain .crate (a gzipped tar). A repository's .cargo/config.toml, build scripts and git sources are never
read or run here.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from agent.env.cancel import NEVER, Cancel, check
from agent.env.errors import EnvError
from agent.env.read.safe_read import parse_toml, read_bytes
from agent.env.resolve.fetch import cache_dir

CRATES_IO = {"registry+https://github.com/rust-lang/crates.io-index", "sparse+https://index.crates.io/"}
DOWNLOAD = "https://static.crates.io/crates/{name}/{name}-{version}.crate"
CARGO_HOME = "/opt/codebox-cargo"
VENDOR = f"{CARGO_HOME}/vendor"
MAX_CRATE_BYTES = 64 << 20  # a .crate as downloaded (crates.io caps uploads at 10 MiB)
MAX_UNPACKED_BYTES = 512 << 20  # one crate unpacked: a gzip bomb stops here
MAX_LOCK_BYTES = 4 << 20
TIMEOUT_S = 30.0
CONFIG = f"""# codebox: crates come from the vendored copy made on the host; cargo never reaches a network.
[source.crates-io]
replace-with = "codebox-vendored"

[source.codebox-vendored]
directory = "{VENDOR}"

[net]
offline = true
"""


class Crate(NamedTuple):
    name: str
    version: str
    checksum: str


def read_lock(repo: Path, relative: str = "Cargo.lock") -> list[Crate] | None:
    """The registry crates ``relative`` pins (None: no lock). EnvError (one line, naming the package) for a
    package from anywhere else than crates.io or without a checksum."""
    data = read_bytes(repo, relative, limit=MAX_LOCK_BYTES)
    if data is None:
        return None
    return parse_lock(data.decode("utf-8", "replace"), relative)


def parse_lock(text: str, relative: str = "Cargo.lock") -> list[Crate]:
    """The registry crates the lock ``text`` pins (read_lock says which it refuses)."""
    lock = parse_toml(text, relative)
    crates: list[Crate] = []
    # Version 1 locks (still written for an old rust-version) keep checksums apart: "checksum NAME VERSION (SOURCE)".
    metadata = lock.get("metadata")
    old_sums: dict[str, str] = {}
    for key, value in (metadata or {}).items() if isinstance(metadata, dict) else ():
        words = key.split(" ")
        if len(words) >= 3 and words[0] == "checksum" and isinstance(value, str):
            old_sums[f"{words[1]} {words[2]}"] = value
    packages = lock.get("package")
    for package in packages if isinstance(packages, list) else []:
        if not isinstance(package, dict):
            continue
        name, version, source = package.get("name"), package.get("version"), package.get("source")
        if source is None:
            continue  # a package of the workspace itself (a path inside the repository)
        shown = f"{name} {version}"
        if source not in CRATES_IO:
            raise EnvError(f"{relative}: the crate {shown} comes from {str(source)[:80]}: codebox fetches crates "
                           "from crates.io only", usage=True)
        checksum = package.get("checksum") or old_sums.get(f"{name} {version}")
        if not (isinstance(name, str) and isinstance(version, str) and isinstance(checksum, str)):
            raise EnvError(f"{relative}: the crate {shown} has no checksum; refused", usage=True)
        crates.append(Crate(name, version, checksum))
    return crates


def _cached(crate: Crate) -> Path:
    return cache_dir() / "crates" / f"{crate.name}-{crate.version}.crate"


def download(crates: list[Crate], cancel: Cancel = NEVER, log: object = None) -> dict[Crate, Path]:
    """Each crate's .crate file, from the cache or crates.io, its sha256 checked against the lock."""

    def one(crate: Crate) -> Path:
        path = _cached(crate)
        if path.is_file() and _sha256(path.read_bytes()) == crate.checksum:
            return path
        check(cancel)
        url = DOWNLOAD.format(name=crate.name, version=crate.version)
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
                data = response.read(MAX_CRATE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise EnvError(f"the crate {crate.name} {crate.version} could not be downloaded from crates.io "
                           f"(HTTP {exc.code})") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise EnvError(f"the crate {crate.name} {crate.version}: crates.io is out of reach ({reason})") from None
        if len(data) > MAX_CRATE_BYTES:
            raise EnvError(f"the crate {crate.name} {crate.version} is over {MAX_CRATE_BYTES >> 20} MiB; refused")
        if _sha256(data) != crate.checksum:
            raise EnvError(f"the crate {crate.name} {crate.version} does not match Cargo.lock's checksum; refused")
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".part")
        partial.write_bytes(data)
        partial.replace(path)
        return path

    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(zip(crates, pool.map(one, crates), strict=True))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_layer(dest: Path, files: dict[Crate, Path], cancel: Cancel = NEVER) -> Path:
    """A layer tar at ``dest``: cargo's config (crates.io replaced by the vendored copy, offline) and each
    crate unpacked under VENDOR/<name>-<version>/ with its .cargo-checksum.json. Only regular files and
    folders are taken from a crate, each under its own folder, owned by root, at most MAX_UNPACKED_BYTES."""
    with tarfile.open(dest, "w") as tar:
        layer = _Layer(tar)
        layer.file(f"{CARGO_HOME.lstrip('/')}/config.toml", CONFIG.encode(), 0o644)
        for crate, path in sorted(files.items()):
            check(cancel)
            _add_crate(layer, crate, path)
    return dest


def _add_crate(layer: _Layer, crate: Crate, path: Path) -> None:
    top = f"{crate.name}-{crate.version}"
    into = f"{VENDOR.lstrip('/')}/{top}"
    total = 0
    try:
        with gzip.open(path) as unzipped, tarfile.open(fileobj=unzipped, mode="r|") as crate_tar:
            for member in crate_tar:
                parts = member.name.rstrip("/").split("/")
                if parts[0] != top or ".." in parts or member.name.startswith("/") or len(parts) < 2:
                    continue  # not under the crate's own folder: never written
                name = f"{into}/{'/'.join(parts[1:])}"
                if member.isdir():
                    layer.folder(name)
                elif member.isfile():
                    total += member.size
                    if total > MAX_UNPACKED_BYTES:
                        raise EnvError(f"the crate {top} unpacks to over {MAX_UNPACKED_BYTES >> 20} MiB; refused")
                    source = crate_tar.extractfile(member)
                    data = source.read() if source is not None else b""
                    layer.file(name, data, 0o755 if member.mode & 0o111 else 0o644)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise EnvError(f"the crate {top} is not a readable .crate: {exc}") from None
    # cargo's directory source checks the package's checksum against the lock's; no per-file list.
    layer.file(f"{into}/.cargo-checksum.json", json.dumps({"files": {}, "package": crate.checksum}).encode(), 0o644)


class _Layer:
    """A layer tar being written: root-owned members, every folder once and before what it holds."""

    def __init__(self, tar: tarfile.TarFile) -> None:
        self.tar = tar
        self.folders: set[str] = set()

    def folder(self, name: str) -> None:
        if name in self.folders:
            return
        if "/" in name:
            self.folder(name.rsplit("/", 1)[0])
        self.folders.add(name)
        info = tarfile.TarInfo(name)
        info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
        self.tar.addfile(info)

    def file(self, name: str, data: bytes, mode: int) -> None:
        self.folder(name.rsplit("/", 1)[0])
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), mode, 0
        self.tar.addfile(info, io.BytesIO(data))
