"""Which Python a task runs on, and why, in one line: the user's word > the dataset's spec > the project and its date.

1. ``--python X.Y``, the task's ``python``, or the recipes file's (in that order: the user's own word);
2. the dataset's spec for the row (SWE-bench's per-repository, per-version ``python``);
3. the project's ``requires-python`` and the task's date: the newest Python out on that day that the project
   allows; the default image's Python when it is out by then and allowed (no other image is needed).

Where the version comes from (a registered image, a Debian suite, a registry) is the sandbox images' business
(agent/containers/pythons.py); this module only wants a version and records what ran.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from agent import python_versions as versions
from agent.env.errors import EnvError

Source = Literal["flag", "task", "recipe", "dataset", "project", "default"]
DEFAULT_PYTHON = "3.11"  # the default sandbox image's (codebox-sandbox:latest, Debian bookworm)


class Wanted(BaseModel):
    """The version the chain asks for (None: the default image's, as it is) and why."""

    minor: str | None
    source: Source
    why: str
    alternatives: list[str] = []
    """The minors to take, in order, when ``minor`` is not here (no registry asked): for a choice by the task's date,
    the older ones that were out by then (newest first: the task's packages, resolved as of the date, know them),
    then the newer ones (oldest first). Empty: the nearest newer one stands in (a spec's or the user's version)."""


class PythonChoice(BaseModel):
    """What a report records: the version wanted, the one that ran, where it came from and why."""

    wanted: str | None = None
    """The X.Y the chain asked for; None: the default image's, nothing asked."""
    ran: str
    """The X.Y of the sandbox's Python."""
    source: Source = "default"
    why: str = ""
    image: str = ""
    """The sandbox image that holds it."""
    link: str = ""
    """Which source provided it: a registered image, a Debian suite, a registry, codebox's default image."""

    def line(self) -> str:
        """``python 3.9 (SWE-bench's spec ...; debian bullseye, codebox-sandbox:py3.9)``; ``spec 3.10, ran 3.11``."""
        older = self.wanted is not None and versions.key(self.ran) < versions.key(self.wanted)
        how = "the newest one here that was out by then" if older else "the nearest newer one here"
        ran = f"python {self.ran}" if self.wanted in (None, self.ran) else \
            f"python {self.ran} ({self._asker()} {self.wanted}, ran {self.ran}: {how})"
        return f"{ran}: {self.why}; from {self.link} ({self.image})"

    def _asker(self) -> str:
        return {"dataset": "spec", "project": "wanted"}.get(self.source, "asked")


def asked_version(text: str, where: str) -> str:
    """The X.Y a user named (``--python 3.9``); EnvError (usage) otherwise."""
    minor = versions.minor_of(text)
    if minor is None:
        raise EnvError(f"{where} {text!r}: expected a Python version such as 3.9", usage=True)
    return minor


def want(asked: tuple[str, Source, str] | None, spec: tuple[str, str] | None, requires_python: str | None,
         as_of: str | None, default: str = DEFAULT_PYTHON) -> Wanted:
    """The chain. ``asked``: (X.Y, source, where it was said); ``spec``: (X.Y, which spec); ``as_of``: the task's
    date (None or "now": no date)."""
    if asked is not None:
        minor, source, where = asked
        return Wanted(minor=minor, source=source, why=f"asked by {where}")
    if spec is not None:
        minor, where = spec
        return Wanted(minor=minor, source="dataset", why=where)
    return _from_project(requires_python, as_of, default)


def _from_project(requires_python: str | None, as_of: str | None, default: str) -> Wanted:
    said = f"requires-python {requires_python!r}" if requires_python else "no requires-python"
    if as_of and as_of != "now":
        day = _day_of(as_of)
        then = versions.newest_allowed_by(requires_python, day)
        if then is None:
            return Wanted(minor=None, source="default",
                          why=f"the default image's (no Python out on {day} fits {said})")
        if versions.key(default) <= versions.key(then) and versions.allows(requires_python, default):
            return Wanted(minor=None, source="default",
                          why=f"the default image's ({then} was current on {day}; {said})")
        return Wanted(minor=then, source="project", alternatives=_alternatives(then, requires_python, day),
                      why=f"the Python current on {day} ({said})")
    if versions.allows(requires_python, default):
        return Wanted(minor=None, source="default", why=f"the default image's (no date; {said})")
    allowed = [m for m in versions.RELEASED if versions.allows(requires_python, m)]
    if not allowed:
        return Wanted(minor=None, source="default", why=f"the default image's (no known Python fits {said})")
    newer = [m for m in allowed if versions.key(m) > versions.key(default)]
    if newer:  # the oldest one it allows above the default: the likeliest to be here
        return Wanted(minor=min(newer, key=versions.key), source="project", why=f"the oldest Python {said} allows")
    return Wanted(minor=max(allowed, key=versions.key), source="project", why=f"the newest Python {said} allows")


def _alternatives(then: str, requires_python: str | None, day: str) -> list[str]:
    """What stands in for ``then`` when it is not here: the older minors out on ``day`` (newest first), then the
    newer ones (oldest first), each allowed and none older than versions.OLDEST_STAND_IN (code of that age may
    not run on 3.9: below it nothing stands in, and none for a minor below it)."""
    if versions.key(then) < versions.key(versions.OLDEST_STAND_IN):
        return []
    allowed = sorted((m for m in versions.RELEASED if versions.allows(requires_python, m)
                      and versions.key(m) >= versions.key(versions.OLDEST_STAND_IN) and m != then), key=versions.key)
    older = [m for m in reversed(allowed) if versions.RELEASED[m] <= day]
    return [*older, *(m for m in allowed if versions.RELEASED[m] > day)]


def _day_of(as_of: str) -> str:
    """The last day an as-of moment includes: ``--as-of 2021-03-01`` is 2021-03-02T00:00:00Z, uploads before it."""
    import datetime as dt

    try:
        moment = dt.datetime.fromisoformat(as_of.replace("Z", "+00:00"))
    except ValueError:
        return as_of[:10]
    return (moment - dt.timedelta(seconds=1)).date().isoformat()
