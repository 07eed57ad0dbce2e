"""``shutil.rmtree`` and ``tempfile.mkdtemp`` for run_test, without importing shutil or tempfile.

shutil pulls in bz2, lzma and zlib (three C extensions and their libraries), fnmatch and errno;
tempfile pulls in shutil, random and weakref. Under gVisor, where every file a module load opens
goes through its gofer, the two made a first run_test ~30 ms slower (of ~57 ms of imports); this
is the little of them run_test needs. ``run_test --copy_repo`` still imports shutil (copytree).
"""

from __future__ import annotations

import contextlib
import os

# Not `from typing import ...` at run time (a first run_test would pay for it).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Tuple

_DIR = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def rmtree(path: str) -> None:
    """Remove ``path`` and what is under it, as far as permissions allow, errors ignored (as
    ``shutil.rmtree(path, ignore_errors=True)``: the caller looks at what is left).

    Never follows a link: each directory is opened relative to its parent with O_NOFOLLOW, so a
    link (even one swapped in for a directory meanwhile) is removed, not what it points to. No
    recursion: a tree of any depth is walked with a stack (one descriptor per level)."""
    try:
        top = os.open(path, _DIR)
    except OSError:  # a file, a link, or gone
        with contextlib.suppress(OSError):
            os.unlink(path)
        return
    stack: List[Tuple[int, List[Tuple[str, bool]], str]] = [(top, _entries(top), path)]
    while stack:
        fd, entries, dir_name = stack[-1]
        if entries:
            name, is_dir = entries.pop()
            if is_dir:
                try:
                    sub = os.open(name, _DIR, dir_fd=fd)
                except OSError:  # a link by now, or unreadable: unlink removes a link, not a directory
                    pass
                else:
                    stack.append((sub, _entries(sub), name))
                    continue
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=fd)
            continue
        stack.pop()
        os.close(fd)
        with contextlib.suppress(OSError):
            if stack:
                os.rmdir(dir_name, dir_fd=stack[-1][0])
            else:
                os.rmdir(path)


def _entries(fd: int) -> List[Tuple[str, bool]]:
    """(name, is a directory) of what a directory holds: the kind from the listing, no stat."""
    try:
        with os.scandir(fd) as it:
            return [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    except OSError:
        return []


def mkdtemp(prefix: str) -> str:
    """A new directory (mode 700) with a random name in the first temporary folder that takes it:
    $TMPDIR, $TEMP, $TMP, /tmp, /var/tmp (as tempfile.gettempdir looks)."""
    folders = [os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP")] + ["/tmp", "/var/tmp"]
    error: OSError = FileNotFoundError("no temporary folder")
    for folder in folders:
        if not folder:
            continue
        for _ in range(100):
            path = os.path.abspath(os.path.join(folder, prefix + os.urandom(6).hex()))
            try:
                os.mkdir(path, 0o700)
                return path
            except FileExistsError:
                continue
            except OSError as e:  # not writable, not there: the next folder
                error = e
                break
    raise error
