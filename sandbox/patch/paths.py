"""Patch paths: the relative form the engine resolves, and the rules a path must pass before any lookup."""

from __future__ import annotations

import os
import re

from sandbox.patch.errors import OUTSIDE_ROOT, rejected

_WINDOWS_ABSOLUTE = re.compile(r"^[A-Za-z]:[\\/]")


def normalize_path(path: str) -> str:
    """The relative form of a patch path (``./a//b`` -> ``a/b``), or :class:`PatchError`.

    Refused: empty paths, absolute paths, ``..`` components, ``~``, and any ``.git``
    component (any letter case). Symlinks are checked when the patch is applied.
    """
    if not path.strip():
        raise rejected("patch rejected: a file path is empty.")
    if "\x00" in path:
        raise rejected("patch rejected: the path %r contains a NUL character." % path)
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise rejected("patch rejected: the path %r is not valid UTF-8 text." % path) from None
    if path.startswith(("/", "\\")) or _WINDOWS_ABSOLUTE.match(path):
        raise rejected(
            "%s. '%s' is an absolute path; use a path relative to the repository root." % (OUTSIDE_ROOT, path)
        )
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise rejected(
            "%s. '%s' has a '..' component; paths must stay under the repository root." % (OUTSIDE_ROOT, path)
        )
    if parts and parts[0].startswith("~"):
        raise rejected(
            "%s. '%s' points into a home directory; use a path relative to the repository root." % (OUTSIDE_ROOT, path)
        )
    if not parts:
        raise rejected("patch rejected: '%s' does not name a file under the repository root." % path)
    if any(part.lower() == ".git" for part in parts):
        raise rejected("patch rejected: '%s' is inside .git, which apply_patch never writes." % path)
    return "/".join(parts)


def is_within(root: str, path: str) -> bool:
    """Whether ``path`` is ``root`` or under it (both absolute, symlinks already resolved)."""
    try:
        return os.path.commonpath([root, path]) == root
    except ValueError:
        return False
