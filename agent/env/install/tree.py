"""The project tree as the build sees it: its files, and one key for all of them.

The files are those git would take (tracked, and untracked but not ignored: `git ls-files`,
the only git command run here, so no filter or hook of the repository's configuration
runs), or every file but ``.git`` when it is not a git work tree. The key hashes each file's
name, kind and bytes (streamed), so a project layer is never reused for a tree that differs
in any file: another commit, an uncommitted edit, a new file. A file larger than
``HASH_LIMIT`` is keyed by its size and modification time instead (a sparse 64 GiB file is
not read), and the tree is refused past ``MAX_FILES``.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from pydantic import BaseModel

from agent.env.errors import EnvError
from agent.env.read.gitread import read_git

MAX_FILES = 200_000
HASH_LIMIT = 256 * 1024 * 1024
_GIT_TIMEOUT_S = 60
_SKIP_DIRS = {".git", ".hg", ".svn"}


class Tree(BaseModel):
    """The files the build copies (relative paths) and the key of their contents."""

    files: list[str]
    key: str
    git: bool  # a git work tree: its .git folder is given to the build (version from tags)
    # Submodules left empty (the source held none of them: agent/task/submodules.py), named when a build fails.
    empty_submodules: list[str] = []

    def missing_submodules(self, repo: str) -> str:
        """One line naming the empty submodules (a failed build may have needed them); "" when there are none."""
        empty = self.empty_submodules
        if not empty:
            return ""
        shown = ", ".join(empty[:3]) + (f" and {len(empty) - 3} more" if len(empty) > 3 else "")
        many = len(empty) > 1
        return (f"{shown} {'are git submodules' if many else 'is a git submodule'} the clone of {repo} does not "
                f"hold ({'they are' if many else 'it is'} empty here, and codebox builds offline): run "
                "`git submodule update --init` in that clone")


def _listed_by_git(repo: Path) -> list[str] | None:
    if not (repo / ".git").is_dir() or (repo / ".git").is_symlink():
        return None
    out = read_git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                   timeout_s=_GIT_TIMEOUT_S)
    if out is None:
        return None
    names = out.decode("utf-8", "surrogateescape").split("\0")
    return sorted(dict.fromkeys(n for n in names if n))


def _with_submodules(repo: Path, listed: list[str]) -> tuple[list[str], list[str]]:
    """git lists a submodule as one folder: its files (a workspace checks them out) are listed too, walked as
    a folder that is not a git work tree; the empty ones are returned apart."""
    files: list[str] = []
    empty: list[str] = []
    for name in listed:
        folder = repo / name
        if not folder.is_dir() or folder.is_symlink():
            files.append(name)
            continue
        inside = [f for f in _walked(folder) if f != ".git"]  # a user's submodule: its .git file points away
        files += [f"{name}/{relative}" for relative in inside] if inside else [name]
        if not inside:
            empty.append(name)
        if len(files) > MAX_FILES:
            break
    return sorted(files), empty


def _walked(repo: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        relative = os.path.relpath(folder, repo)
        for name in files:
            found.append(name if relative == "." else f"{relative}/{name}")
        if len(found) > MAX_FILES:
            return found
        for name in dirs:  # a symlinked folder is a link, not walked into
            if (Path(folder) / name).is_symlink():
                found.append(name if relative == "." else f"{relative}/{name}")
        dirs[:] = [d for d in dirs if not (Path(folder) / d).is_symlink()]
    return sorted(found)


def _entry(repo: Path, name: str) -> bytes:
    """One file's part of the key: its name, its kind and mode, its bytes' hash (or a symlink's target)."""
    path = repo / name
    try:
        info = path.lstat()
    except FileNotFoundError:
        return b"gone\0" + name.encode("utf-8", "surrogateescape") + b"\0"  # deleted in the work tree
    head = name.encode("utf-8", "surrogateescape") + b"\0"
    if stat.S_ISLNK(info.st_mode):
        return head + b"link\0" + os.fsencode(os.readlink(path)) + b"\0"
    if stat.S_ISDIR(info.st_mode):
        return head + b"dir\0"  # a submodule: unpopulated, as a checkout leaves it
    if not stat.S_ISREG(info.st_mode):
        return head + b"other\0"
    mode = b"x" if info.st_mode & 0o111 else b"-"
    if info.st_size > HASH_LIMIT:
        return head + mode + f"big\0{info.st_size}\0{info.st_mtime_ns}\0".encode()
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return head + mode + digest.digest()


def read_tree(repo: Path) -> Tree:
    """The tree of ``repo`` (see the module docstring); EnvError (usage) when it has too many files."""
    listed = _listed_by_git(repo)
    files, empty = _with_submodules(repo, listed) if listed is not None else (_walked(repo), [])
    if len(files) > MAX_FILES:
        raise EnvError(f"the repository has more than {MAX_FILES} files; too many to build an environment from",
                       usage=True)
    from concurrent.futures import ThreadPoolExecutor  # here: a static project's cache hit never reads a tree

    digest = hashlib.sha256(b"codebox-tree-1\0")
    with ThreadPoolExecutor(max_workers=4) as pool:  # hashlib lets go of the GIL on big reads
        for part in pool.map(lambda name: _entry(repo, name), files, chunksize=64):
            digest.update(part)
    kept = [name for name in files if os.path.lexists(repo / name)]
    return Tree(files=kept, key=digest.hexdigest()[:32], git=listed is not None, empty_submodules=empty)
