"""Globs with ripgrep's --glob (gitignore) syntax, for the pure-Python search engine.

``*`` does not cross ``/``, ``**``, ``?``, ``[...]``, ``{a,b}``, ``!`` negates; a
glob without ``/`` matches the file name at any depth, with ``/`` the path from the
root; a trailing ``/`` matches directories only; the last matching glob wins.
"""

from __future__ import annotations

import re

# Not `from typing import ...` at run time (a first search would pay ~3 ms for it).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


class Glob:
    """One gitignore-style glob, as ripgrep's --glob reads it."""

    def __init__(self, pattern: str) -> None:
        self.source = pattern
        p = pattern
        self.negated = p.startswith("!")
        if self.negated:
            p = p[1:]
        self.dir_only = p.endswith("/") and len(p) > 1
        if self.dir_only:
            p = p.rstrip("/")
        anchored = p.startswith("/")
        if anchored:
            p = p.lstrip("/")
        elif "/" not in p and not p.startswith("**"):
            p = "**/" + p  # no slash: matches the name at any depth
        self.regex = re.compile(_glob_to_regex(p), re.DOTALL)

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        return self.regex.match(rel) is not None


def _glob_to_regex(p: str) -> str:
    out: list[str] = []
    i, n = 0, len(p)
    in_brace = 0
    while i < n:
        c = p[i]
        if p.startswith("**/", i) and (i == 0 or p[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
            continue
        if p.startswith("**", i) and (i == 0 or p[i - 1] == "/") and i + 2 == n:
            out.append(".*")
            i += 2
            continue
        if c == "*":
            while i < n and p[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and p[j] in "!^":
                j += 1
            if j < n and p[j] == "]":
                j += 1
            while j < n and p[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = p[i + 1 : j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "{":
            in_brace += 1
            out.append("(?:")
        elif c == "}" and in_brace:
            in_brace -= 1
            out.append(")")
        elif c == "," and in_brace:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(p[i]))
        else:
            out.append(re.escape(c))
        i += 1
    out.extend(")" * in_brace)
    return "".join(out) + r"\Z"


class GlobSet:
    def __init__(self, patterns: list[str]) -> None:
        self.globs = [Glob(p) for p in patterns]
        self.has_positive = any(not g.negated for g in self.globs)

    def _last(self, rel: str, is_dir: bool) -> Optional[Glob]:
        for g in reversed(self.globs):
            if g.matches(rel, is_dir):
                return g
        return None

    def allow_dir(self, rel: str) -> bool:
        g = self._last(rel, True)
        return g is None or not g.negated

    def allow_file(self, rel: str) -> bool:
        g = self._last(rel, False)
        if g is None:
            return not self.has_positive
        return not g.negated
