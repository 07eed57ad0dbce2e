"""A repository's git submodules in a workspace: filled from the source's own clone of each, at the commit the
superproject records.

A user's clone made with ``--recurse-submodules`` (or ``git submodule update --init``) holds each submodule's
repository in ``.git/modules/<name>`` (older git: ``<path>/.git``); astropy 1.3 builds through its
``astropy_helpers`` submodule, whose bootstrap would download it otherwise, which an offline build cannot. The
workspace's checkout (``read-tree``) leaves a submodule an empty folder, so each one the source has at the
recorded commit is checked out into that folder, through a throwaway clone sharing its objects (git runs with
codebox's settings and a fresh configuration, never the submodule's own). A submodule the source does not hold
(a bare mirror, a clone made without them) stays empty, as git leaves it, and is named when a build fails
(agent/env/install/tree.py).
Nested submodules are not followed.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Git = Callable[..., subprocess.CompletedProcess[bytes]]
GITLINK = "160000"


@dataclass(frozen=True)
class Submodule:
    path: str  # relative to the repository's top
    commit: str  # the commit the superproject records
    filled: bool  # checked out from the source's clone of it


def gitlinks(git: Git, path: Path) -> list[tuple[str, str]]:
    """(path, commit) of every submodule in the workspace's index."""
    listed = git("ls-files", "-s", "-z", cwd=path).stdout.decode("utf-8", "surrogateescape")
    found = []
    for entry in listed.split("\0"):
        head, _, name = entry.partition("\t")
        parts = head.split()
        if len(parts) == 3 and parts[0] == GITLINK:
            found.append((name, parts[1]))
    return found


def _names(git: Git, path: Path) -> dict[str, str]:
    """``.gitmodules``' submodule name for each path (the name is where git keeps it under .git/modules)."""
    if not (path / ".gitmodules").is_file():
        return {}
    proc = git("config", "--file", ".gitmodules", "-z", "--get-regexp", r"^submodule\..*\.path$", cwd=path,
               check=False)
    names = {}
    for record in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        key, _, value = record.partition("\n")
        if key.startswith("submodule.") and key.endswith(".path") and value:
            names[value] = key[len("submodule."):-len(".path")]
    return names


def _within(folder: Path, root: Path) -> bool:
    try:
        return folder.resolve().is_relative_to(root.resolve())
    except OSError:
        return False


def _holder(git: Git, source: Path, git_dir: Path, name: str, relative: str, commit: str,
            timeout: float) -> Path | None:
    """The source's repository of one submodule that has ``commit``: .git/modules/<name>, else <path>/.git."""
    for candidate, root in ((git_dir / "modules" / name, git_dir), (source / relative, source)):
        if not candidate.is_dir() or not _within(candidate, root):
            continue
        if root == source and not (candidate / ".git").exists():
            continue
        found = git("cat-file", "-e", f"{commit}^{{commit}}", cwd=candidate, check=False, timeout=timeout)
        if found.returncode == 0:
            return candidate
    return None


def fill(git: Git, source: Path, bare: bool, path: Path, timeout: float) -> list[Submodule]:
    """Check out each submodule of the workspace ``path`` the source (a bare repository, or a work tree) holds
    (see the module docstring)."""
    if not (path / ".gitmodules").is_file():  # no submodule git would know how to check out: no git call at all
        return []
    links = gitlinks(git, path)
    if not links:
        return []
    git_dir = source if bare else Path(git("rev-parse", "--absolute-git-dir", cwd=source, timeout=timeout)
                                       .stdout.decode("utf-8", "surrogateescape").strip())
    names = _names(git, path)
    done = []
    for relative, commit in links:
        holder = _holder(git, source, git_dir, names.get(relative, relative), relative, commit, timeout)
        dest = path / relative
        if holder is None or dest.is_symlink() or not _within(dest, path):
            done.append(Submodule(relative, commit, filled=False))
            continue
        dest.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="codebox-submodule-"))
        try:
            git("clone", "--quiet", "--shared", "--no-checkout", "--", str(holder), str(scratch / "c"), cwd=scratch,
                timeout=timeout)
            git(f"--git-dir={scratch / 'c' / '.git'}", f"--work-tree={dest}", "read-tree", "--reset", "-u", commit,
                cwd=scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        done.append(Submodule(relative, commit, filled=True))
    return done

