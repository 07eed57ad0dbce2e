"""Find a hunk's lines in a file: Codex's four matching levels, and the closest region for an error."""

from __future__ import annotations

import difflib
from typing import Dict, List, Optional, Tuple

_PUNCTUATION = str.maketrans(
    {
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u00a0": " ",
        "\u2002": " ",
        "\u2003": " ",
        "\u2004": " ",
        "\u2005": " ",
        "\u2006": " ",
        "\u2007": " ",
        "\u2008": " ",
        "\u2009": " ",
        "\u200a": " ",
        "\u202f": " ",
        "\u205f": " ",
        "\u3000": " ",
    }
)

_LEVELS = ("exact", "ignoring trailing whitespace", "ignoring surrounding whitespace", "normalised")


def at_level(level: int, text: str) -> str:
    if level == 0:
        return text
    if level == 1:
        return text.rstrip()
    if level == 2:
        return text.strip()
    return text.strip().translate(_PUNCTUATION)


class Matcher:
    """Finds runs of lines in a file, with Codex's four levels of strictness."""

    def __init__(self, texts: List[str]) -> None:
        self.texts = texts
        self._levels: Dict[int, List[str]] = {0: texts}

    def _lines(self, level: int) -> List[str]:
        lines = self._levels.get(level)
        if lines is None:
            lines = [at_level(level, text) for text in self.texts]
            self._levels[level] = lines
        return lines

    def seek(self, pattern: List[str], start: int, eof: bool, limit: int = 1) -> List[int]:
        """Start positions (at most ``limit``) of ``pattern`` at or after ``start``.

        Levels are tried in order and the first level with a match wins. With ``eof`` the
        only candidate is the position that ends at the end of the file.
        """
        n, m = len(self.texts), len(pattern)
        if m == 0:
            return [start]
        if m > n:
            return []
        last = n - m
        if eof:
            if last < start:
                return []
            start = last
        for level in range(len(_LEVELS)):
            lines = self._lines(level)
            wanted = [at_level(level, text) for text in pattern]
            hits: List[int] = []
            i = start
            while i <= last:
                try:
                    i = lines.index(wanted[0], i, last + 1)
                except ValueError:
                    break
                if lines[i : i + m] == wanted:
                    hits.append(i)
                    if len(hits) >= limit:
                        break
                i += 1
            if hits:
                return hits
        return []


def _similarity(a: str, b: str) -> float:
    a = a.strip()[:200]
    b = b.strip()[:200]
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def closest_region(texts: List[str], pattern: List[str]) -> Optional[Tuple[int, int, float]]:
    """(start, length, score) of the run of file lines most like ``pattern``."""
    n, m = len(texts), len(pattern)
    if n == 0 or m == 0:
        return None
    span = min(m, n)
    last = n - span
    votes: Dict[int, int] = {}
    index: Dict[str, List[int]] = {}
    for k, text in enumerate(pattern):
        if text.strip():
            index.setdefault(text.strip(), []).append(k)
    for i, text in enumerate(texts):
        for k in index.get(text.strip(), ()):
            start = min(max(i - k, 0), last)
            votes[start] = votes.get(start, 0) + 1
    candidates = sorted(votes, key=lambda s: -votes[s])[:30]
    wanted = max(1, len(index) // 2)
    if not candidates or votes[candidates[0]] < wanted:
        # Lines that are similar without being equal: rank file lines against the longest
        # pattern lines, cheaply first, then exactly for the best few.
        probes = sorted((k for k in range(m) if pattern[k].strip()), key=lambda k: -len(pattern[k]))[:2]
        rough: List[Tuple[float, int, int]] = []
        for k in probes:
            matcher = difflib.SequenceMatcher(None, "", pattern[k].strip()[:200], autojunk=False)
            for i, text in enumerate(texts):
                matcher.set_seq1(text.strip()[:200])
                if matcher.real_quick_ratio() >= 0.5:
                    quick = matcher.quick_ratio()
                    if quick >= 0.5:
                        rough.append((quick, i, k))
        rough.sort(reverse=True)
        scored = sorted(
            ((_similarity(texts[i], pattern[k]), min(max(i - k, 0), last)) for _q, i, k in rough[:200]),
            reverse=True,
        )
        for _score, start in scored[:30]:
            if start not in candidates:
                candidates.append(start)
    if not candidates and n * m <= 20_000:
        candidates = list(range(last + 1))
    best: Optional[Tuple[int, int, float]] = None
    for start in candidates:
        score = sum(_similarity(texts[start + k], pattern[k]) for k in range(span)) / m
        if best is None or score > best[2] + 1e-9:
            best = (start, span, score)
    return best
