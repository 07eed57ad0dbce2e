"""Where cargo keeps the Cargo.lock of a repository that commits none: /repo is read-only in the sandbox, so
cargo writes it into the build cache (LOCK), told so in the form the toolchain's cargo takes, chosen by its
version (``cargo -V``, asked once per toolchain image: cargo_version.py):

- 1.94's releases and newer: the config key ``resolver.lockfile-path``, set in the environment image's
  variables (CARGO_RESOLVER_LOCKFILE_PATH, with CARGO_UNSTABLE_LOCKFILE_PATH while it is unstable: 1.97 made it
  stable and ignores that variable; RUSTC_BOOTSTRAP=1 lets a stable cargo take it). The test command is cargo
  test's plain one, and every other cargo command the model runs finds the lock there too.
- 1.82 to 1.93, and 1.94's nightlies: ``cargo test -Zunstable-options --lockfile-path LOCK``, the flag that 1.94
  deprecated and 1.95 removed (the config key came during 1.94's nightlies: an early one lacks it). Such a cargo
  ignores the variables above (Debian trixie's 1.85, tried).
- older: neither; the environment build says so in one line.
"""

from __future__ import annotations

import re
from typing import NamedTuple

LOCK = "/tmp/codebox-cache/Cargo.lock"  # in the build cache the sandbox keeps between runs (env.BUILD_CACHE)
FLAG = ("-Zunstable-options", "--lockfile-path", LOCK)
CONFIG = {"CARGO_UNSTABLE_LOCKFILE_PATH": "true", "CARGO_RESOLVER_LOCKFILE_PATH": LOCK}
FLAG_SINCE = (1, 82)
CONFIG_SINCE = (1, 94)  # its releases; its nightlies from 2026-01-15 on only (the flag works in all of them)
_VERSION = re.compile(r"^cargo (\d+)\.(\d+)\.\d+(-[0-9A-Za-z.]+)?(\s|$)")


class LockPath(NamedTuple):
    """How one cargo is told where the lock goes."""

    test_args: tuple[str, ...]
    """cargo test's own options (before its ``--``)."""
    env: dict[str, str]
    """Variables of the environment image."""


class CargoVersion(NamedTuple):
    major: int
    minor: int
    nightly: bool


def parse(line: str) -> CargoVersion | None:
    """The version ``cargo -V`` said ("cargo 1.85.0 (d73d2caf9 2024-12-31)", "cargo 1.97.0-nightly (...)"), or
    None when the line is not one."""
    found = _VERSION.match(line.strip())
    if found is None:
        return None
    return CargoVersion(int(found[1]), int(found[2]), (found[3] or "").startswith("-nightly"))


def lock_path(line: str) -> LockPath | None:
    """The form the cargo that said ``line`` takes (None: it takes none, or the line is no version).
    ``line`` empty (the toolchain was not asked): the config key, as today's cargo takes it."""
    if not line:
        return LockPath((), dict(CONFIG))
    version = parse(line)
    if version is None:
        return None
    at = (version.major, version.minor)
    if at > CONFIG_SINCE or (at == CONFIG_SINCE and not version.nightly):
        return LockPath((), dict(CONFIG))
    if at >= FLAG_SINCE:
        return LockPath(FLAG, {})
    return None


def refusal(line: str, other: str = "") -> str:
    """Why the cargo that said ``line`` cannot test a repository without a Cargo.lock (lock_path gave None), and
    what to do (``other``: another toolchain that can, in a few words)."""
    said = line.strip().splitlines()[0][:80] if line.strip() else "nothing"
    if parse(line) is None:
        return f"the repository has no Cargo.lock, and the toolchain's `cargo -V` said {said!r}, not a version"
    return (f"the repository has no Cargo.lock, and the toolchain's {said.split(' (')[0]} cannot write one outside "
            f"the read-only /repo (cargo {FLAG_SINCE[0]}.{FLAG_SINCE[1]} or newer can): commit a Cargo.lock, or "
            f"use a newer toolchain{f' ({other})' if other else ''}")
