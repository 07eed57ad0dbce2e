"""Write a planned patch: removals then writes, each file through a temporary file, undone on failure."""

from __future__ import annotations

import contextlib
import os
from typing import List, Optional, Tuple

from sandbox.patch.errors import NOTHING_CHANGED, PatchError, os_reason
from sandbox.patch.plan import Planner, Slot


def _write_file(path: str, data: bytes, mode: Optional[int]) -> None:
    """Write through a temporary file in the same directory, then rename over ``path``."""
    directory, name = os.path.split(path)
    base = ("." + name) if len(name) < 200 else ".codebox"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _attempt in range(100):
        tmp = os.path.join(directory, "%s.%s.codebox-tmp" % (base, os.urandom(4).hex()))
        try:
            fd = os.open(tmp, flags, 0o666)  # the umask applies, as for any new file
        except FileExistsError:
            continue
        break
    else:
        raise OSError("could not create a temporary file in %s" % directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class _Undo:
    """What was done so far, to be undone in reverse order."""

    def __init__(self) -> None:
        # (kind, path, content, mode, symlink target); kind: restore, remove, relink, rmdir
        self.steps: List[Tuple[str, str, Optional[bytes], Optional[int], str]] = []

    def rollback(self) -> List[str]:
        problems: List[str] = []
        for kind, path, data, mode, target in reversed(self.steps):
            try:
                if kind == "restore" and data is not None:
                    _write_file(path, data, mode)
                elif kind == "remove":
                    if os.path.lexists(path):
                        os.unlink(path)
                elif kind == "relink":
                    os.symlink(target, path)
                elif kind == "rmdir":
                    os.rmdir(path)
            except OSError as exc:
                problems.append("%s (%s)" % (path, os_reason(exc)))
        return problems


def _make_parents(path: str, undo: _Undo) -> None:
    missing: List[str] = []
    directory = os.path.dirname(path)
    while not os.path.lexists(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for directory in reversed(missing):
        os.mkdir(directory)
        undo.steps.append(("rmdir", directory, None, None, ""))


def commit_changes(planner: Planner) -> List[str]:
    """Perform the planned changes; on failure roll back and raise. Returns the changed paths."""
    undo = _Undo()
    changed: List[str] = []
    removals: List[Tuple[str, str]] = []
    writes: List[Slot] = []
    for path in dict.fromkeys(planner.touched):
        link = planner.link_removals.get(path)
        if link is not None:
            removals.append((path, link.rel))
        slot = planner.slots.get(path)
        if slot is None:
            continue
        if slot.data is None and slot.orig is not None:
            removals.append((path, slot.rel))
        elif slot.data is not None and slot.data != slot.orig:
            writes.append(slot)
    action = ""
    try:
        for path, rel in removals:
            action = "Failed to delete file %s" % rel
            link = planner.link_removals.get(path)
            os.unlink(path)
            if link is not None:
                undo.steps.append(("relink", path, None, None, link.target))
            else:
                removed = planner.slots[path]
                undo.steps.append(("restore", path, removed.orig, removed.mode, ""))
            changed.append(rel)
        for slot in writes:
            action = "Failed to create parent directories for %s" % slot.rel
            _make_parents(slot.path, undo)
            action = "Failed to write file %s" % slot.rel
            mode = slot.new_mode if slot.new_mode is not None else slot.mode
            _write_file(slot.path, slot.data or b"", mode)
            if slot.orig is None:
                undo.steps.append(("remove", slot.path, None, None, ""))
            else:
                undo.steps.append(("restore", slot.path, slot.orig, slot.mode, ""))
            changed.append(slot.rel)
    except OSError as exc:
        problems = undo.rollback()
        message = "apply_patch failed: %s: %s" % (action, os_reason(exc))
        if problems:
            message += (
                "\nRolling back the files already written failed for: %s. Those files may be left "
                "changed; read them before patching again." % ", ".join(problems)
            )
        else:
            message += "\nThe files already written were restored. " + NOTHING_CHANGED
        raise PatchError(message) from None
    unique: List[str] = []
    for rel in changed:
        if rel not in unique:
            unique.append(rel)
    return unique
