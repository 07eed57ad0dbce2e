"""A digest of a project's C/C++/Cython sources, streamed: a change to any of them makes a new environment.

Files are read in blocks, never whole, and only regular files inside the repository (symlinks
are not followed, and neither are folders that are symlinks). The walk, the number of files and
their total size are capped; past a cap the digest is refused in one line that names the file
and the cap (a 64 GiB sparse ``x.c`` is refused from its size, before a byte is read).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

from agent.env.errors import EnvError

SOURCE_SUFFIXES = (".c", ".h", ".pyx", ".pxd", ".pxi", ".cpp", ".cc", ".cxx", ".hpp", ".hh")
MAX_SOURCE_FILES = 20_000
MAX_SOURCE_BYTES = 256 * 1024 * 1024  # in all
MAX_WALK_ENTRIES = 1_000_000  # files and folders looked at
BLOCK = 1 << 20
# Folders that hold no source of the project (version control, tool environments).
SKIPPED_FOLDERS = {".git", ".hg", ".svn", ".tox", ".nox", ".venv", "node_modules", "__pycache__"}


# What a compiler is given (headers and Cython declarations alone build nothing).
COMPILED_SUFFIXES = (".c", ".pyx", ".cpp", ".cc", ".cxx")


def compiled_sources(repo: Path) -> list[str]:
    """The repository's C/C++/Cython files a compiler would be given, relative, sorted (walked as the digest
    walks, with its caps)."""
    return [relative for relative, _ in _sources(repo, _Budget()) if relative.endswith(COMPILED_SUFFIXES)]


def source_digest(repo: Path) -> str:
    """sha256 over each source's path, size and bytes, in path order; EnvError (usage) past a cap."""
    digest = hashlib.sha256()
    budget = _Budget()
    for relative, path in _sources(repo, budget):
        _add(digest.update, relative, path, budget)
    return digest.hexdigest()


class _Budget:
    def __init__(self) -> None:
        self.files = 0
        self.bytes = 0
        self.entries = 0

    def spend_bytes(self, relative: str, size: int) -> None:
        self.bytes += size
        if self.bytes > MAX_SOURCE_BYTES:
            raise EnvError(f"C/Cython sources: {relative} ({size} bytes) takes them past {MAX_SOURCE_BYTES} bytes in "
                           "all, the most codebox digests (digest.MAX_SOURCE_BYTES); refused", usage=True)


def _sources(repo: Path, budget: _Budget) -> list[tuple[str, str]]:
    """(relative path, absolute path) of every source file, sorted; symlinks neither followed nor taken."""
    found: list[tuple[str, str]] = []
    root = str(repo.resolve())
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            budget.entries += 1
            if budget.entries > MAX_WALK_ENTRIES:
                raise EnvError(f"the repository has more than {MAX_WALK_ENTRIES} files and folders to look through "
                               "for C/Cython sources (digest.MAX_WALK_ENTRIES); refused", usage=True)
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED_FOLDERS:
                    pending.append(entry.path)
            elif entry.name.endswith(SOURCE_SUFFIXES) and entry.is_file(follow_symlinks=False):
                found.append((os.path.relpath(entry.path, root), entry.path))
                if len(found) > MAX_SOURCE_FILES:
                    raise EnvError(f"more than {MAX_SOURCE_FILES} C/Cython source files (digest.MAX_SOURCE_FILES); "
                                   "refused", usage=True)
    return sorted(found)


def _add(update: Callable[[bytes], object], relative: str, path: str, budget: _Budget) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise EnvError(f"C/Cython sources: {relative} cannot be read ({exc.strerror}); refused", usage=True) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return
        budget.spend_bytes(relative, info.st_size)  # before any byte is read: a sparse giant stops here
        update(relative.encode("utf-8", "surrogateescape") + b"\0" + str(info.st_size).encode() + b"\0")
        left = info.st_size
        while left > 0:
            block = os.read(fd, min(BLOCK, left))
            if not block:
                break
            update(block)
            left -= len(block)
        update(b"\0")
    finally:
        os.close(fd)
