"""Read a repository's declaration files defensively: inside the repo, bounded, UTF-8, shallow.

Every read opens the file once (the last component with ``O_NOFOLLOW``, after every symlink
on the way was resolved and checked to stay inside the repository), checks on the open file
that it is a regular file under the size cap, and reads at most that many bytes: a FIFO, a
device, a sparse 64 GiB file or a file that grows while it is read is never read whole.
"""

from __future__ import annotations

import configparser
import contextlib
import os
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.env.errors import EnvError

MAX_FILE_BYTES = 1_000_000  # no real pyproject / setup.cfg / requirements file comes near this
MAX_NESTING = 32  # tables and arrays inside each other
MAX_WALK_NODES = 200_000  # values visited when a parsed file is walked (shared parts count each time)
MAX_LISTED = 10_000  # entries taken from one folder listing (.git/refs/tags, src/)


def inside(repo: Path, relative: str) -> Path:
    """``repo / relative``, refused when it (or a symlink on the way) leaves the repository."""
    if "\0" in relative:
        raise EnvError(f"{relative!r}: a path with a NUL byte; refused", usage=True)
    path = (repo / relative).resolve()
    root = repo.resolve()
    if path != root and root not in path.parents:
        raise EnvError(f"{relative}: the path leaves the repository; refused", usage=True)
    return path


def _open(path: Path, relative: str) -> int | None:
    try:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        return None
    except OSError as exc:  # ELOOP: swapped for a symlink after it was resolved; EACCES, ...
        raise EnvError(f"{relative}: cannot be read ({exc.strerror}); refused", usage=True) from None


@contextlib.contextmanager
def _opened(path: Path, relative: str) -> Iterator[int | None]:
    """The open file's descriptor, None when there is no such file (or it is not a regular file)."""
    fd = _open(path, relative)
    if fd is None:
        yield None
        return
    try:
        yield fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    finally:
        os.close(fd)


def read_bytes(repo: Path, relative: str, limit: int = MAX_FILE_BYTES,
               what: str = "a declaration file") -> bytes | None:
    """The file's bytes, or None when it does not exist; EnvError (usage) past ``limit`` bytes."""
    with _opened(inside(repo, relative), relative) as fd:
        if fd is None:
            return None
        size = os.fstat(fd).st_size
        if size > limit:
            raise EnvError(f"{relative}: {size} bytes is too large for {what} (limit {limit}); refused", usage=True)
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:  # it grew while it was read
            raise EnvError(f"{relative}: more than {limit} bytes is too large for {what}; refused", usage=True)
        return b"".join(chunks)


def read_text(repo: Path, relative: str) -> str | None:
    """The file's text, or None when it does not exist; refuses huge or non-UTF-8 files."""
    data = read_bytes(repo, relative)
    if data is None:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise EnvError(f"{relative}: not UTF-8 text (byte {exc.start}); refused", usage=True) from None


def check_nesting(value: Any, where: str) -> None:
    """EnvError (usage) when ``value`` nests deeper than MAX_NESTING or is too big to walk."""
    budget = [MAX_WALK_NODES]
    _check(value, where, 0, budget)


def _check(value: Any, where: str, depth: int, budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise EnvError(f"{where}: more than {MAX_WALK_NODES} values; refused", usage=True)
    if depth > MAX_NESTING:
        raise EnvError(f"{where}: nested more than {MAX_NESTING} levels deep; refused", usage=True)
    if isinstance(value, dict):
        for item in value.values():
            _check(item, where, depth + 1, budget)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            _check(item, where, depth + 1, budget)


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """TOML text (a file's, or a string inside one) parsed; EnvError (usage) naming ``where``."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EnvError(f"{where}: not valid TOML ({exc})", usage=True) from None
    except RecursionError:
        raise EnvError(f"{where}: nested too deeply to parse; refused", usage=True) from None
    check_nesting(data, where)
    return data


def read_toml(repo: Path, relative: str) -> dict[str, Any] | None:
    text = read_text(repo, relative)
    return None if text is None else parse_toml(text, relative)


def parse_ini(text: str, where: str) -> configparser.ConfigParser:
    """INI text parsed with no interpolation; EnvError (usage) naming ``where`` and the first problem."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text, source=where)
    except configparser.Error as exc:
        first = str(exc).splitlines()[0]
        raise EnvError(f"{where}: not a valid INI file ({first})", usage=True) from None
    return parser


def read_ini(repo: Path, relative: str) -> configparser.ConfigParser | None:
    text = read_text(repo, relative)
    return None if text is None else parse_ini(text, relative)


def table(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``data[k1][k2]...`` when every step is a table, else an empty table."""
    current: Any = data
    for key in keys:
        current = current.get(key) if isinstance(current, dict) else None
    return current if isinstance(current, dict) else {}


def string_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise EnvError(f"{where}: expected a list of strings", usage=True)
    return list(value)
