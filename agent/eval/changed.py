"""The paths a patch changes, as git itself sees them: in the workspace after it applied, or in git's reading of it.

Never from codebox's own reading of the diff text: git and GNU patch name files their own way (a
`+++` name ending in a date after a space, quoting, renames), and what counts is what they did.
``changed_paths`` compares the workspace's files with its HEAD (tracked files that differ, and every
file that is not tracked, ignored ones included); ``patch_paths`` is `git apply --numstat -z`.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent.task.workspace import git

_UNQUOTED = ["-c", "core.quotePath=false"]


def changed_paths(workspace: Path) -> list[str]:
    """Every path whose file differs from the workspace's HEAD (edited, added, removed, mode changed,
    or new and ignored by a .gitignore), sorted."""
    tracked = git(*_UNQUOTED, "diff", "--no-renames", "--no-ext-diff", "--no-textconv", "--name-only", "-z", "HEAD",
                  "--", cwd=workspace).stdout
    others = git(*_UNQUOTED, "ls-files", "-z", "--others", "--directory", "--no-empty-directory", cwd=workspace).stdout
    found = set(_names(tracked))
    for name in _names(others):
        if name.endswith("/"):  # a new folder, named once by --directory (or one with a .git of its own): its files
            found.update(_files_under(workspace, name.rstrip("/")))
        else:
            found.add(name)
    return sorted(found)


def patch_paths(workspace: Path, patch: str) -> list[str]:
    """Every path ``patch`` names (old and new names of a rename), as `git apply` reads it; [] when git
    cannot read it (such a patch does not apply with `git apply` either)."""
    data = patch.encode("utf-8", errors="surrogateescape")
    proc = git("apply", "--numstat", "-z", "-", cwd=workspace, stdin=data if data.endswith(b"\n") else data + b"\n",
               check=False)
    if proc.returncode != 0:
        return []
    found: dict[str, None] = {}
    fields = proc.stdout.split(b"\0")
    index = 0
    while index < len(fields):
        entry = fields[index]
        if not entry:
            index += 1
            continue
        _added, _deleted, name = entry.split(b"\t", 2)
        if name:  # one path
            found.setdefault(_decode(name), None)
            index += 1
        else:  # a rename or copy: the two names follow
            for other in fields[index + 1:index + 3]:
                found.setdefault(_decode(other), None)
            index += 3
    return list(found)


def _names(output: bytes) -> list[str]:
    return [_decode(name) for name in output.split(b"\0") if name]


def _decode(name: bytes) -> str:
    return name.decode("utf-8", errors="surrogateescape")


def _files_under(workspace: Path, folder: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(workspace / folder):
        dirs.sort()
        relative = Path(root).relative_to(workspace).as_posix()
        found += [f"{relative}/{name}" for name in files]
    return found or [folder]
