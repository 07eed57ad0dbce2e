"""Patch paths: the relative form the engine resolves, and the rules a path must pass before any lookup."""

from __future__ import annotations

import os
import re
from typing import List, Optional

from sandbox.patch.errors import OUTSIDE_ROOT, rejected

_WINDOWS_ABSOLUTE = re.compile(r"^[A-Za-z]:[\\/]")


# The reasons path_problem gives; the host's policy shows them as they are.
EMPTY = "empty path or NUL byte"
NOT_UTF8 = "not valid UTF-8 text"
ABSOLUTE = "absolute path"
PARENT = "'..' in path"
HOME = "path into a home directory"
ROOT = "path names the repository root"
GIT = ".git is never writable"


def path_parts(path: str) -> List[str]:
    """A relative path's components, without empty and ``.`` ones."""
    return [part for part in path.split("/") if part not in ("", ".")]


def path_problem(path: str) -> Optional[str]:
    """Why a repository-relative path may never be written, or None: the one rule the host's
    policy and this engine share (the policy adds its own stricter ones; the engine checks
    symlinks against the real tree when it applies)."""
    if not path.strip() or "\x00" in path:
        return EMPTY
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return NOT_UTF8
    if path.startswith(("/", "\\")) or _WINDOWS_ABSOLUTE.match(path):
        return ABSOLUTE
    parts = path_parts(path)
    if ".." in parts:
        return PARENT
    if parts and parts[0].startswith("~"):
        return HOME
    if not parts:
        return ROOT
    if any(part.lower() == ".git" for part in parts):
        return GIT
    return None


def normalize_path(path: str) -> str:
    """The relative form of a patch path (``./a//b`` -> ``a/b``), or :class:`PatchError`.

    Refused (``path_problem``): empty paths, absolute paths, ``..`` components, ``~``, and
    any ``.git`` component (any letter case). Symlinks are checked when the patch is applied.
    """
    problem = path_problem(path)
    if problem is None:
        return "/".join(path_parts(path))
    if problem == EMPTY:
        detail = "a file path is empty" if not path.strip() else "the path %r contains a NUL character" % path
        raise rejected("patch rejected: %s." % detail)
    messages = {
        NOT_UTF8: "patch rejected: the path %r is not valid UTF-8 text." % path,
        ABSOLUTE: "%s. '%s' is an absolute path; use a path relative to the repository root." % (OUTSIDE_ROOT, path),
        PARENT: "%s. '%s' has a '..' component; paths must stay under the repository root." % (OUTSIDE_ROOT, path),
        HOME: "%s. '%s' points into a home directory; use a path relative to the repository root."
        % (OUTSIDE_ROOT, path),
        ROOT: "patch rejected: '%s' does not name a file under the repository root." % path,
        GIT: "patch rejected: '%s' is inside .git, which apply_patch never writes." % path,
    }
    raise rejected(messages[problem])


def is_within(root: str, path: str) -> bool:
    """Whether ``path`` is ``root`` or under it (both absolute, symlinks already resolved)."""
    try:
        return os.path.commonpath([root, path]) == root
    except ValueError:
        return False
