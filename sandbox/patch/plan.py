"""Plan a patch: every path check and every new content, in memory, before anything is written.

The symlink rules live here: nothing is written through a link, a link entry may only be
removed, and every real path must stay under the root and out of ``.git``.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from sandbox.patch.diff import file_diff
from sandbox.patch.errors import OUTSIDE_ROOT, PatchError, os_reason, rejected, verification_failed
from sandbox.patch.parser import FileOp
from sandbox.patch.paths import is_within, normalize_path
from sandbox.patch.update import update_text


@dataclass
class Slot:
    """A file location under the root and its content as the patch goes along."""

    rel: str
    path: str  # absolute, symlinks followed
    orig: Optional[bytes]  # content before the patch; None: no file
    mode: Optional[int]  # permission bits of the file before the patch
    data: Optional[bytes]  # content after the operations so far; None: no file
    new_mode: Optional[int] = None  # permission bits to write with (None: keep or default)
    is_dir: bool = False


@dataclass
class LinkRemoval:
    """A symlink the patch removes (a Delete of the link, or the source of a Move)."""

    rel: str
    path: str  # the symlink itself
    target: str  # what it points to, to put it back on rollback


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


class Planner:
    """The patch's operations applied in order to in-memory slots; ``commit.commit_changes`` writes them."""

    def __init__(self, root: str, max_file_bytes: int) -> None:
        if not os.path.isdir(root):
            raise PatchError("apply_patch failed: the root %r is not a directory." % root)
        self.root = os.path.realpath(root)
        self.max_file_bytes = max_file_bytes
        self.slots: Dict[str, Slot] = {}
        self.link_removals: Dict[str, LinkRemoval] = {}
        self.summary: List[str] = []
        self.diffs: List[str] = []
        self.touched: List[str] = []  # slot paths and link paths in order of first touch

    # -- paths --------------------------------------------------------------------------

    def _check_real(self, real: str, shown: str, via_link: bool) -> None:
        if not is_within(self.root, real):
            raise rejected(
                "%s. '%s' resolves through a symlink to %s, outside the repository root." % (OUTSIDE_ROOT, shown, real)
                if via_link
                else "%s. '%s' is outside the repository root." % (OUTSIDE_ROOT, shown)
            )
        rel = os.path.relpath(real, self.root)
        if rel != os.curdir and any(part.lower() == ".git" for part in rel.split(os.sep)):
            raise rejected(
                "patch rejected: '%s' resolves through a symlink into .git (%s), which apply_patch "
                "never writes." % (shown, rel)
            )

    def locate(self, raw: str, link_entry_ok: bool = False) -> Tuple[str, str, str, bool]:
        """(relative path, directory entry, real file path, entry is a symlink) of a patch path.

        Nothing is written THROUGH a symbolic link: the policy judges the paths as the patch
        names them, so a link (``src/alias -> secrets``) would carry a write past it. A link
        as the entry itself may only be removed (Delete, or the source of a Move):
        ``link_entry_ok``; writing to the file it points to needs the real path.
        """
        rel = normalize_path(raw)
        parts = rel.split("/")
        here = self.root
        for i, part in enumerate(parts[:-1]):
            here = os.path.join(here, part)
            if os.path.islink(here):
                link = "/".join(parts[: i + 1])
                raise rejected(
                    "patch rejected: '%s' goes through the symbolic link '%s' (-> %s); apply_patch "
                    "does not write through links: use the real path." % (raw, link, _readlink(here))
                )
        parent = os.path.realpath(os.path.join(self.root, *parts[:-1])) if len(parts) > 1 else self.root
        self._check_real(parent, raw, via_link=True)
        entry = os.path.join(parent, parts[-1])
        if os.path.islink(entry) and entry not in self.link_removals:
            real = os.path.realpath(entry)
            self._check_real(real, raw, via_link=True)
            if real == self.root:
                raise rejected("patch rejected: '%s' is a symlink to the repository root." % raw)
            if not link_entry_ok:
                real_rel = os.path.relpath(real, self.root)
                raise rejected(
                    "patch rejected: '%s' is a symbolic link (-> %s); apply_patch does not write "
                    "through links: patch the real path '%s'." % (raw, _readlink(entry), real_rel)
                )
            return rel, entry, real, True
        return rel, entry, entry, False

    def slot(self, rel: str, real: str) -> Slot:
        slot = self.slots.get(real)
        if slot is not None:
            return slot
        orig: Optional[bytes] = None
        mode: Optional[int] = None
        is_dir = False
        try:
            # A symlink this patch already removed is no file any more.
            st = None if real in self.link_removals else os.stat(real)
        except (FileNotFoundError, NotADirectoryError):
            st = None  # a parent that is a file is reported when the patch is checked as a whole
        except OSError as exc:
            raise verification_failed("Failed to read %s: %s" % (rel, os_reason(exc))) from None
        if st is not None:
            if stat.S_ISDIR(st.st_mode):
                is_dir = True
            elif not stat.S_ISREG(st.st_mode):
                raise verification_failed(
                    "Failed to read %s: not a regular file (apply_patch edits regular files only)" % rel
                )
            elif st.st_size > self.max_file_bytes:
                raise verification_failed(
                    "Failed to read %s: the file is %d bytes, over apply_patch's limit of %d bytes"
                    % (rel, st.st_size, self.max_file_bytes)
                )
            else:
                try:
                    with open(real, "rb") as handle:
                        orig = handle.read(self.max_file_bytes + 1)
                except OSError as exc:
                    raise verification_failed("Failed to read %s: %s" % (rel, os_reason(exc))) from None
                if len(orig) > self.max_file_bytes:
                    raise verification_failed(
                        "Failed to read %s: the file is over apply_patch's limit of %d bytes"
                        % (rel, self.max_file_bytes)
                    )
                mode = stat.S_IMODE(st.st_mode)
        slot = Slot(rel, real, orig, mode, orig, is_dir=is_dir)
        self.slots[real] = slot
        self.touched.append(real)
        return slot

    # -- operations ---------------------------------------------------------------------

    def add(self, op: FileOp) -> None:
        rel, _entry, real, _is_link = self.locate(op.path)
        slot = self.slot(rel, real)
        if slot.is_dir:
            raise verification_failed("Failed to write file %s: Is a directory" % rel)
        data = self._encode(op.contents, rel)
        replaced = slot.data is not None
        self._diff(slot.data, data, rel, rel)
        slot.data = data
        self.summary.append("A %s%s" % (rel, " (replaced the existing file)" if replaced else ""))

    def delete(self, op: FileOp) -> None:
        rel, entry, real, is_link = self.locate(op.path, link_entry_ok=True)
        if is_link and entry not in self.link_removals:
            # Deleting a symlink removes the link, not what it points to.
            try:
                target = os.readlink(entry)
            except OSError as exc:
                raise verification_failed("Failed to read %s: %s" % (rel, os_reason(exc))) from None
            self.link_removals[entry] = LinkRemoval(rel, entry, target)
            self.touched.append(entry)
            self.summary.append("D %s" % rel)
            self.diffs.append("--- a/%s\n+++ /dev/null\n(symlink to %s removed)\n" % (rel, target))
            return
        slot = self.slot(rel, real)
        if slot.is_dir:
            raise verification_failed(
                "Failed to read %s: Is a directory (Delete File removes one file, not a directory)" % rel
            )
        if slot.data is None:
            raise verification_failed("Failed to read %s: No such file or directory (there is no file to delete)" % rel)
        self._diff(slot.data, None, rel, rel)
        slot.data = None
        self.summary.append("D %s" % rel)

    def update(self, op: FileOp) -> None:
        # A link may be the source of a move (the link goes away), never updated in place.
        rel, entry, real, is_link = self.locate(op.path, link_entry_ok=op.move_to is not None)
        slot = self.slot(rel, real)
        if slot.is_dir:
            raise verification_failed("Failed to read file to update %s: Is a directory" % rel)
        if slot.data is None:
            raise verification_failed("Failed to read file to update %s: No such file or directory" % rel)
        try:
            text = slot.data.decode("utf-8")
        except UnicodeDecodeError:
            raise verification_failed(
                "Failed to read file to update %s: stream did not contain valid UTF-8 "
                "(apply_patch edits UTF-8 text files only)" % rel
            ) from None
        new_text = update_text(text, op.chunks, rel)
        data = self._encode(new_text, rel)
        if op.move_to is None:
            self._diff(slot.data, data, rel, rel)
            self.summary.append("M %s%s" % (rel, "" if data != slot.data else " (no changes)"))
            slot.data = data
            return
        dest_rel, _dest_entry, dest_real, _dest_link = self.locate(op.move_to)
        if dest_real == real and is_link:
            raise rejected(
                "patch rejected: '%s' is a symbolic link; apply_patch does not write through links: "
                "patch the real path '%s'." % (op.path, os.path.relpath(real, self.root))
            )
        if dest_real == real:
            self._diff(slot.data, data, rel, rel)
            self.summary.append("M %s" % rel)
            slot.data = data
            return
        dest = self.slot(dest_rel, dest_real)
        if dest.is_dir:
            raise verification_failed("Failed to write file %s: Is a directory" % dest_rel)
        replaced = dest.data is not None
        self._diff(slot.data, data, rel, dest_rel)
        dest.data = data
        dest.new_mode = slot.mode if slot.new_mode is None else slot.new_mode
        if is_link:
            # Moving a symlink: the destination gets the content, the link goes away.
            if entry not in self.link_removals:
                self.link_removals[entry] = LinkRemoval(rel, entry, os.readlink(entry))
                self.touched.append(entry)
        else:
            slot.data = None
        self.summary.append(
            "R %s -> %s%s" % (rel, dest_rel, " (replaced the existing %s)" % dest_rel if replaced else "")
        )

    # -- helpers ------------------------------------------------------------------------

    def _encode(self, text: str, rel: str) -> bytes:
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise verification_failed(
                "Failed to write file %s: the new content has characters that UTF-8 cannot encode" % rel
            ) from None
        if len(data) > self.max_file_bytes:
            raise verification_failed(
                "Failed to write file %s: the result would be %d bytes, over apply_patch's limit of %d bytes"
                % (rel, len(data), self.max_file_bytes)
            )
        return data

    def _diff(self, old: Optional[bytes], new: Optional[bytes], old_rel: str, new_rel: str) -> None:
        self.diffs.append(file_diff(old, new, old_rel, new_rel))

    def finish(self) -> None:
        """Checks that need the whole patch: parent directories and aliased files."""
        removed = {path for path, slot in self.slots.items() if slot.data is None}
        removed.update(self.link_removals)
        writes = [slot for slot in self.slots.values() if slot.data is not None and slot.data != slot.orig]
        final_files = {slot.path for slot in self.slots.values() if slot.data is not None}
        for slot in writes:
            ancestor = os.path.dirname(slot.path)
            while ancestor != self.root and is_within(self.root, ancestor):
                if ancestor in final_files:
                    raise verification_failed(
                        "Failed to create parent directories for %s: %s is a file in this patch"
                        % (slot.rel, os.path.relpath(ancestor, self.root))
                    )
                if os.path.lexists(ancestor) and not os.path.isdir(ancestor) and ancestor not in removed:
                    raise verification_failed(
                        "Failed to create parent directories for %s: %s is not a directory"
                        % (slot.rel, os.path.relpath(ancestor, self.root))
                    )
                ancestor = os.path.dirname(ancestor)
            directory = _nearest_existing_dir(os.path.dirname(slot.path))
            if not os.access(directory, os.W_OK | os.X_OK):
                raise verification_failed(
                    "Failed to write file %s: Permission denied (cannot write in %s)"
                    % (slot.rel, os.path.relpath(directory, self.root))
                )
        for path in sorted(removed):
            directory = os.path.dirname(path)
            if not os.access(directory, os.W_OK | os.X_OK):
                rel = self.slots[path].rel if path in self.slots else self.link_removals[path].rel
                raise verification_failed("Failed to delete file %s: Permission denied" % rel)


def _nearest_existing_dir(path: str) -> str:
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path
