"""What a search found and what it passed over, shared by both engines and the tool.

``Match`` is one matching line (its text cut to MAX_COLUMNS); ``Skipped`` collects the files and
lines a search did not search or show, and words them for the result; ``clean_line`` turns a raw
line into the text shown. The size limits both engines apply live here.
"""

from __future__ import annotations

# Not `from typing import ...` at run time (a first search would pay ~3 ms for it).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


MAX_COLUMNS = 300
MAX_LINE_BYTES = 8 * 1024 * 1024  # a longer line (rg: JSON record) is skipped
MAX_FILE_BYTES = 64 * 1024 * 1024  # a larger file is not searched (rg --max-filesize 64M)
NAMED_SKIPS = 5  # how many skipped or binary files the result names


class Skipped:
    """What a search did not search or show, and why: the result says it."""

    def __init__(self) -> None:
        self.large: list[str] = []  # files over MAX_FILE_BYTES
        self.long_lines = 0  # lines over MAX_LINE_BYTES
        self.binary: list[str] = []  # files with a NUL byte that had matches
        self.links: list[str] = []  # symlinks (but to directories), not followed
        self.special: list[str] = []  # FIFOs, sockets, devices: never opened

    def note_binary(self, path: str) -> None:
        if path not in self.binary:
            self.binary.append(path)

    def lines(self, engine: str) -> list[str]:
        out = []
        if self.binary:
            out.append(f"[matches in binary files (NUL bytes; each NUL ends a line): {_names(self.binary)}]")
        if self.large:
            mib = MAX_FILE_BYTES // (1024 * 1024)
            out.append(f"[{len(self.large)} file(s) over {mib} MiB not searched: {_names(self.large)}]")
        if self.long_lines:
            what = "matched but not shown" if engine == "rg" else "not searched"
            out.append(f"[{self.long_lines} line(s) over {MAX_LINE_BYTES // (1024 * 1024)} MiB {what}]")
        if self.links:
            out.append(f"[{len(self.links)} symlink(s) not followed: {_names(self.links)}]")
        if self.special:
            out.append(f"[{len(self.special)} FIFO, socket or device file(s) not searched: {_names(self.special)}]")
        return out

    def data(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.binary:
            out["binary_files"] = self.binary[:NAMED_SKIPS]
        if self.large:
            out["large_files_skipped"] = len(self.large)
        if self.long_lines:
            out["long_lines_skipped"] = self.long_lines
        if self.links:
            out["symlinks_skipped"] = len(self.links)
        if self.special:
            out["special_files_skipped"] = len(self.special)
        return out


def _names(paths: list[str]) -> str:
    more = f" and {len(paths) - NAMED_SKIPS} more" if len(paths) > NAMED_SKIPS else ""
    return ", ".join(paths[:NAMED_SKIPS]) + more


class Match:
    """One matching line, its text already cut to MAX_COLUMNS (500 of them stay small)."""

    __slots__ = ("line", "more", "path", "text")

    def __init__(self, path: str, line: int, text: str) -> None:
        self.path = path
        self.line = line
        self.text = text[:MAX_COLUMNS]
        self.more = max(0, len(text) - MAX_COLUMNS)

    def render(self) -> str:
        more = f" ... [{self.more} more chars]" if self.more else ""
        return f"{self.path}:{self.line}: {self.text}{more}"



def clean_line(raw: bytes) -> str:
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", "replace")

