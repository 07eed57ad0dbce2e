"""Read a repository's declaration files defensively: inside the repo, bounded, UTF-8, shallow."""

from __future__ import annotations

import configparser
import tomllib
from pathlib import Path
from typing import Any

from agent.env.errors import EnvError

MAX_FILE_BYTES = 1_000_000  # no real pyproject / setup.cfg / requirements file comes near this
MAX_NESTING = 32  # tables and arrays inside each other


def inside(repo: Path, relative: str) -> Path:
    """``repo / relative``, refused when it (or a symlink on the way) leaves the repository."""
    path = (repo / relative).resolve()
    root = repo.resolve()
    if path != root and root not in path.parents:
        raise EnvError(f"{relative}: the path leaves the repository; refused", usage=True)
    return path


def read_text(repo: Path, relative: str) -> str | None:
    """The file's text, or None when it does not exist; refuses huge or non-UTF-8 files."""
    path = inside(repo, relative)
    if not path.is_file():
        return None
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise EnvError(f"{relative}: {size} bytes is too large for a declaration file (limit {MAX_FILE_BYTES})",
                       usage=True)
    data = path.read_bytes()[:MAX_FILE_BYTES + 1]
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise EnvError(f"{relative}: not UTF-8 text (byte {exc.start}); refused", usage=True) from None


def check_nesting(value: Any, where: str, depth: int = 0) -> None:
    if depth > MAX_NESTING:
        raise EnvError(f"{where}: nested more than {MAX_NESTING} levels deep; refused", usage=True)
    if isinstance(value, dict):
        for item in value.values():
            check_nesting(item, where, depth + 1)
    elif isinstance(value, list):
        for item in value:
            check_nesting(item, where, depth + 1)


def read_toml(repo: Path, relative: str) -> dict[str, Any] | None:
    text = read_text(repo, relative)
    if text is None:
        return None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EnvError(f"{relative}: not valid TOML ({exc})", usage=True) from None
    except RecursionError:
        raise EnvError(f"{relative}: nested too deeply to parse; refused", usage=True) from None
    check_nesting(data, relative)
    return data


def read_ini(repo: Path, relative: str) -> configparser.ConfigParser | None:
    text = read_text(repo, relative)
    if text is None:
        return None
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text, source=relative)
    except configparser.Error as exc:
        first = str(exc).splitlines()[0]
        raise EnvError(f"{relative}: not a valid INI file ({first})", usage=True) from None
    return parser


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
