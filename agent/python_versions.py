"""CPython minor versions (a leaf every layer may import): when each came out, which a project allows, the nearest
one available."""

from __future__ import annotations

import re

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

# The first release of each minor (python.org): "the Python current on a date" is the newest one out by then.
RELEASED: dict[str, str] = {
    "3.5": "2015-09-13", "3.6": "2016-12-23", "3.7": "2018-06-27", "3.8": "2019-10-14", "3.9": "2020-10-05",
    "3.10": "2021-10-04", "3.11": "2022-10-24", "3.12": "2023-10-02", "3.13": "2024-10-07", "3.14": "2025-10-07",
}
# Below this minor no newer one stands in: code of that age may not run on 3.9 at all.
OLDEST_STAND_IN = "3.6"
_MINOR = re.compile(r"^\s*(\d+)\.(\d+)(?:\.\d+)?\s*$")


def minor_of(text: str) -> str | None:
    """``3.9`` for "3.9", "3.9.2" or " 3.9 "; None when it names no X.Y version."""
    match = _MINOR.match(text)
    return f"{int(match.group(1))}.{int(match.group(2))}" if match else None


def key(minor: str) -> tuple[int, int]:
    major, _, rest = minor.partition(".")
    return int(major), int(rest)


def current_on(date: str) -> str | None:
    """The newest minor out on ``date`` (an ISO date or timestamp); None before the oldest known."""
    day = date[:10]
    out = [minor for minor, released in RELEASED.items() if released <= day]
    return max(out, key=key) if out else None


def allows(requires_python: str | None, minor: str) -> bool:
    """Whether a ``requires-python`` specifier lets ``minor`` (its latest patch release) in; an unreadable one does."""
    if not requires_python:
        return True
    try:
        spec = SpecifierSet(requires_python)
    except InvalidSpecifier:
        return True
    return spec.contains(Version(f"{minor}.99"), prereleases=True) or spec.contains(Version(f"{minor}.0"))


def newest_allowed_by(requires_python: str | None, date: str) -> str | None:
    """The newest minor out on ``date`` that ``requires_python`` allows; None when none is."""
    day = date[:10]
    out = [m for m, released in RELEASED.items() if released <= day and allows(requires_python, m)]
    return max(out, key=key) if out else None


def nearest_newer(wanted: str, available: set[str]) -> str | None:
    """The nearest available minor at or above ``wanted`` in its major series; None when there is none,
    or when ``wanted`` is older than any that may stand in for it (OLDEST_STAND_IN)."""
    if wanted in available:
        return wanted
    if key(wanted) < key(OLDEST_STAND_IN):
        return None
    newer = [m for m in available if key(m)[0] == key(wanted)[0] and key(m) > key(wanted)]
    return min(newer, key=key) if newer else None
