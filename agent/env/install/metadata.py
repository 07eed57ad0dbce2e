"""The project's metadata as its own build backend wrote it (METADATA from a PEP 517 hook), read on the host.

``Requires-Dist`` and ``Provides-Extra`` say what running and testing the project needs
when the static reading cannot (dependencies computed by setup.py, ``dynamic`` in
pyproject). Markers are evaluated here for the sandbox's Python and platform, with the
extras asked for, so uv gets plain requirements; a requirement naming the project itself
(``attrs[tests]`` inside attrs) expands the project's own extras. URLs are refused.
"""

from __future__ import annotations

import configparser
import platform as host_platform
from email.parser import HeaderParser

from packaging.markers import InvalidMarker, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as Pep508
from packaging.utils import canonicalize_name
from pydantic import BaseModel, Field

from agent.env.errors import EnvError
from agent.env.read.reqlines import Requirement, parse_requirement
from agent.env.resolve.resolve import Target

MAX_REQUIRES = 2000
WHERE = "the project's build backend (METADATA)"


class BackendMetadata(BaseModel):
    """What the backend's METADATA and entry_points.txt say."""

    name: str
    version: str
    requires_dist: list[str] = Field(default_factory=list)
    provides_extra: list[str] = Field(default_factory=list)
    requires_python: str | None = None
    dist_info: str = ""
    metadata: str = ""
    entry_points: str = ""


def parse_metadata(dist_info: str, text: str, entry_points: str = "") -> BackendMetadata:
    """The METADATA text the backend wrote; EnvError when it names no project."""
    headers = HeaderParser().parsestr(text)
    name, version = (headers.get("Name") or "").strip(), (headers.get("Version") or "").strip()
    if not name or not version:
        raise EnvError("the project's build backend wrote METADATA without a Name and a Version")
    requires = [r.strip() for r in headers.get_all("Requires-Dist") or [] if r.strip()]
    if len(requires) > MAX_REQUIRES:
        raise EnvError(f"the project's METADATA lists more than {MAX_REQUIRES} requirements; refused", usage=True)
    return BackendMetadata(
        name=name, version=version, requires_dist=requires,
        provides_extra=[e.strip() for e in headers.get_all("Provides-Extra") or [] if e.strip()],
        requires_python=(headers.get("Requires-Python") or "").strip() or None,
        dist_info=dist_info, metadata=text, entry_points=entry_points,
    )


class _CaseKept(configparser.ConfigParser):
    """Entry point names keep their case (configparser lowers keys by default)."""

    def optionxform(self, optionstr: str) -> str:
        return optionstr


def entry_point_group(text: str, group: str) -> list[str]:
    """``name = target`` of each entry point of ``group`` in an entry_points.txt text (none when unreadable)."""
    parser = _CaseKept(interpolation=None, delimiters=("=",))
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    if not parser.has_section(group):
        return []
    return sorted(f"{name} = {target.strip()}" for name, target in parser.items(group))


def marker_environment(target: Target) -> dict[str, str]:
    """PEP 508's marker variables for the sandbox's interpreter (CPython on Linux)."""
    major_minor = ".".join(target.python.split(".")[:2])
    return {
        "implementation_name": "cpython",
        "implementation_version": target.python,
        "os_name": "posix",
        "platform_machine": target.platform.split("-")[0] or host_platform.machine(),
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": target.python,
        "python_version": major_minor,
        "sys_platform": "linux",
    }


def _applies(req: Pep508, environment: dict[str, str], extra: str) -> bool:
    """For no extra: a requirement without a marker, or whose marker holds here; for an extra: one
    whose marker names extras and holds for this one."""
    if req.marker is None:
        return not extra
    if extra and "extra" not in str(req.marker):
        return False
    try:
        return req.marker.evaluate({**environment, "extra": extra})
    except (InvalidMarker, UndefinedEnvironmentName) as exc:
        raise EnvError(f"{WHERE}: {req}: its marker cannot be evaluated ({exc})", usage=True) from None


def requirements(meta: BackendMetadata, extras: list[str], target: Target) -> list[Requirement]:
    """The requirements to resolve: the unconditional ones, and those of ``extras`` the project has."""
    environment = marker_environment(target)
    own = canonicalize_name(meta.name)
    parsed = []
    for text in meta.requires_dist:
        try:
            req = Pep508(text)
        except InvalidRequirement as exc:
            raise EnvError(f"{WHERE}: {text!r} is not a requirement: {exc}", usage=True) from None
        if req.url:
            raise EnvError(f"{WHERE}: {req.name} @ {req.url}: URL requirements are not allowed", usage=True)
        parsed.append(req)
    offered = {canonicalize_name(e) for e in meta.provides_extra}
    wanted = [""] + [e for e in dict.fromkeys(canonicalize_name(x) for x in extras) if e in offered]
    chosen: list[Requirement] = []
    done: set[str] = set()
    while wanted:
        extra = wanted.pop(0)
        if extra in done:
            continue
        done.add(extra)
        for req in parsed:
            if not _applies(req, environment, extra):
                continue
            if canonicalize_name(req.name) == own:  # the project's own extras: expanded, never resolved
                wanted += [canonicalize_name(e) for e in req.extras if canonicalize_name(e) in offered]
                continue
            plain = Pep508(str(req))
            plain.marker = None
            chosen.append(parse_requirement(str(plain), WHERE + (f" extra {extra}" if extra else "")))
    return chosen
