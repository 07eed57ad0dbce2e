"""Download a lock's wheels on the host into a cache keyed by sha256, and lay out a wheelhouse
holding exactly those wheels (hard links), to be mounted read-only into the install container.

Only the URLs the resolver returned are fetched (https from the configured index, or local
``file://`` find-links); every file is checked against the lock's sha256 before it is kept.
A file is written as ``.part`` and renamed when whole: a cancelled or failed download leaves
no entry in the cache, and the wheels fetched whole before a cancel are reused by the next build.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import urllib.parse
from pathlib import Path
from typing import BinaryIO

from agent.env.cancel import NEVER, Cancel, check
from agent.env.errors import EnvError
from agent.env.resolve.resolve import Lock, Pin

DOWNLOAD_TIMEOUT_S = 120.0
PARALLEL_DOWNLOADS = 8


def cache_dir() -> Path:
    """``$CODEBOX_CACHE_DIR``, else ``$XDG_CACHE_HOME/codebox``, else ``~/.cache/codebox``."""
    if os.environ.get("CODEBOX_CACHE_DIR"):
        return Path(os.environ["CODEBOX_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codebox"


def sha256_of(path: Path) -> str:
    """The file's sha256, hex."""
    return _sha256(path)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _stored(pin: Pin, store: Path) -> Path:
    return store / pin.sha256[:2] / pin.sha256 / pin.filename


def _copy(source: BinaryIO, dest: Path, cancel: Cancel) -> None:
    with dest.open("wb") as out:
        for block in iter(lambda: source.read(1 << 20), b""):
            check(cancel)
            out.write(block)


def fetch_pin(pin: Pin, store: Path, cancel: Cancel = NEVER) -> Path:
    """The pin's file in the cache ``store``, downloaded and checked against its sha256 when missing."""
    target = _stored(pin, store)
    if target.is_file():
        return target  # stored under its own hash: checked when it was stored
    check(cancel)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.part-{os.getpid()}-{secrets.token_hex(4)}")
    url = urllib.parse.urlsplit(pin.url)
    try:
        if url.scheme == "file" or not url.scheme:
            with open(urllib.parse.unquote(url.path) if url.scheme else pin.url, "rb") as source:
                _copy(source, partial, cancel)
        elif url.scheme == "https":
            from urllib.request import urlopen  # only for a download (a cache hit never loads http and ssl)

            with urlopen(pin.url, timeout=DOWNLOAD_TIMEOUT_S) as response:
                _copy(response, partial, cancel)
        else:
            raise EnvError(f"{pin.name}: refusing to download from {url.scheme}:// (https or local files only)")
        if _sha256(partial) != pin.sha256:
            raise EnvError(f"{pin.name} {pin.version}: the downloaded file does not match the lock's sha256")
        os.replace(partial, target)
    except OSError as exc:
        raise EnvError(f"downloading {pin.filename} failed: {exc}") from exc
    finally:
        partial.unlink(missing_ok=True)
    return target


def make_wheelhouse(lock: Lock, folder: Path, cancel: Cancel = NEVER) -> Path:
    """``folder`` holding the lock's wheels (downloaded once, then linked from the cache)."""
    store = cache_dir() / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    from concurrent.futures import ThreadPoolExecutor  # here: a cache hit imports this module, never downloads

    unique = list({pin.sha256: pin for pin in lock.pins}.values())  # a wheel in both the runtime and build lock
    with ThreadPoolExecutor(max_workers=PARALLEL_DOWNLOADS) as pool:
        paths = list(pool.map(lambda pin: fetch_pin(pin, store, cancel), unique))
    for path in paths:
        link = folder / path.name
        if link.exists() and os.path.samefile(link, path):
            continue  # a second round into the same wheelhouse (a backend asked for more)
        link.unlink(missing_ok=True)
        try:
            os.link(path, link)
        except OSError:
            shutil.copyfile(path, link)
    return folder
