"""Debian packages for an environment (``--apt less``): downloaded on the host with apt-get, with
the dependencies the base image lacks, then installed offline with dpkg in the build container.

The packages are the base image's Debian release's: the host's own apt when it is the same release; for
another (a bullseye base on a bookworm host) a private apt root in codebox's cache, its lists fetched from
the host's mirror (any Debian mirror serves every suite), once a day.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from agent.debian import codename, host_mirror
from agent.env.cancel import NEVER, Cancel, run_process
from agent.env.errors import EnvError

APT_TIMEOUT_S = 600.0
LISTS_MAX_AGE_S = 86400.0
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]+(:[a-z0-9]+)?$")


def check_names(packages: list[str]) -> None:
    for name in packages:
        if not _PACKAGE.match(name):
            raise EnvError(f"--apt {name!r} is not a Debian package name", usage=True)


def _run(cmd: list[str], cwd: Path | None = None, cancel: Cancel = NEVER) -> str:
    try:
        proc = run_process(cmd, cancel, APT_TIMEOUT_S, cwd=cwd, errors="replace", stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise EnvError("--apt needs apt-get and apt-cache on the host (a Debian host)") from None
    except subprocess.TimeoutExpired:
        raise EnvError(f"{cmd[0]} took longer than {APT_TIMEOUT_S:g} s") from None
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.strip().splitlines()[-2:])
        raise EnvError(f"{' '.join(cmd[:2])} failed: {tail}", usage="Unable to locate" in proc.stderr)
    return proc.stdout


def suite_options(suite: str, cancel: Cancel = NEVER) -> list[str]:
    """apt's options for ``suite``'s packages: none for the host's own release (or an unknown one); else a private
    apt root (``<cache>/apt/SUITE``) whose lists are fetched from the host's mirror when a day old."""
    if not suite or suite == codename():
        return []
    from agent.env.resolve.fetch import cache_dir

    mirror = host_mirror()
    if mirror is None:
        raise EnvError(f"no Debian mirror in the host's apt sources to fetch {suite}'s packages from")
    root = cache_dir() / "apt" / suite
    for folder in ("lists/partial", "archives/partial", "parts"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    signed = f"[signed-by={KEYRING}] " if KEYRING.is_file() else ""
    (root / "sources.list").write_text(f"deb {signed}{mirror} {suite} main\n", encoding="utf-8")
    (root / "status").touch()
    options = [f"Dir::Etc::SourceList={root / 'sources.list'}", f"Dir::Etc::SourceParts={root / 'parts'}",
               f"Dir::State::Lists={root / 'lists'}", f"Dir::State::Status={root / 'status'}", f"Dir::Cache={root}",
               "Dir::Cache::pkgcache=", "Dir::Cache::srcpkgcache="]
    args = [part for option in options for part in ("-o", option)]
    stamp = root / "updated"
    if not stamp.is_file() or time.time() - stamp.stat().st_mtime > LISTS_MAX_AGE_S:
        _run(["apt-get", *args, "-q", "update"], cancel=cancel)
        stamp.touch()
    return args


def closure(packages: list[str], cancel: Cancel = NEVER, suite: str = "") -> list[str]:
    """The packages and everything they depend on (recursively; no recommends or suggests), in ``suite``."""
    out = _run(["apt-cache", *suite_options(suite, cancel), "depends", "--recurse", "--no-recommends", "--no-suggests",
                "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", *packages], cancel=cancel)
    names = {line.strip() for line in out.splitlines() if line and not line[0].isspace()}
    return sorted(n for n in names if not n.startswith("<"))


def download_debs(packages: list[str], installed: set[str], folder: Path, cancel: Cancel = NEVER,
                  suite: str = "") -> list[str]:
    """Download ``packages`` and their missing dependencies (of ``suite``: the base image's release; "": the
    host's) into ``folder``; return the names fetched."""
    check_names(packages)
    wanted = [name for name in closure(packages, cancel, suite) if name.split(":")[0] not in installed]
    folder.mkdir(parents=True, exist_ok=True)
    if wanted:
        _run(["apt-get", *suite_options(suite, cancel), "download", "-q", *wanted], cwd=folder, cancel=cancel)
    return wanted


def download_only(packages: list[str], folder: Path, cancel: Cancel = NEVER, suite: str = "") -> list[str]:
    """Download exactly ``packages`` (no dependencies), for unpacking with ``dpkg-deb -x``."""
    check_names(packages)
    folder.mkdir(parents=True, exist_ok=True)
    _run(["apt-get", *suite_options(suite, cancel), "download", "-q", *packages], cwd=folder, cancel=cancel)
    return packages
