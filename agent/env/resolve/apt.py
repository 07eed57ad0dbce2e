"""Debian packages for an environment (``--apt less``): downloaded on the host with apt-get, with
the dependencies the base image lacks, then installed offline with dpkg in the build container.

The host's apt sources must be the base image's Debian release (codebox's offline base is
made from the host's own mirror, so they are).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from agent.env.cancel import NEVER, Cancel, run_process
from agent.env.errors import EnvError

APT_TIMEOUT_S = 600.0
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


def closure(packages: list[str], cancel: Cancel = NEVER) -> list[str]:
    """The packages and everything they depend on (recursively; no recommends or suggests)."""
    out = _run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
                "--no-breaks", "--no-replaces", "--no-enhances", *packages], cancel=cancel)
    names = {line.strip() for line in out.splitlines() if line and not line[0].isspace()}
    return sorted(n for n in names if not n.startswith("<"))


def download_debs(packages: list[str], installed: set[str], folder: Path, cancel: Cancel = NEVER) -> list[str]:
    """Download ``packages`` and their missing dependencies into ``folder``; return the names fetched."""
    check_names(packages)
    wanted = [name for name in closure(packages, cancel) if name.split(":")[0] not in installed]
    folder.mkdir(parents=True, exist_ok=True)
    if wanted:
        _run(["apt-get", "download", "-q", *wanted], cwd=folder, cancel=cancel)
    return wanted


def download_only(packages: list[str], folder: Path, cancel: Cancel = NEVER) -> list[str]:
    """Download exactly ``packages`` (no dependencies), for unpacking with ``dpkg-deb -x``."""
    check_names(packages)
    folder.mkdir(parents=True, exist_ok=True)
    _run(["apt-get", "download", "-q", *packages], cwd=folder, cancel=cancel)
    return packages
