"""apply_patch: parse, plan, commit, all of the patch or nothing; and the result the model reads."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from sandbox.patch.commit import commit_changes
from sandbox.patch.diff import cap_diff
from sandbox.patch.errors import PatchError, rejected
from sandbox.patch.parser import parse_patch
from sandbox.patch.plan import Planner

DEFAULT_MAX_PATCH_BYTES = 1_000_000
DEFAULT_MAX_FILE_BYTES = 5_000_000
DEFAULT_MAX_DIFF_CHARS = 20_000


@dataclass
class PatchResult:
    """What an applied patch did.

    ``summary``: ``A path``, ``M path``, ``D path``, ``R old -> new`` lines in patch order.
    ``diff``: unified diff of the changes, capped (a note says what was cut).
    ``changed_paths``: the relative paths written or removed.
    ``files``: ``(path, before, after)`` of every file the patch touched (None: no file), in
    the order it touched them; symbolic links the patch removed are not among them.
    """

    summary: List[str]
    diff: str
    changed_paths: List[str]
    diff_truncated: bool = False
    files: List[Tuple[str, Optional[bytes], Optional[bytes]]] = field(default_factory=list)

    def text(self) -> str:
        """The message for the model: Codex's success line, the summary, then the diff."""
        out = "Success. Updated the following files:\n" + "".join(line + "\n" for line in self.summary)
        if self.diff:
            out += "\n" + self.diff
            if not out.endswith("\n"):
                out += "\n"
        return out


def apply_patch(
    text: str,
    root: str,
    *,
    max_patch_bytes: int = DEFAULT_MAX_PATCH_BYTES,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_diff_chars: int = DEFAULT_MAX_DIFF_CHARS,
) -> PatchResult:
    """Apply a patch under ``root``, all of it or nothing. Raises :class:`PatchError`."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_patch_bytes:
        raise rejected(
            "patch rejected: the patch is %d bytes, over apply_patch's limit of %d bytes. "
            "Split it into several smaller patches." % (size, max_patch_bytes)
        )
    patch = parse_patch(text)
    if not patch.operations:
        raise PatchError(
            "patch rejected: empty patch. It has no '*** Add File:', '*** Delete File:' or "
            "'*** Update File:' section. No files were modified.",
            "No files were modified.",
        )
    planner = Planner(root, max_file_bytes)
    for op in patch.operations:
        if op.kind == "add":
            planner.add(op)
        elif op.kind == "delete":
            planner.delete(op)
        else:
            planner.update(op)
    planner.finish()
    changed = commit_changes(planner)
    diff, truncated = cap_diff("".join(planner.diffs), max_diff_chars)
    files = [
        (os.path.relpath(slot.path, planner.root).replace(os.sep, "/"), slot.orig, slot.data)
        for slot in (planner.slots[path] for path in planner.touched if path in planner.slots)
        if not slot.is_dir
    ]
    return PatchResult(list(planner.summary), diff, changed, truncated, files)
