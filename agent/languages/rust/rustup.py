"""The host's rustup toolchain, copied into an image: the default toolchain (``RUSTUP_TOOLCHAIN``, else
rustup's settings.toml), only what ``cargo test`` needs (cargo, rustc, rustdoc, their two shared libraries,
the standard library and rustc's linker wrapper: ``gcc-ld/ld.lld`` + ``rust-lld``, which rustc calls through
``cc -fuse-ld=lld``), laid out under /usr/local on a Debian image holding gcc and libc6-dev for ``cc``.

Found without running anything: rustup's files are read, never its proxies (a repository's
rust-toolchain.toml never chooses here). The image is made once per toolchain and machine, offline (the files
are the host's; only the Debian linker image was fetched, once); its tag names the rustc version and a hash
of the toolchain's files as they stand, so a cache hit costs a few stat calls and one image lookup.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import tarfile
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from agent.containers.tar_folders import add_folders
from agent.containers.toolchain import SOURCE_LABEL
from agent.env.cancel import NEVER, Cancel, check
from agent.env.errors import EnvError

FORMAT = "rustup-1"
PREFIX = "usr/local"  # in the image: /usr/local/bin is on every Debian PATH; rustc finds its sysroot from its bin
LINKER_SUITE = "trixie"
LINKER_PACKAGES = ["gcc", "libc6-dev"]  # cc, crt files and libc for rustc's linking (libc-dev is virtual)
REPOSITORY = "codebox-toolchain-rust"
LABEL_SOURCE = SOURCE_LABEL  # "rustup <toolchain>": `codebox gc` keeps the newest copy of each
LABEL_VERSION = "codebox.toolchain.rustc"
LABEL_COMMIT = "codebox.toolchain.commit"
LABEL_FILES = "codebox.toolchain.files-sha256"
TRIPLES = {"x86_64": "x86_64-unknown-linux-gnu", "aarch64": "aarch64-unknown-linux-gnu"}
_BINARIES = ("cargo", "rustc", "rustdoc")
# In lib/rustlib/<triple>/bin: the linker rustc uses by default (rust-lld through gcc-ld's ld.lld wrapper)
# and the objcopy it strips with; not wasm's or Windows' linkers.
_LINKER_FILES = ("rust-lld", "rust-objcopy", "gcc-ld/ld.lld")
_MANIFEST_LIMIT = 16 << 20  # rustup's channel manifest: about 1 MB
Log = Callable[[str], None]


@dataclass(frozen=True)
class HostToolchain:
    """A rustup toolchain on this machine, in the folder ``root``."""

    name: str  # stable-x86_64-unknown-linux-gnu
    root: Path
    triple: str

    def files(self) -> Iterator[tuple[str, Path]]:
        """(path in the image, path on the host) of every file copied."""
        for name in _BINARIES:
            yield f"{PREFIX}/bin/{name}", self.root / "bin" / name
        for path in sorted((self.root / "lib").iterdir()):
            if path.is_file() and ".so" in path.name:  # librustc_driver-*.so, libLLVM*.so*
                yield f"{PREFIX}/lib/{path.name}", path
        target = self.root / "lib" / "rustlib" / self.triple
        for folder, _, names in sorted(os.walk(target / "lib")):
            for name in sorted(names):
                path = Path(folder) / name
                yield f"{PREFIX}/{path.relative_to(self.root)}", path
        for name in _LINKER_FILES:
            path = target / "bin" / name
            if path.is_file():
                yield f"{PREFIX}/{path.relative_to(self.root)}", path

    def stamp(self) -> str:
        """A hash of the toolchain's folder and its main files' sizes and times: it changes when rustup updates
        the toolchain in place (a few stat calls, for the cache key)."""
        parts = [FORMAT, str(self.root)]
        for name in (*(f"bin/{b}" for b in _BINARIES), "lib"):
            path = self.root / name
            paths = sorted(path.glob("librustc_driver-*.so")) if name == "lib" else [path]
            for one in paths:
                stat = one.stat()
                parts.append(f"{one.name} {stat.st_size} {stat.st_mtime_ns}")
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()


    def version_word(self) -> str:
        """rustc's version as rustup's channel manifest names it ("1.95.0", "1.97.0-nightly"), read without running
        rustc; else the toolchain's channel ("stable", a custom name)."""
        try:
            with (self.root / "lib" / "rustlib" / "multirust-channel-manifest.toml").open("rb") as handle:
                text = handle.read(_MANIFEST_LIMIT)
        except OSError:
            text = b""
        at = text.find(b'\n[pkg.rustc]\nversion = "')
        word = text[at:].split(b'"', 2)[1].split(b" ", 1)[0].decode("ascii", "replace") if at >= 0 else ""
        if not word:
            word = self.name.removesuffix(f"-{self.triple}")
        return "".join(c if c.isalnum() or c in "._-" else "-" for c in word)[:40] or "toolchain"


def rustup_home() -> Path:
    return Path(os.environ.get("RUSTUP_HOME") or Path.home() / ".rustup")


def find_host_toolchain() -> tuple[HostToolchain | None, str]:
    """(the host's default rustup toolchain, or None; why, in a few words)."""
    triple = TRIPLES.get(platform.machine())
    if triple is None:
        return None, f"rustup toolchains are copied for {', '.join(TRIPLES)} only, not {platform.machine()}"
    home = rustup_home()
    name = os.environ.get("RUSTUP_TOOLCHAIN", "")
    if not name:
        try:
            settings = tomllib.loads((home / "settings.toml").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None, f"this machine has no rustup ({home} has no settings.toml)"
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            return None, f"rustup's settings.toml could not be read ({exc})"
        name = str(settings.get("default_toolchain") or "")
        if not name:
            return None, "rustup has no default toolchain"
    folders = home / "toolchains"
    for candidate in (name, f"{name}-{triple}"):
        root = folders / candidate
        if "/" not in candidate and root.is_dir():
            root = root.resolve()
            missing = [b for b in _BINARIES if not (root / "bin" / b).is_file()]
            if missing:
                return None, f"rustup's toolchain {candidate} has no {', '.join(missing)}"
            if not (root / "lib" / "rustlib" / triple / "lib").is_dir():
                return None, f"rustup's toolchain {candidate} has no standard library for {triple}"
            return HostToolchain(candidate, root, triple), f"rustup's default toolchain {candidate}"
    return None, f"rustup's toolchain {name} is not installed under {folders}"


def rustc_version(toolchain: HostToolchain) -> tuple[str, str]:
    """(``rustc -V``'s line, the commit hash) of the toolchain's own rustc, run from its folder (no
    repository, no rustup proxy)."""
    try:
        done = subprocess.run([str(toolchain.root / "bin" / "rustc"), "-vV"], capture_output=True, text=True,
                              timeout=60, cwd=toolchain.root, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvError(f"the host's rustc ({toolchain.name}) did not run: {exc}") from None
    lines = done.stdout.splitlines()
    if done.returncode != 0 or not lines:
        raise EnvError(f"the host's rustc ({toolchain.name}) -vV failed: {done.stderr.strip()[:200]}")
    commit = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("commit-hash:")), "unknown")
    return lines[0], commit


def write_layer(toolchain: HostToolchain, dest: Path, cancel: Cancel = NEVER) -> tuple[Path, str]:
    """A layer tar at ``dest`` holding the toolchain's files (root-owned, modes kept but set-id bits), and the
    sha256 of their paths and contents."""
    digest = hashlib.sha256()
    folders: set[str] = set()
    with tarfile.open(dest, "w") as tar:
        for inside, path in toolchain.files():
            check(cancel)
            parent = inside.rsplit("/", 1)[0]
            add_folders(tar, parent, folders)
            real = path.resolve()  # a symlinked library (libLLVM.so.N -> ...) goes in as the file it names
            if not real.is_file():
                continue
            info = tar.gettarinfo(str(real), arcname=inside)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode = (info.mode & 0o777) | 0o444
            digest.update(f"{inside}\0{info.size}\0".encode())
            with real.open("rb") as source:
                tar.addfile(info, _Hashing(source, digest))
    return dest, digest.hexdigest()


class _Hashing:
    """A file read by tarfile, hashed on the way."""

    def __init__(self, source: BinaryIO, digest: hashlib._Hash) -> None:
        self.source = source
        self.digest = digest

    def read(self, size: int = -1) -> bytes:
        data = self.source.read(size)
        self.digest.update(data)
        return data


def scratch() -> tempfile.TemporaryDirectory[str]:
    """A scratch folder for the layer (hundreds of MB) on the cache's disk, not a RAM /tmp."""
    from agent.env.resolve.fetch import cache_dir

    base = cache_dir() / "tmp"
    base.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryDirectory(prefix="codebox-rustup-", dir=base)
