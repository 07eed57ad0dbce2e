"""Resolve a path from the model under the repository root, or refuse it.

Rules:
- a NUL byte, an empty path and an absolute path are refused;
- components are walked as the kernel does: every symlink met must resolve
  inside the root (a link to /etc, or to a directory outside, is refused even
  when the rest of the path would not exist), and ``..`` goes up from the
  real directory reached so far, never above the root;
- the result is the real path (all symlinks resolved), relative to the root;
- a link that cannot be followed (e.g. /proc/1/cwd: permission denied) and a
  path that resolves into /proc, /sys or /dev get the same refusal as any
  other escape, never an internal error.

The walk holds a descriptor per directory and opens each component relative to the one before
with ``O_NOFOLLOW``: a symlink is never followed by the kernel but read here and checked, so
nothing swapped into the path after a check can lead the walk (or the file ``open_file``
opens) outside the root. A component costs one ``openat`` and one ``close``; under gVisor every
system call is a trip through its user-space kernel, so none is repeated (no realpath, no stat
of what was walked already).
"""

from __future__ import annotations

import errno
import os
import stat
from collections import namedtuple

from sandbox.tools import ToolError

# Not `from typing import ...` at run time (a first call would pay ~3 ms for it).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Optional


class Resolved(namedtuple("Resolved", "abs rel")):
    """A path the model named, checked: ``abs`` is the real absolute path, inside the root;
    ``rel`` the same relative to the root, "/"-separated ("." for the root)."""

    __slots__ = ()
    abs: str
    rel: str


class Found(namedtuple("Found", "abs rel st fd error")):
    """What ``find`` found: the checked path as in Resolved; ``st`` its os.stat_result (None when
    it does not exist or cannot be looked at: ``error`` says why); ``fd`` the file opened for
    reading when asked and it is a regular file, else -1 (the caller closes it)."""

    __slots__ = ()
    abs: str
    rel: str
    st: Optional[os.stat_result]
    fd: int
    error: Optional[OSError]


def display(path: str) -> str:
    """A path as safe text: undecodable bytes (surrogate escapes) become U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def inside(path: str, root: str) -> bool:
    if root == "/":
        return path.startswith("/")
    return path == root or path.startswith(root + "/")


PSEUDO_FS = ("/proc", "/sys", "/dev")
MAX_LINKS = 40  # as the kernel's ELOOP limit
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# A directory is only walked through: O_PATH needs no read permission (as the kernel's own walk)
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC
# A file opened for reading: a FIFO must not block the open, a tty must not become ours
FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | _NOFOLLOW | _CLOEXEC


def open_root(root: str) -> int:
    """A descriptor of the root to walk from (the server keeps one: Context.root_fd)."""
    return os.open(root, _DIR_FLAGS & ~_NOFOLLOW)


def _escape(user_path: str, why: str) -> ToolError:
    return ToolError(f"path escapes the repository: {display(user_path)!r} ({why})")


def _pseudo_fs(path: str) -> str:
    return next((p for p in PSEUDO_FS if inside(path, p)), "")


def resolve(root: str, user_path: str, root_fd: int = -1) -> Resolved:
    """``root`` must already be a real absolute path (os.path.realpath); ``root_fd`` an open
    descriptor of it (open_root), or -1 to open one for this call."""
    found = find(root, user_path, root_fd)
    return Resolved(found.abs, found.rel)


def find(root: str, user_path: str, root_fd: int = -1, open_file: bool = False) -> Found:
    """The path checked as ``resolve`` does, and what it names looked at (a last link is walked,
    not followed by the kernel); with ``open_file`` the look is an open (FILE_FLAGS), kept when it
    is a regular file."""
    _check_syntax(root, user_path)
    own_root = root_fd < 0
    if own_root:
        root_fd = open_root(root)
    try:
        direct = _open_direct(root, root_fd, user_path) if open_file else None
        return direct or _walk(root, root_fd, user_path, open_file)
    finally:
        if own_root:
            os.close(root_fd)


def _open_direct(root: str, root_fd: int, user_path: str) -> Optional[Found]:
    """The common case in fewer system calls: a path with no '..' whose names are all real is
    opened by the kernel in one ``openat`` (O_NOFOLLOW for the last name). The kernel then says
    where the opened file is (/proc/self/fd): exactly the root plus the path means no link was
    crossed and the file is inside. Anything else (a link on the way, even a swapped-in one, a
    directory, a missing name, no /proc) closes it, and the careful walk decides: None."""
    names = [c for c in user_path.split("/") if c not in ("", ".")]
    if not names or ".." in names:
        return None
    rel = "/".join(names)
    try:
        fd = os.open(rel, FILE_FLAGS, dir_fd=root_fd)
    except OSError:
        return None
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    expected = os.path.join(root, rel)
    if where != expected or not stat.S_ISREG(st.st_mode) or _pseudo_fs(where):
        os.close(fd)
        return None
    return Found(expected, rel, st, fd, None)


def _walk(root: str, root_fd: int, user_path: str, open_file: bool) -> Found:
    walk = _Walker(root, root_fd)
    walked: list[str] = []
    link = ""  # the path named so far up to the name being entered: a link there is named so
    try:
        try:
            for comp in user_path.split("/"):
                if comp in ("", "."):
                    continue
                link = "/".join(walked)
                walked.append(comp)
                if comp != "..":
                    walk.down(comp)
                elif not walk.up():
                    raise ToolError(f"path escapes the repository: {display(user_path)!r} climbs above the root")
            link = "/".join(walked)
            walk.settle(open_file)
        except _Escape as e:
            raise _escape(user_path, f"the symlink {display(link)!r} points {e.args[0]}") from None
        except OSError as e:  # a link the kernel will not read for us: treated as leaving the root
            raise _escape(user_path, f"a symlink in it cannot be followed: {e.strerror or e}") from None
        return walk.found(user_path)
    finally:
        walk.close()


def _check_syntax(root: str, user_path: str) -> None:
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


class _Escape(Exception):
    """The walk left the root through a link: ``args[0]`` says where to."""


class _Walker:
    """Where the walk is: the real names from the root, and a descriptor for each directory
    among them. The last name may be *pending*: named, not yet looked at (a file, a directory,
    a link or nothing), until the next step enters it or ``settle`` looks at it."""

    def __init__(self, root: str, root_fd: int) -> None:
        self.root = root
        self.fds = [root_fd]  # fds[i] is the directory names[:i]; fds[0] is the caller's
        self.names: List[str] = []
        self.pending = False
        self.st: Optional[os.stat_result] = None  # of the pending name, once settled
        self.error: Optional[OSError] = None  # a name was missing or unreadable: the rest is only names
        self.links = 0
        self.fd = -1  # the file opened by settle(open_file=True)

    def abs(self) -> str:
        return os.path.join(self.root, *self.names) if self.names else self.root

    def down(self, comp: str) -> None:
        """Enter the pending name as a directory, then name ``comp`` (pending)."""
        self._enter()
        self.names.append(comp)
        self.pending = self.error is None
        where = _pseudo_fs(self.abs())
        if where:
            raise _Escape(f"into {where}")

    def up(self) -> bool:
        """``..`` from the real directory reached (a pending link is followed first); False at the root."""
        self._enter()
        if not self.names:
            return False
        if len(self.fds) - 1 == len(self.names):
            os.close(self.fds.pop())
        self.names.pop()
        return True

    def _enter(self) -> None:
        if not self.pending:
            return
        self.pending = False
        name = self.names[-1]
        try:
            self.fds.append(os.open(name, _DIR_FLAGS, dir_fd=self.fds[-1]))
            return
        except OSError as e:
            if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                self.error = e
                return
            not_dir = e
        target = _readlink(name, self.fds[-1])
        if target is None:  # a file where a directory should be
            self.error = not_dir
            return
        self._follow(target)
        self._enter()

    def _follow(self, target: str) -> None:
        """Replace the pending link by its target, walked from the link's directory."""
        self.names.pop()
        self.links += 1
        if self.links > MAX_LINKS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
        if target.startswith("/"):
            if not inside(target, self.root):
                where = _pseudo_fs(os.path.normpath(target))
                raise _Escape(f"into {where}" if where else "outside the repository")
            while self.names:
                self.up()
            target = target[len(self.root) :]
        for comp in target.split("/"):
            if comp in ("", "."):
                continue
            if comp != "..":
                self.down(comp)
            elif not self.up():
                raise _Escape("outside the repository")

    def settle(self, open_file: bool) -> None:
        """Look at the pending name, following it while it is a link. With ``open_file`` the look
        is the open itself (O_NOFOLLOW: a link fails it), so what ``fstat`` describes is what was
        opened: nothing can be swapped in between (and one system call fewer)."""
        while self.pending:
            name = self.names[-1]
            if open_file and self._open(name):
                return
            try:
                self.st = os.stat(name, dir_fd=self.fds[-1], follow_symlinks=False)
            except OSError as e:
                self.pending, self.st, self.error = False, None, e
                return
            if not stat.S_ISLNK(self.st.st_mode):
                return
            target = _readlink(name, self.fds[-1])
            self.pending, self.st = False, None
            if target is not None:
                self._follow(target)

    def _open(self, name: str) -> bool:
        """Open the pending name for reading; False when it is a link or a socket (the caller
        looks at it without opening). A regular file stays open (self.fd); anything else is
        closed again, its stat kept for the caller to say what it is."""
        try:
            fd = os.open(name, FILE_FLAGS, dir_fd=self.fds[-1])
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENXIO):  # a link (O_NOFOLLOW), a socket
                return False
            self.pending, self.st, self.error = False, None, e
            return True
        self.st = os.fstat(fd)
        if stat.S_ISREG(self.st.st_mode):
            self.fd = fd
        else:  # a directory, a FIFO, a device: O_NONBLOCK and O_NOCTTY kept the open harmless
            os.close(fd)
        return True

    def found(self, user_path: str) -> Found:
        final = self.abs()
        if not inside(final, self.root) or _pseudo_fs(final):  # defensive: the walk should have caught it
            raise _escape(user_path, "it resolves outside the repository")
        rel = "/".join(self.names) or "."
        st = self.st
        if not self.pending and self.error is None:  # a directory entered (the root, a '..', a link to one)
            st = os.fstat(self.fds[-1])
        found = Found(final, rel, st, self.fd, self.error)
        self.fd = -1  # the caller's now
        return found

    def close(self) -> None:
        for fd in self.fds[1:]:
            os.close(fd)
        del self.fds[1:]
        if self.fd >= 0:  # opened, then refused
            os.close(self.fd)
            self.fd = -1


def _readlink(name: str, dir_fd: int) -> Optional[str]:
    """The link's target; None when ``name`` is not a link. OSError when it cannot be read."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.EINVAL:
            return None
        raise
