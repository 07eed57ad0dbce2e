"""A pinned version with no wheel for this Python, moved to the nearest release that has one.

A dataset's spec pins versions for its own Python (SWE-bench's xarray 0.12: ``numpy==1.23.0`` for 3.10).
When another Python stands in (3.11, since no Debian suite ships 3.10), such a pin may have no wheel for it,
and dropping it leaves the row's date to choose (numpy 1.19.1, compiled from source for 3.11, which fails).
The spec's intent is the release series, not its patch number: the lowest release at or above the pin in the
same series (``1.23.*``) with a wheel for this Python is taken (numpy 1.23.2). Only within the series: a pin
with no wheel in it (an sdist-only package, docopt 0.6.2; pyyaml 5.3 on Linux) stays, and is built offline
as before; except when the Python is a stand-in for the one the pins were made for and the pin had a wheel
for that one (a compiled package): then the nearest newer release with a wheel is taken from any series
(astropy 1.3's spec, made for 3.6, pins numpy 1.16.0, whose series has no wheel for 3.9, the Python that stands
in: numpy 1.19.3, the first with one; its pytest-astropy 0.2.1, an sdist only, stays). Asked of uv with
no dependencies (one question for all the pins, one or two per pin moved): what the resolve around it makes
of the new pin is the resolve's business.
"""

from __future__ import annotations

from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as Pep508
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from agent.env.cancel import NEVER, Cancel
from agent.env.errors import EnvError
from agent.env.read.reqlines import Requirement
from agent.env.resolve.resolve import IndexConfig, NeedsSource, Target, no_wheel_names, resolve

_WHEEL_ONLY = ("--no-deps",)
_LOWEST = ("--no-deps", "--resolution", "lowest")


def exact_version(requirement: Requirement) -> str | None:
    """``V`` of a requirement that is ``name==V`` and nothing else (no extras, no marker), else None."""
    try:
        parsed = Pep508(requirement.text)
    except InvalidRequirement:
        return None
    specs = list(parsed.specifier)
    if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version or parsed.extras or parsed.marker:
        return None
    return specs[0].version


def without_wheels(pins: list[Requirement], target: Target, index: IndexConfig, cancel: Cancel = NEVER) -> list[str]:
    """The names among ``pins`` (exact pins) that have no wheel for ``target``: uv names one per answer."""
    left = list(pins)
    found: list[str] = []
    while left:
        try:
            resolve(left, target, index, cancel=cancel, options=_WHEEL_ONLY)
            return found
        except EnvError as exc:  # NeedsSource when there is an sdist; else uv's "no wheels with a matching ... tag"
            names = exc.names if isinstance(exc, NeedsSource) else no_wheel_names(str(exc))
            wheelless = {canonicalize_name(n) for n in names}
            named = [r for r in left if canonicalize_name(r.name) in wheelless]
            if not named:
                return found
            found += [r.name for r in named]
            left = [r for r in left if r not in named]
    return found


def nearest_release(pin: Requirement, target: Target, index: IndexConfig, cancel: Cancel = NEVER,
                    across_series: bool = False) -> str | None:
    """The lowest version of ``pin``'s series (``1.23.*``) at or above its own with a wheel for ``target``; with
    ``across_series``, else the lowest newer one at all; None if none."""
    version = exact_version(pin)
    if version is None:
        return None
    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    series = ".".join(str(part) for part in parsed.release[:2])
    asked = [f"{pin.name}>={version},=={series}.*", *([f"{pin.name}>={version}"] if across_series else [])]
    for text in asked:
        try:
            lock = resolve([Requirement(text=text, name=pin.name, source=pin.source)], target, index, cancel=cancel,
                           options=_LOWEST)
        except EnvError:
            continue
        got = [p.version for p in lock.pins if canonicalize_name(p.name) == canonicalize_name(pin.name)]
        if got and got[0] != version:
            return got[0]
    return None


def moved_pins(pins: list[Requirement], target: Target, index: IndexConfig, cancel: Cancel = NEVER,
               made_for: str | None = None) -> tuple[dict[str, Requirement], list[str]]:
    """For each exact pin in ``pins`` with no wheel for ``target``: its nearest release that has one (see
    ``nearest_release``), as a requirement from the same source (keyed by the old text), and a note that says so.
    ``made_for``: the Python the pins were made for, when ``target``'s stands in for it; a pin with a wheel for that
    one (a compiled package, not an sdist-only one: pytest-astropy 0.2.1) may then move to another series."""
    exact = [p for p in pins if exact_version(p) is not None]
    moved: dict[str, Requirement] = {}
    notes: list[str] = []
    minor = ".".join(target.python.split(".")[:2])
    missing = without_wheels(exact, target, index, cancel)
    binary: set[str] = set()
    if made_for and missing:
        asked = [p for p in exact if p.name in missing]
        there = target.model_copy(update={"python": made_for})
        binary = set(missing) - set(without_wheels(asked, there, index, cancel))
    for name in missing:
        pin = next(p for p in exact if p.name == name)
        version = nearest_release(pin, target, index, cancel, across_series=name in binary)
        if version is None:
            continue
        moved[pin.text] = Requirement(text=f"{pin.name}=={version}", name=pin.name, source=pin.source)
        notes.append(f"preferred {pin.text}, ran {pin.name}=={version} on Python {minor}: the nearest release "
                     f"with a wheel for it")
    return moved, notes
