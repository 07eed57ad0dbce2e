"""The files that declare a project's dependencies as they were at another commit, read from git's objects.

SWE-bench builds a row's dependency environment at its ``environment_setup_commit`` (one commit per
repository and version, shared by all the rows of that version: its env images), and installs the
repository itself at the row's base commit. codebox does the same: the declarations are read from a
folder this module writes from the commit's blobs (``git ls-tree`` and ``git cat-file --batch``: raw
objects, so no filter, hook or attribute of the repository's configuration runs, and the source is
never written), while the project itself is read and built from the row's workspace.

Only what a declaration reader can open is written: the files at the top and one folder down
(pyproject.toml, setup.py, tox.ini, ``requirements/*.txt``, a package's ``__init__.py``), and any path
that names requirements or constraints (a ``-r ci/requirements/py39.txt`` include), each at most
``MAX_FILE_BYTES``. The folder is kept in codebox's cache under the commit's full hash: the rows of a
version read one folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from agent.env.read.candidates import PROJECT_ONLY, dedupe
from agent.env.read.declared import Declared
from agent.env.read.gitread import read_git

MAX_FILE_BYTES = 1 << 20
MAX_FILES = 5000
_GIT_TIMEOUT_S = 60
_HASH = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_NAMED = re.compile(r"requirement|constraint", re.IGNORECASE)
_DONE = ".codebox-complete"


def full_commit(source: Path, commit: str) -> str | None:
    """``commit``'s full hash in ``source`` (a work tree or a bare repository), None when it is not there."""
    if not commit or commit.startswith("-"):
        return None
    out = read_git(source, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", timeout_s=_GIT_TIMEOUT_S)
    text = out.decode("ascii", "replace").strip() if out else ""
    return text if _HASH.match(text) else None


def wanted(path: str) -> bool:
    """Whether a declaration reader may open ``path`` (a path inside the repository, '/'-separated)."""
    return path.count("/") <= 1 or _NAMED.search(path) is not None


def declarations_at(source: Path, commit: str, cache: Path) -> Path | None:
    """A folder holding ``source``'s declaration files at ``commit`` (kept under ``cache``); None when the
    commit is not in ``source`` or git cannot list it."""
    full = full_commit(source, commit)
    if full is None:
        return None
    folder = cache / "setup-trees" / full
    if (folder / _DONE).is_file():
        return folder
    listing = read_git(source, "ls-tree", "-r", "-z", "-l", "--full-tree", full, timeout_s=_GIT_TIMEOUT_S)
    if listing is None:
        return None
    entries = _entries(listing)
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{full[:12]}-", dir=folder.parent))
    try:
        if not _write(source, entries, partial):
            return None
        (partial / _DONE).write_text(f"{full}\n", encoding="ascii")
        try:
            partial.rename(folder)
        except OSError:  # another process wrote it first: theirs is the same
            if not (folder / _DONE).is_file():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return folder


def _entries(listing: bytes) -> list[tuple[str, str, str]]:
    """(mode, object, path) of each regular file or link ``wanted``, within the caps."""
    found = []
    for record in listing.split(b"\0"):
        meta, _, raw = record.partition(b"\t")
        parts = meta.split()
        if len(parts) != 4 or parts[1] != b"blob":
            continue  # a submodule (commit) or an empty record
        path = raw.decode("utf-8", "surrogateescape")
        size = parts[3].decode()
        mode = parts[0].decode()
        if mode not in ("100644", "100755", "120000") or not size.isdigit() or int(size) > MAX_FILE_BYTES:
            continue
        if wanted(path) and _safe(path):
            found.append((mode, parts[2].decode(), path))
    return found[:MAX_FILES]


def _safe(path: str) -> bool:
    parts = path.split("/")
    return all(p not in ("", ".", "..", ".git") for p in parts)


def _write(source: Path, entries: list[tuple[str, str, str]], dest: Path) -> bool:
    """Each entry's blob, read with one `git cat-file --batch`, written under ``dest``."""
    if not entries:
        return True
    request = "".join(f"{obj}\n" for _, obj, _ in entries).encode()
    try:
        proc = subprocess.run(["git", "-c", "core.fsmonitor=false", "cat-file", "--batch"], cwd=source,
                              input=request, capture_output=True, timeout=_GIT_TIMEOUT_S,
                              env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"})
    except (OSError, subprocess.TimeoutExpired):
        return False
    if proc.returncode != 0:
        return False
    data, at = proc.stdout, 0
    for mode, obj, path in entries:
        end = data.index(b"\n", at)
        header = data[at:end].split()
        if len(header) != 3 or header[0].decode() != obj:
            return False
        size = int(header[2])
        blob = data[end + 1:end + 1 + size]
        at = end + 1 + size + 1  # the blob, then a newline
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            os.symlink(blob.decode("utf-8", "surrogateescape"), target)
        else:
            target.write_bytes(blob)
    return True


def with_dependencies_of(base: Declared, setup: Declared, commit: str) -> Declared:
    """``base`` (the project at the row's base commit) with the environments ``setup`` declares (the same project
    at ``commit``): each of setup's candidates, plus any of the base's own requirements it does not name (the base
    is installed on top, as SWE-bench's `pip install -e .` adds what its setup.py asks for); the project itself,
    its build and its sources, the base's."""
    if not setup.candidates:
        return base.model_copy(update={"notes": [*base.notes, f"environment_setup_commit {commit[:10]} declares "
                                                 "no dependencies: the base commit's declarations are used"]})
    own = base.candidates[-1].requirements if base.candidates and base.candidates[-1].rank == PROJECT_ONLY else []
    candidates = []
    for candidate in setup.candidates:
        names = {r.name for r in candidate.requirements}
        added = [r for r in own if r.name not in names]
        candidates.append(candidate.model_copy(update={"requirements": [*candidate.requirements, *added]}))
    requirements = dedupe([r for c in candidates for r in c.requirements])
    shown = ", ".join(setup.files[:6]) + (", ..." if len(setup.files) > 6 else "")
    note = (f"dependencies declared at environment_setup_commit {commit[:10]} ({shown or 'no file'}), shared by the "
            "rows of its version; the project itself is installed from the base commit")
    return base.model_copy(update={
        "requirements": requirements, "candidates": candidates,
        "files": [*base.files, *(f"{f}@{commit[:10]}" for f in setup.files)],
        "notes": [*base.notes, note, *(f"at {commit[:10]}: {n}" for n in setup.notes if n not in base.notes)],
        "sources": [*base.sources, *(s for s in setup.sources if s not in base.sources)],
    })
