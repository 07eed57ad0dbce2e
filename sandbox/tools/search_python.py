"""The pure-Python search engine: the same results as rg, for a sandbox without ripgrep, and for
literal searches under gVisor (``--search-engine literal``), where starting rg costs more than the
whole walk.

``python_search`` walks the tree in rg's order (``--sort path``), with rg's rules (hidden files
searched, ``.git`` and symlinks not followed, globs with gitignore syntax via GlobSet), and reads
each file's lines as ``rg --binary`` does (a NUL ends a line in a file found by the walk).

Few system calls per file (each one is a trip through gVisor's user-space kernel): the walk
takes the kind of each entry from the directory listing, and a file is opened, read whole in
one ``read`` when it is under FIRST_READ bytes, and closed; a literal query that is not in those
bytes needs nothing more (it holds no newline nor NUL, so it cannot span lines). Only a bigger
file is asked its size (over MAX_FILE_BYTES: not searched) and read line by line.
"""

from __future__ import annotations

import io
import os
import re
import time

from sandbox.tools.globs import GlobSet
from sandbox.tools.paths import FILE_FLAGS, display
from sandbox.tools.search_found import MAX_FILE_BYTES, MAX_LINE_BYTES, Match, Skipped, clean_line

# Not `from typing import ...` at run time (a first search would pay ~3 ms for it).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator, List, Optional


def _walk(root: str, rel: str, globs: GlobSet, skipped: Skipped) -> Iterator[tuple[str, str]]:
    """(absolute path, path relative to root) of the files to search, in rg's order."""
    base = root if rel == "." else os.path.join(root, rel)
    try:
        with os.scandir(base) as it:
            entries = sorted(it, key=lambda e: os.fsencode(e.name))
    except OSError:
        return
    for e in entries:
        child = e.name if rel == "." else rel + "/" + e.name
        try:
            if e.is_dir(follow_symlinks=False):
                if globs.allow_dir(child):
                    yield from _walk(root, child, globs, skipped)
            elif not globs.allow_file(child):
                continue
            elif e.is_symlink():
                if not os.path.isdir(e.path):  # rg passes over links to directories without a word
                    skipped.links.append(display(child))
            elif not e.is_file(follow_symlinks=False):
                skipped.special.append(display(child))
            else:
                yield e.path, child  # its size is looked at only if it is big (_search_file)
        except OSError:
            continue


def python_search(
    root: str,
    rel: str,
    is_file: bool,
    query: str,
    regex: bool,
    globs: GlobSet,
    limit: int,
    deadline: float,
    skipped: Skipped,
) -> tuple[list[Match], bool, bool]:
    """(matches, more exist, timed out)."""
    pattern = re.compile(query) if regex else None
    needle = query.encode("utf-8", "surrogateescape")
    files: Iterator[tuple[str, str]]
    files = iter([(os.path.join(root, rel), rel)]) if is_file else _walk(root, rel, globs, skipped)
    found: list[Match] = []
    for abs_path, rel_path in files:
        if time.monotonic() > deadline:
            return found, False, True
        shown = display(rel_path)
        binary: List[bool] = []
        had = len(found)
        try:
            hits = _search_file(abs_path, needle, pattern if regex else None, skipped, binary, not is_file)
            for lineno, text in hits:
                if len(found) >= limit:
                    return found, True, False
                found.append(Match(shown, lineno, text))
                if time.monotonic() > deadline:
                    return found, False, True
        except _TooLarge:
            skipped.large.append(shown)
        except OSError:
            continue
        finally:
            if binary and len(found) > had:
                skipped.note_binary(shown)
    return found, False, False


def _file_lines(f: Any, skipped: Skipped, binary: List[bool], split_nul: bool) -> Iterator[bytes]:
    """The lines as rg --binary sees them: a NUL byte makes ``binary`` non-empty and, in a file
    found by the walk (``split_nul``), ends a line too; rg keeps the NULs of a file named
    explicitly. Over-long lines are skipped and counted (b"" in their place)."""
    while True:
        raw = f.readline(MAX_LINE_BYTES)
        if not raw:
            return
        if not raw.endswith(b"\n") and len(raw) == MAX_LINE_BYTES:
            skipped.long_lines += 1
            while True:  # over-long line: skip the rest of it
                more = f.readline(1 << 20)
                if not more or more.endswith(b"\n"):
                    break
            yield b""  # it still counts as a line
            continue
        if b"\x00" in raw:
            if not binary:
                binary.append(True)
            if not split_nul:
                yield raw
                continue
            parts = raw.split(b"\x00")
            for part in parts[:-1]:
                yield part + b"\n"
            if parts[-1]:
                yield parts[-1]
            continue
        yield raw


FIRST_READ = 1 << 16  # a file under this is read whole, in one read() (a bigger buffer is mmap'ed: 3 calls more)


class _TooLarge(Exception):
    """The file is over MAX_FILE_BYTES: not searched (named in the result)."""


def _search_file(
    path: str,
    needle: bytes,
    pattern: Optional[re.Pattern[str]],
    skipped: Skipped,
    binary: List[bool],
    split_nul: bool,
) -> Iterator[tuple[int, str]]:
    """(line number, text) of each matching line; _TooLarge for a file over MAX_FILE_BYTES.

    Opened as read_file opens: a FIFO or a link put there since the walk neither blocks nor is
    followed."""
    fd = os.open(path, FILE_FLAGS)
    try:
        data = os.read(fd, FIRST_READ)
        if len(data) < FIRST_READ:  # a short read of a regular file: its end
            if pattern is None and needle not in data:
                return
            yield from _matches(io.BytesIO(data), needle, pattern, skipped, binary, split_nul)
            return
        if os.fstat(fd).st_size > MAX_FILE_BYTES:
            raise _TooLarge()
        os.lseek(fd, 0, os.SEEK_SET)
        with os.fdopen(fd, "rb", closefd=False) as f:
            yield from _matches(f, needle, pattern, skipped, binary, split_nul)
    finally:
        os.close(fd)


def _matches(
    f: Any,
    needle: bytes,
    pattern: Optional[re.Pattern[str]],
    skipped: Skipped,
    binary: List[bool],
    split_nul: bool,
) -> Iterator[tuple[int, str]]:
    for lineno, raw in enumerate(_file_lines(f, skipped, binary, split_nul), 1):
        if not raw:
            continue
        if pattern is not None:
            # match the line without its "\n" but with any "\r", as rg does
            text = raw[:-1] if raw.endswith(b"\n") else raw
            if pattern.search(text.decode("utf-8", "replace")) is not None:
                yield lineno, clean_line(raw)
        elif needle in raw:
            yield lineno, clean_line(raw)
