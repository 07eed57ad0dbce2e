"""A dataset spec's preferred pins against the project's own requirements: the later install wins.

SWE-bench installs an environment in steps: the spec's ``pip_packages`` first, then, in the repository after
its ``pre_install`` commands, the project itself (``pip install -e .[test]``), which replaces any version the
project's requirements refuse. sphinx 3.x's spec pins ``Jinja2==3.0.3`` and seds its own setup.py to
``Jinja2<3.0``: its environments hold Jinja2 2.11. codebox resolves one set, so it keeps the steps' order here:
an exact preferred pin that a requirement of the later step refuses (the project's metadata after pre_install,
its test extra, its candidate's files, the user's own packages) is left out before the resolve, and one note
names the requirement that replaced it. A pin that only a dependency's requirement refuses is left to the
resolve, which drops it after (``install/candidate_lock.py``).
"""

from __future__ import annotations

from packaging.markers import InvalidMarker, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as Pep508
from packaging.utils import canonicalize_name

from agent.env.read.reqlines import Requirement


def exact_version(text: str) -> str | None:
    """The version of an exact pin (``name==1.2`` or ``name===1.2``), else None."""
    try:
        specifiers = list(Pep508(text).specifier)
    except InvalidRequirement:
        return None
    if len(specifiers) == 1 and specifiers[0].operator in ("==", "===") and "*" not in specifiers[0].version:
        return specifiers[0].version
    return None


def replaced_pins(prefer: list[Requirement], later: list[Requirement],
                  environment: dict[str, str]) -> tuple[list[Requirement], list[str]]:
    """``prefer`` without the exact pins a requirement of ``later`` refuses (whose marker holds in
    ``environment``, PEP 508's variables for the target), and one note for each pin left out."""
    kept: list[Requirement] = []
    notes: list[str] = []
    for pin in prefer:
        version = exact_version(pin.text)
        refusing = next((r for r in later if version is not None and _refuses(r, pin.name, version, environment)),
                        None)
        if refusing is None:
            kept.append(pin)
            continue
        notes.append(f"spec pin {pin.text} replaced by the project's {refusing.text} ({refusing.source}): the "
                     "project's install comes after the spec's packages, as in SWE-bench's")
    return kept, notes


def _refuses(requirement: Requirement, name: str, version: str, environment: dict[str, str]) -> bool:
    if canonicalize_name(requirement.name) != canonicalize_name(name):
        return False
    try:
        parsed = Pep508(requirement.text)
    except InvalidRequirement:
        return False
    if parsed.marker is not None:
        try:
            if not parsed.marker.evaluate({**environment, "extra": ""}):
                return False
        except (InvalidMarker, UndefinedEnvironmentName):
            return False  # a marker we cannot judge: the resolve decides
    if not parsed.specifier:
        return False
    try:
        return not parsed.specifier.contains(version, prereleases=True)
    except ValueError:
        return False
