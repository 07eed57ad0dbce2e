"""The pure-Python search engine, for a sandbox without ripgrep: the same results as rg.

``python_search`` walks the tree in rg's order (``--sort path``), with rg's rules (hidden files
searched, ``.git`` and symlinks not followed, globs with gitignore syntax via GlobSet), and reads
each file's lines as ``rg --binary`` does (a NUL ends a line in a file found by the walk).
"""

from __future__ import annotations

import os
import re
import time

from sandbox.tools.globs import GlobSet
from sandbox.tools.paths import display
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
            elif e.stat(follow_symlinks=False).st_size > MAX_FILE_BYTES:
                skipped.large.append(display(child))
            else:
                yield e.path, child
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


def _search_file(
    path: str,
    needle: bytes,
    pattern: Optional[re.Pattern[str]],
    skipped: Skipped,
    binary: List[bool],
    split_nul: bool,
) -> Iterator[tuple[int, str]]:
    """(line number, text) of each matching line."""
    with open(path, "rb") as f:
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

