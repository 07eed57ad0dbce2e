"""A dated environment on its Python: the venv's own setuptools before 3.12, and no date before the Python's release.

An environment as of a day is made as that day made it (``venv_seed``), but never of packages older
than its Python (``build_date``): a backend of an older day may not run on a newer Python.
"""

from __future__ import annotations

from agent.env.read.reqlines import Requirement
from agent.python_versions import minor_of

# Before Python 3.12 (released on this day), `python -m venv` and virtualenv put setuptools into every environment.
SEEDED_BEFORE = ((3, 12), "2023-10-02")
SEED_SOURCE = " venv's own"


def venv_seed(requirements: list[Requirement], python: str, as_of: str | None) -> list[Requirement]:
    """setuptools, for an environment of a Python older than 3.12 resolved as of a day before 3.12 was out, when
    no requirement names it: the environments of that time had it unasked, and their packages import
    ``pkg_resources`` without declaring it (hypothesis 5.35's entry points). Environments of today (as of now,
    or a later day) get what they declare, as before."""
    from packaging.utils import canonicalize_name

    from agent.python_versions import key

    minor = minor_of(python)
    (last, until) = SEEDED_BEFORE
    if minor is None or key(minor) >= last or as_of is None or as_of[:10] >= until:
        return []
    if any(canonicalize_name(r.name) == "setuptools" for r in requirements):
        return []
    return [Requirement(text="setuptools", name="setuptools", source=f"a Python {minor}{SEED_SOURCE}")]


def build_date(exclude_newer: str | None, python: str) -> str | None:
    """``exclude_newer``, or the release day of ``python``'s minor when that is later (None: no limit)."""
    from agent.python_versions import RELEASED

    released = RELEASED.get(minor_of(python) or "")
    if exclude_newer is None or released is None:
        return exclude_newer
    return max(exclude_newer, f"{released}T00:00:00Z")
