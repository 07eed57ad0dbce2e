"""Resolve a path from the model under the repository root, or refuse it.

Rules:
- a NUL byte, an empty path and an absolute path are refused;
- components are walked as the kernel does: every symlink met must resolve
  inside the root (a link to /etc, or to a directory outside, is refused even
  when the rest of the path would not exist), and ``..`` goes up from the
  real directory reached so far, never above the root;
- the result is the real path (all symlinks resolved), which is what the tool
  then opens, so what is checked is what is used;
- a link that cannot be followed (e.g. /proc/1/cwd: permission denied) and a
  path that resolves into /proc, /sys or /dev get the same refusal as any
  other escape, never an internal error.
"""

from __future__ import annotations

import os
from collections import namedtuple

from sandbox.tools import ToolError


class Resolved(namedtuple("Resolved", "abs rel")):
    """A path the model named, checked: ``abs`` is the real absolute path, inside the root;
    ``rel`` the same relative to the root, "/"-separated ("." for the root)."""

    __slots__ = ()
    abs: str
    rel: str


def display(path: str) -> str:
    """A path as safe text: undecodable bytes (surrogate escapes) become U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def inside(path: str, root: str) -> bool:
    if root == "/":
        return path.startswith("/")
    return path == root or path.startswith(root + "/")


PSEUDO_FS = ("/proc", "/sys", "/dev")


def _escape(user_path: str, why: str) -> ToolError:
    return ToolError(f"path escapes the repository: {display(user_path)!r} ({why})")


def _pseudo_fs(path: str) -> str:
    return next((p for p in PSEUDO_FS if inside(path, p)), "")


def resolve(root: str, user_path: str) -> Resolved:
    """``root`` must already be a real absolute path (os.path.realpath)."""
    try:
        return _resolve(root, user_path)
    except OSError as e:  # a link the kernel will not read for us: treated as leaving the root
        raise _escape(user_path, f"a symlink in it cannot be followed: {e.strerror or e}") from None


def _resolve(root: str, user_path: str) -> Resolved:
    if "\x00" in user_path:
        raise ToolError("path contains a NUL byte")
    if user_path.strip() == "":
        raise ToolError("path is empty; use '.' for the repository root")
    if os.path.isabs(user_path) or user_path.startswith("\\"):
        hint = ""
        if inside(user_path, root) and user_path != root:
            hint = f"; did you mean {os.path.relpath(user_path, root)!r}?"
        raise ToolError(
            f"path escapes the repository: {display(user_path)!r} is absolute; "
            f"paths are relative to the repository root{hint}"
        )

    # Walk the components as the kernel would: a symlink is replaced by its real
    # target (refused if that is outside), ".." goes up from the real directory.
    cur = root
    walked: list[str] = []
    for comp in user_path.split("/"):
        if comp in ("", "."):
            continue
        walked.append(comp)
        if comp == "..":
            if cur == root:
                raise ToolError(f"path escapes the repository: {display(user_path)!r} climbs above the root")
            cur = os.path.dirname(cur)
            continue
        nxt = os.path.join(cur, comp)
        if os.path.islink(nxt):
            real = os.path.realpath(nxt)
            if not inside(real, root) or _pseudo_fs(real):
                link = "/".join(walked)
                where = f"into {_pseudo_fs(real)}" if _pseudo_fs(real) else "outside the repository"
                raise _escape(user_path, f"the symlink {display(link)!r} points {where}")
            nxt = real
        cur = nxt

    final = os.path.realpath(cur)
    if not inside(final, root) or _pseudo_fs(final):  # defensive: the walk above should have caught it
        raise _escape(user_path, "it resolves outside the repository")
    rel = "." if final == root else os.path.relpath(final, root).replace(os.sep, "/")
    return Resolved(final, rel)
