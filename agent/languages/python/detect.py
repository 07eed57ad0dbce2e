"""Python's test detection: pytest, where the repository shows it (its settings, a conftest.py, test modules).

Only files are read (a few, each capped); nothing of the repository runs. The command is the
sandbox's ``python3 -m pytest -q``: the environment's Python, or the sandbox image's, with pytest.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

from agent.env.errors import EnvError
from agent.env.read.safe_read import read_bytes

PYTEST_COMMAND = ["python3", "-m", "pytest", "-q"]
_READ_CAP = 1 << 20  # a settings file larger than this is not read (a hostile repo's huge file)

# (file, the section that makes it pytest's settings, as said; None: the file alone does)
_SETTINGS: tuple[tuple[str, re.Pattern[str] | None, str], ...] = (
    ("pytest.ini", None, ""),
    (".pytest.ini", None, ""),
    ("pytest.toml", None, ""),
    (".pytest.toml", None, ""),
    ("pyproject.toml", re.compile(r"^\[tool\.pytest(\.ini_options)?\]", re.M), "[tool.pytest]"),
    ("setup.cfg", re.compile(r"^\[tool:pytest\]", re.M), "[tool:pytest]"),
    ("tox.ini", re.compile(r"^\[pytest\]", re.M), "[pytest]"),
)
_TEST_FOLDERS = ("tests", "test", "testing")
_TEST_FILE = re.compile(r"^(test_.*|.*_test)\.py$")


def pytest_evidence(repo: Path) -> str | None:
    """What shows that ``repo`` is tested with pytest (said to the user), or None."""
    settings = _pytest_settings(repo)
    if settings is not None:
        return settings.shown
    for folder in ("", *_TEST_FOLDERS):
        if _regular(repo / folder / "conftest.py"):
            return f"{folder}/conftest.py" if folder else "conftest.py"
    for folder in _TEST_FOLDERS:
        found = _a_test_file(repo / folder)
        if found:
            return f"{folder}/{found}"
    for package in _packages(repo):  # tests inside the package: simplejson/tests/, src/pkg/tests/
        for folder in _TEST_FOLDERS:
            found = _a_test_file(repo / package / folder, depth=1)
            if found:
                return f"{package}/{folder}/{found}"
    return _a_test_file(repo, depth=0)


def _packages(repo: Path, limit: int = 100) -> list[str]:
    """The repository's top-level folders and those under src/ (the first ``limit``, in name order)."""
    found: list[str] = []
    for parent in ("", "src"):
        if (repo / parent).is_symlink():
            continue
        try:
            entries = sorted(os.scandir(repo / parent), key=lambda e: e.name)
        except OSError:
            continue
        found += [os.path.join(parent, e.name) for e in entries
                  if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
                  and e.name not in (*_TEST_FOLDERS, "src")]
    return found[:limit]


def pytest_command(repo: Path) -> list[str]:
    """PYTEST_COMMAND, without its ``-q`` when the repository's pytest settings already give one in
    ``addopts``: cleo's ``addopts = "-q"`` plus ours is ``-qq``, and pytest then prints no counts."""
    settings = _pytest_settings(repo)
    addopts = _ADDOPTS.search(settings.body) if settings is not None else None
    quiet = addopts is not None and any(_QUIET.fullmatch(w) for w in re.findall(r"[-\w]+", addopts.group(1)))
    return [a for a in PYTEST_COMMAND if a != "-q"] if quiet else list(PYTEST_COMMAND)


class _Settings(NamedTuple):
    shown: str  # the file, and its section where the file is not pytest's alone
    body: str  # pytest's settings: the file's text from its section to the next


def _pytest_settings(repo: Path) -> _Settings | None:
    """The first of the repository's files that holds pytest's settings (_SETTINGS' order), or None."""
    for name, section, said in _SETTINGS:
        text = _small_text(repo, name)
        found = None if text is None or section is None else section.search(text)
        if text is None or (section is not None and found is None):
            continue
        body = text[found.end():] if found else text
        body = body[:m.start()] if (m := _NEXT_SECTION.search(body, 1)) else body  # pytest.ini: after [pytest]
        return _Settings(f"{name} {said}" if said else name, body)
    return None


_NEXT_SECTION = re.compile(r"^\[", re.M)
# addopts and its continuation lines (ini), or its TOML string or list
_ADDOPTS = re.compile(r"^addopts\s*=\s*((?:.*)(?:\n[ \t]+.*)*)", re.M)
_QUIET = re.compile(r"-q+|--quiet")


def lock_has_pytest(lock: str) -> bool:
    """Whether an environment's lock (``name==version ...`` a line) installs pytest."""
    return any(re.match(r"pytest\s*==", line.strip(), re.I) for line in lock.splitlines())


def _regular(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _small_text(repo: Path, name: str) -> str | None:
    """The file's text when it is a regular file under the cap (agent.env.read.safe_read: no FIFO, device or
    huge file; nothing outside the repository), and not a link."""
    if (repo / name).is_symlink():
        return None
    try:
        data = read_bytes(repo, name, limit=_READ_CAP, what="pytest's settings")
    except EnvError:  # too large, unreadable, or leaving the repository: not pytest's settings
        return None
    return None if data is None else data.decode("utf-8", "replace")


def _a_test_file(folder: Path, depth: int = 2) -> str | None:
    """A test module's path under ``folder`` (searched ``depth`` levels down, in name order), or None.
    A linked folder is not searched: it may lead out of the repository."""
    if folder.is_symlink():
        return None
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return None
    for entry in entries:
        if _TEST_FILE.match(entry.name) and entry.is_file(follow_symlinks=False):
            return entry.name
    if depth > 0:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                found = _a_test_file(Path(entry.path), depth - 1)
                if found:
                    return f"{entry.name}/{found}"
    return None
