"""The unified diff of a patch's changes, as the model reads it, and its cap."""

from __future__ import annotations

import difflib
from typing import List, Optional, Tuple


def _diff_lines(text: str) -> List[str]:
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def file_diff(old: Optional[bytes], new: Optional[bytes], old_rel: str, new_rel: str) -> str:
    """The unified diff of one file (1 line of context), named a/old and b/new; notes for binary files."""
    old_name = "a/" + old_rel if old is not None else "/dev/null"
    new_name = "b/" + new_rel if new is not None else "/dev/null"
    header = "--- %s\n+++ %s\n" % (old_name, new_name)
    try:
        old_text = old.decode("utf-8") if old is not None else ""
        new_text = new.decode("utf-8") if new is not None else ""
    except UnicodeDecodeError:
        size = len(old or b"")
        return header + "(binary file, %d bytes, %s)\n" % (size, "deleted" if new is None else "changed")
    if old_text == new_text:
        if old_rel != new_rel:
            return header + "(moved, content unchanged)\n"
        return "" if old is not None and new is not None else header
    out = [header]
    for index, line in enumerate(difflib.unified_diff(_diff_lines(old_text), _diff_lines(new_text), n=1, lineterm="")):
        if index < 2:
            continue  # difflib's own ---/+++ lines
        if line.startswith("@@"):
            out.append(line.rstrip("\n") + "\n")
            continue
        if line.endswith("\n"):
            body = line[:-1]
            out.append((body[:-1] if body.endswith("\r") else body) + "\n")
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def cap_diff(diff: str, limit: int) -> Tuple[str, bool]:
    """(diff, cut) with the middle of a long diff replaced by a note: the head and the tail are kept."""
    if len(diff) <= limit:
        return diff, False
    lines = diff.splitlines(keepends=True)
    head_budget = limit * 3 // 4
    tail_budget = limit - head_budget
    head: List[str] = []
    size = 0
    for line in lines:
        if size + len(line) > head_budget:
            break
        head.append(line)
        size += len(line)
    tail: List[str] = []
    size = 0
    for line in reversed(lines[len(head) :]):
        if size + len(line) > tail_budget:
            break
        tail.append(line)
        size += len(line)
    tail.reverse()
    cut = lines[len(head) : len(lines) - len(tail)]
    note = "[... diff cut: %d lines (%d characters) not shown ...]\n" % (len(cut), sum(map(len, cut)))
    return "".join(head) + note + "".join(tail), True
