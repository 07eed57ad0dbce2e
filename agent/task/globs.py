"""The one glob dialect of allow/deny rules: gitignore's (matched by `pathspec`), plus `{a,b}`.

- ``*`` and ``?`` stay inside one path segment; ``**`` crosses segments (``src/**``,
  ``**/test_*.py``, ``a/**/b``); ``[abc]`` / ``[!abc]`` are character classes; ``\\`` escapes.
- A pattern with no ``/`` (other than a trailing one) matches at any depth: ``*.pem`` covers
  ``certs/key.pem``; ``secrets`` covers every folder named secrets and all below it.
- A pattern with a ``/`` at its start or in its middle is anchored at the repository root:
  ``/setup.py`` and ``docs/*.md`` match from the root only.
- A pattern naming a folder covers everything under it (``build`` and ``build/``).
- ``!pattern`` takes back what an earlier pattern of the same list matched; the last match wins.
- ``{a,b}`` is expanded before matching (as a shell would; gitignore itself has no braces):
  ``*.{pem,key}`` is ``*.pem`` and ``*.key``. Braces nest; an unclosed ``{`` is literal.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

MAX_EXPANSIONS = 256  # a pattern with nested braces cannot grow without bound


def expand_braces(pattern: str) -> list[str]:
    """``a{b,c}d`` -> ``abd``, ``acd``; nested braces expand too; no comma or no closing brace: literal."""
    span = _first_group(pattern)
    if span is None:
        return [pattern]
    start, end, options = span
    head, tail = pattern[:start], pattern[end + 1 :]
    out: list[str] = []
    for option in options:
        for expanded in expand_braces(head + option + tail):
            if expanded not in out:
                out.append(expanded)
            if len(out) >= MAX_EXPANSIONS:
                return out
    return out


def _first_group(pattern: str) -> tuple[int, int, list[str]] | None:
    """The first ``{...}`` that holds a top-level comma: (start, end, its options)."""
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            found = _group_at(pattern, i)
            if found is not None:
                return found
        i += 1
    return None


def _group_at(pattern: str, start: int) -> tuple[int, int, list[str]] | None:
    depth = 0
    options: list[str] = []
    current = start + 1
    i = start
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if not options:
                    return None  # "{a}" has no comma: literal braces
                options.append(pattern[current:i])
                return start, i, options
        elif c == "," and depth == 1:
            options.append(pattern[current:i])
            current = i + 1
        i += 1
    return None


def normalize(path: str) -> str:
    """``./src//a.py`` -> ``src/a.py``."""
    return "/".join(p for p in path.split("/") if p not in ("", "."))


class GlobRules:
    """A list of allow or deny patterns; ``matches`` says whether the list covers a path."""

    def __init__(self, patterns: Iterable[str], *, ignore_case: bool = False) -> None:
        self.patterns = list(patterns)
        self.ignore_case = ignore_case
        self._spec = _compile(tuple(p.lower() if ignore_case else p for p in self.patterns))

    def matches(self, path: str) -> bool:
        rel = normalize(path)
        return bool(rel) and self._spec.match_file(rel.lower() if self.ignore_case else rel)


@lru_cache(maxsize=256)
def _compile(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    import pathspec  # here, not at the top: a read-only run matches no glob and never loads it

    lines = [expanded for pattern in patterns for expanded in expand_braces(pattern.strip())]
    return pathspec.GitIgnoreSpec.from_lines(line for line in lines if line)


def glob_match(path: str, pattern: str) -> bool:
    """One path against one pattern, in the dialect above."""
    return GlobRules([pattern]).matches(path)
