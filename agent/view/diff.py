"""A unified diff split into kinds of lines (file header, hunk header, added, removed, context)
for the page's highlighting, and its file and line counts.

Hunk headers give the line counts, so a removed line that reads "-- x" (shown as "--- x") is
never taken for a file header.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
MAX_LINE = 4000
_GIT_HEADER = re.compile(r"^diff --git a/(.*) b/(.*)$")

# Line kinds, also the page's CSS classes: file, meta, hunk, add, del, ctx, note.
LineKind = str


class DiffLines(BaseModel):
    lines: list[tuple[LineKind, str]] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    added: int = 0
    removed: int = 0


class _State:
    def __init__(self) -> None:
        self.old_left = 0
        self.new_left = 0
        self.out = DiffLines()

    @property
    def in_hunk(self) -> bool:
        return self.old_left > 0 or self.new_left > 0

    def file(self, path: str) -> None:
        if path and path != "/dev/null" and path not in self.out.files:
            self.out.files.append(path)

    def header(self, line: str) -> LineKind:
        git = _GIT_HEADER.match(line)
        if git:
            self.file(git.group(2))
            return "file"
        if line.startswith("+++ ") or line.startswith("--- "):
            name = line[4:].split("\t")[0]
            self.file(name[2:] if name[:2] in ("a/", "b/") else name)
            return "file"
        hunk = _HUNK.match(line)
        if hunk:
            self.old_left = int(hunk.group(1) or "1")
            self.new_left = int(hunk.group(2) or "1")
            return "hunk"
        return "meta"

    def body(self, line: str) -> LineKind:
        sign = line[:1]
        if sign == "\\":
            return "note"  # "\ No newline at end of file"
        if sign == "+":
            self.new_left -= 1
            self.out.added += 1
            return "add"
        if sign == "-":
            self.old_left -= 1
            self.out.removed += 1
            return "del"
        self.old_left -= 1
        self.new_left -= 1
        return "ctx"


def split_diff(text: str) -> DiffLines:
    state = _State()
    lines = text.split("\n")  # not splitlines(): a form feed or U+2028 inside a line is not a line end
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        kind = state.body(line) if state.in_hunk or line.startswith("\\") else state.header(line)
        if len(line) > MAX_LINE:  # a minified file's one line must not make the page unusable
            line = line[:MAX_LINE] + f" [… {len(line) - MAX_LINE} characters cut by the viewer]"
        state.out.lines.append((kind, line))
    return state.out
