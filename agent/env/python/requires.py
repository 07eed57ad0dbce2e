"""A project's ``requires-python``, read as text (never run): from its folder, or from a commit without a checkout.

pyproject.toml's ``[project] requires-python``, else setup.cfg's ``[options] python_requires``, else a
string literal given to setup.py's ``python_requires=``. Anything unreadable says nothing (None): the
choice falls back to the date alone.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Callable
from pathlib import Path

from agent.env.errors import EnvError
from agent.env.read import safe_read
from agent.env.read.gitread import read_git

Reader = Callable[[str], str | None]
_GIT_TIMEOUT_S = 30
_MAX_BYTES = 1 << 20


def requires_python(read: Reader) -> str | None:
    """The first ``requires-python`` the project's files state, through ``read`` (a relative path's text)."""
    for find in (_pyproject, _setup_cfg, _setup_py):
        with contextlib.suppress(EnvError, ValueError, SyntaxError, RecursionError):
            found = find(read)
            if found:
                return found.strip()
    return None


def in_folder(repo: Path) -> Reader:
    """Read a worktree's files (no link leads out of it: safe_read)."""
    def read(name: str) -> str | None:
        try:
            return safe_read.read_text(repo, name)
        except (EnvError, OSError):
            return None
    return read


def at_commit(repo: Path, commit: str) -> Reader:
    """Read ``commit``'s files with ``git cat-file`` (a clone with no checkout is enough).

    The commit's top folder is listed once, on the first read: a file it does not hold is None with no
    git process. The choice asks for up to eight files of which a repository has two or three, for each
    instance of a dataset before the first one starts (eight git processes became two or three)."""
    top: set[str] | None = None  # the names in the commit's top folder; empty when git could not list it

    def listed(name: str) -> bool:
        nonlocal top
        if top is None:
            names = read_git(repo, "ls-tree", "--name-only", "-z", commit, timeout_s=_GIT_TIMEOUT_S)
            top = set(names.decode("utf-8", "surrogateescape").split("\0")) - {""} if names else set()
        return not top or "/" in name or name in top  # no listing: every name is asked for

    def read(name: str) -> str | None:
        if not listed(name):
            return None
        data = read_git(repo, "cat-file", "-p", f"{commit}:{name}", timeout_s=_GIT_TIMEOUT_S)
        if data is None or len(data) > _MAX_BYTES:
            return None
        return data.decode("utf-8", "replace")
    return read


def _pyproject(read: Reader) -> str | None:
    text = read("pyproject.toml")
    if text is None:
        return None
    value = safe_read.table(safe_read.parse_toml(text, "pyproject.toml"), "project").get("requires-python")
    return value if isinstance(value, str) else None


def _setup_cfg(read: Reader) -> str | None:
    text = read("setup.cfg")
    if text is None:
        return None
    parser = safe_read.parse_ini(text, "setup.cfg")
    return parser.get("options", "python_requires", fallback=None)


def _setup_py(read: Reader) -> str | None:
    text = read("setup.py")
    if text is None:
        return None
    for node in ast.walk(ast.parse(text)):
        if (isinstance(node, ast.keyword) and node.arg == "python_requires"
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return node.value.value
    return None
