"""The paths a unified diff may touch, read from its text: only for a check made BEFORE a program applies it.

GNU patch runs on the host only when every path here stays inside the workspace (apply.py); each
`---`/`+++` name counts in every way a program may read it (cut at a tab, or with a date after a
space removed, as GNU patch and git both take it). What a patch did is never judged from this
reading: integrity uses what git sees in the workspace afterwards (changed.py).
"""

from __future__ import annotations

import re

_DIFF_GIT = re.compile(r'^diff --git (?P<a>"(?:[^"\\]|\\.)*"|\S+) (?P<b>"(?:[^"\\]|\\.)*"|\S+)$')
# A traditional diff's date after the name, with a space instead of a tab ("2020-01-01 00:00:00.000000000 +0000").
_DATED = re.compile(r"\s+\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?( ?[+-]\d{4})?$")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", '"': '"', "\\": "\\"}


def touched_paths(diff: str) -> list[str]:
    """Every path the diff may read or write (old and new names, each name in every reading), without a/ b/
    prefixes or /dev/null, in order."""
    found: dict[str, None] = {}
    for line in diff.splitlines():
        for path in _paths_of(line):
            if path and path != "/dev/null":
                found.setdefault(path, None)
    return list(found)


def _paths_of(line: str) -> list[str]:
    if line.startswith(("--- ", "+++ ")):
        name = line[4:].split("\t", 1)[0].rstrip()
        readings = [name, _DATED.sub("", name)]
        return list(dict.fromkeys(_strip_prefix(_unquote(n)) for n in readings))
    for key in ("rename from ", "rename to ", "copy from ", "copy to "):
        if line.startswith(key):
            return [_unquote(line[len(key):])]
    match = _DIFF_GIT.match(line)
    if match:  # binary and mode-only changes have no ---/+++ lines: their names are only here
        return [_strip_prefix(_unquote(match.group("a"))), _strip_prefix(_unquote(match.group("b")))]
    return []


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


def _unquote(name: str) -> str:
    """git's C-style quoting of a path ("a/caf\\303\\251.py") back to the path."""
    if not (len(name) >= 2 and name.startswith('"') and name.endswith('"')):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and i + 3 < len(body) + 1 and re.fullmatch(r"[0-7]{3}", body[i + 1:i + 4]):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out += _ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += char.encode()
        i += 1
    return out.decode("utf-8", errors="surrogateescape")

