"""Helpers for tests on git repositories: run git, fingerprint a tree byte for byte."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path


def sh(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout.strip()


def fingerprint(root: Path) -> dict[str, str]:
    """Every file and folder under root (.git included): its bytes' hash, its mode and its mtime.

    One exception: the mtime of a file in .git/objects. When the workspace's git writes an
    object the user's store already has (a staged blob, an unchanged subtree), git finds it
    through the alternates and refreshes its mtime instead (gc's grace period) -- no byte
    changes, and git has no setting to turn it off.
    """
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
            rel = str(path.relative_to(root))
            mtime = "" if rel.startswith(".git/objects/") and path.is_file() else str(st.st_mtime_ns)
            out[rel] = f"{digest} {st.st_mode:o} {mtime}"
    return out
