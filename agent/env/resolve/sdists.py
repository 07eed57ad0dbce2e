"""Dependencies that exist only as sdists: resolved on the host without running them, built offline later.

uv would build an sdist on the host to learn its dependencies. It never does here: the packages
without a usable wheel are named to uv with ``--no-binary`` together with their metadata
(``dependency-metadata`` in a uv.toml), which this module reads statically from the downloaded
sdist (``pyproject.toml`` ``[project]``, or a PKG-INFO of Metadata-Version 2.2+ that declares
nothing dynamic). An sdist whose dependencies are only known by running it is refused, unless
the project declares that package only for development (a ``dev`` table, group or file): such a
tool is left out with a note (rich's poetry dev-dependencies name asv 0.5.1, an sdist with a
setup.py), and the tests that need it fail where everyone can see why. The build itself happens
in the network-none install container (``build.py``), from the wheelhouse.
"""

from __future__ import annotations

import re
import tarfile
import tomllib
import zipfile
from collections.abc import Callable
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as Parsed
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel

from agent.env.cancel import NEVER, Cancel
from agent.env.errors import EnvError
from agent.env.read.backend import DEFAULT_REQUIRES as DEFAULT_BUILD_REQUIRES
from agent.env.read.reqlines import Requirement, parse_requirement
from agent.env.resolve.fetch import cache_dir, fetch_pin
from agent.env.resolve.resolve import IndexConfig, Lock, NeedsSource, Pin, Target, resolve

# Each sdist-only package costs two rounds (uv names it; its metadata is read or built): requests' 2015
# requirements.txt needs 5 (py, pytest, pytest-cov, cov-core, coverage).
MAX_ROUNDS = 24
MAX_MEMBER_BYTES = 1 << 20
# Where a requirement is declared for development only: poetry's dev-dependencies and dev group, a
# [dependency-groups] or extra named dev, requirements-dev.txt.
_DEV_ONLY = re.compile(r"\bdev\b")


class SdistMeta(BaseModel):
    """What an sdist declares, read without running it (or from the wheel a box built of it: ``wheel``)."""

    requires_dist: list[str]
    build_requires: list[str]
    wheel: Pin | None = None  # the wheel built from a dynamic sdist (install/sdist_wheel.py): it replaces the sdist


# The wheel of a dynamic sdist, built in a box (install/candidate_lock.py gives it): its pin, file, build requires.
BuildDynamic = Callable[[Pin, Path, list[str]], SdistMeta]


class DynamicSdist(EnvError):
    """A package with no wheel for the sandbox whose sdist declares its dependencies dynamically."""

    def __init__(self, pin: Pin, build_requires: list[str] | None = None) -> None:
        self.build_requires = list(build_requires or [])
        super().__init__(f"{pin.name} {pin.version} has no wheel for the sandbox and its sdist declares its "
                         "dependencies dynamically (only running it would tell them); codebox does not run "
                         "package code on the host: use an --image that has it", usage=True)
        self.pin = pin


def resolve_with_sdists(requirements: list[Requirement], target: Target, index: IndexConfig,
                        cancel: Cancel = NEVER, exclude_newer: str | None = None,
                        notes: list[str] | None = None, build_dynamic: BuildDynamic | None = None) -> Lock:
    """The lock, wheels where there are wheels, sdists (read statically) only where there are none; an sdist
    whose metadata is dynamic built into a wheel by ``build_dynamic`` (in a box), else refused, and when it is
    a development-only requirement, left out, said in ``notes``."""
    while True:
        try:
            return _resolve_rounds(requirements, target, index, cancel, exclude_newer, build_dynamic)
        except DynamicSdist as exc:
            name = canonicalize_name(exc.pin.name)
            declared = [r for r in requirements if r.name == name]
            if not declared or not all(_DEV_ONLY.search(r.source) for r in declared):
                raise
            requirements = [r for r in requirements if r.name != name]
            where = ", ".join(dict.fromkeys(r.source for r in declared))
            (notes if notes is not None else []).append(
                f"{exc.pin.name} {exc.pin.version} (declared for development only: {where}) left out: it has no "
                "wheel for the sandbox and its sdist declares its dependencies dynamically (codebox does not run "
                "package code on the host)")


def _resolve_rounds(requirements: list[Requirement], target: Target, index: IndexConfig,
                    cancel: Cancel, exclude_newer: str | None, build_dynamic: BuildDynamic | None) -> Lock:
    known: dict[str, SdistMeta | None] = {}  # name -> its metadata, None while unread
    for _ in range(MAX_ROUNDS):
        try:
            lock = resolve(requirements, target, index, _uv_metadata(known), cancel, exclude_newer)
        except NeedsSource as exc:
            new = [n for n in exc.names if canonicalize_name(n) not in known]
            if not new:
                raise
            known.update({canonicalize_name(n): None for n in new})
            continue
        unread = [p for p in lock.pins if p.sdist and known.get(canonicalize_name(p.name)) is None]
        if not unread:
            return _with_build_requires(lock, known)
        for pin in unread:
            path = fetch_pin(pin, cache_dir() / "wheels", cancel)
            try:
                known[canonicalize_name(pin.name)] = read_sdist(path, pin)
            except DynamicSdist as exc:
                if build_dynamic is None:
                    raise
                known[canonicalize_name(pin.name)] = build_dynamic(pin, path, exc.build_requires)
    raise EnvError(f"resolving sdist-only dependencies did not settle in {MAX_ROUNDS} rounds "
                   f"({', '.join(sorted(known))})", usage=True)


def _uv_metadata(known: dict[str, SdistMeta | None]) -> dict[str, list[str]]:
    """For uv: each sdist-only package with its dependencies (none yet while unread: uv only
    picks its version then, and the round after resolves with what the sdist declares)."""
    return {name: (meta.requires_dist if meta else []) for name, meta in known.items()}


def _with_build_requires(lock: Lock, known: dict[str, SdistMeta | None]) -> Lock:
    pins = []
    for pin in lock.pins:
        meta = known.get(canonicalize_name(pin.name)) if pin.sdist else None
        if meta is not None and meta.wheel is not None:
            pins.append(meta.wheel)
        else:
            pins.append(pin.model_copy(update={"build_requires": meta.build_requires}) if meta else pin)
    return Lock(pins=pins, undated=lock.undated)


def build_requirements(lock: Lock) -> list[Requirement]:
    """What building the lock's sdists needs, for a wheels-only resolve (deduplicated)."""
    seen: dict[str, Requirement] = {}
    for pin in lock.pins:
        for text in pin.build_requires:
            seen.setdefault(text, parse_requirement(text, f"{pin.filename} [build-system] requires"))
    return list(seen.values())


def read_sdist(path: Path, pin: Pin) -> SdistMeta:
    """The sdist's dependencies and build requirements, from its pyproject.toml or PKG-INFO."""
    members = _members(path)
    pyproject_text, pkg_info = members.get("pyproject.toml"), members.get("PKG-INFO")
    pyproject = _toml(pyproject_text, pin) if pyproject_text else {}
    build = (pyproject.get("build-system") or {}).get("requires")
    build_requires = [str(r) for r in build] if isinstance(build, list) else list(DEFAULT_BUILD_REQUIRES)
    project = pyproject.get("project")
    if isinstance(project, dict) and "dependencies" not in (project.get("dynamic") or []) and \
            "optional-dependencies" not in (project.get("dynamic") or []):
        requires = _from_project(project, pin)
    elif pkg_info and _static_pkg_info(pkg_info):
        requires = HeaderParser().parsestr(pkg_info).get_all("Requires-Dist") or []
    else:
        raise DynamicSdist(pin, [*build_requires, *setup_requires(members, pin)])
    for text in [*requires, *build_requires]:
        _check_requirement(text, pin)
    return SdistMeta(requires_dist=[str(r) for r in requires], build_requires=build_requires)


def setup_requires(members: dict[str, str], pin: Pin) -> list[str]:
    """What a legacy setup.py asks its build for beyond ``[build-system]`` (``setup_requires``: iniconfig 1.0's
    setuptools-scm; setuptools' get_requires_for_build_wheel returns it), read statically from setup.py and
    setup.cfg, never run."""
    import tempfile

    from agent.env.read.safe_read import parse_ini
    from agent.env.read.setup_py import read_setup_py

    found: list[str] = []
    with tempfile.TemporaryDirectory(prefix="codebox-sdist-setup-") as tmp:
        folder = Path(tmp)
        for name in ("setup.py", "setup.cfg"):
            if name in members:
                (folder / name).write_text(members[name], encoding="utf-8")
        try:
            setup = read_setup_py(folder) if "setup.py" in members else None
            cfg = parse_ini(members["setup.cfg"], "setup.cfg") if "setup.cfg" in members else None
        except EnvError:
            return []  # unreadable: the build says what it misses
    value = setup.values.get("setup_requires") if setup is not None else None
    if isinstance(value, str):
        value = value.splitlines()
    if isinstance(value, list | tuple):
        found += [v.strip() for v in value if isinstance(v, str) and v.strip()]
    if cfg is not None and cfg.has_option("options", "setup_requires"):
        found += [line.strip() for line in cfg.get("options", "setup_requires").splitlines() if line.strip()]
    return [str(_check_requirement(text, pin)) for text in found]


def _members(path: Path) -> dict[str, str]:
    """The top folder's pyproject.toml, PKG-INFO, setup.py and setup.cfg (small text files only)."""
    found: dict[str, str] = {}
    try:
        if path.name.endswith(".zip"):
            with zipfile.ZipFile(path) as archive:
                for zinfo in archive.infolist():
                    name = _top_level_name(zinfo.filename)
                    if name and zinfo.file_size <= MAX_MEMBER_BYTES:
                        found.setdefault(name, archive.read(zinfo).decode("utf-8", "replace"))
        else:
            with tarfile.open(path) as archive:
                for member in archive:
                    name = _top_level_name(member.name)
                    if name and member.isfile() and member.size <= MAX_MEMBER_BYTES:
                        data = archive.extractfile(member)
                        if data is not None:
                            found.setdefault(name, data.read().decode("utf-8", "replace"))
    except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError) as exc:
        raise EnvError(f"cannot read the sdist {path.name}: {exc}", usage=True) from exc
    return found


def _top_level_name(member: str) -> str | None:
    parts = member.strip("/").split("/")
    return parts[1] if len(parts) == 2 and parts[1] in ("pyproject.toml", "PKG-INFO", "setup.py", "setup.cfg") else None


def _toml(text: str, pin: Pin) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EnvError(f"the sdist of {pin.name} {pin.version} has a broken pyproject.toml: {exc}",
                       usage=True) from None


def _from_project(project: dict[str, Any], pin: Pin) -> list[str]:
    """``[project]`` dependencies, and optional ones as ``extra == "name"`` markers (PEP 621 -> Requires-Dist)."""
    texts = [str(t) for t in project.get("dependencies") or []]
    optional = project.get("optional-dependencies") or {}
    if not isinstance(optional, dict):
        raise EnvError(f"the sdist of {pin.name}: [project] optional-dependencies is not a table", usage=True)
    for extra, reqs in optional.items():
        for text in reqs or []:
            req = _check_requirement(str(text), pin)
            marker = f"({req.marker}) and extra == {str(extra)!r}" if req.marker else f"extra == {str(extra)!r}"
            req.marker = Marker(marker)
            texts.append(str(req))
    return texts


def _static_pkg_info(text: str) -> bool:
    """PKG-INFO 2.2+ with no dependency field marked Dynamic is authoritative (PEP 643)."""
    headers = HeaderParser().parsestr(text)
    try:
        version = Version(headers.get("Metadata-Version", "0"))
    except InvalidVersion:
        return False
    dynamic = {d.strip().lower() for d in headers.get_all("Dynamic") or []}
    return version >= Version("2.2") and not dynamic & {"requires-dist", "provides-extra"}


def checked_requires(texts: list[str], pin: Pin) -> list[str]:
    """``texts`` (a built wheel's Requires-Dist), each a named requirement; EnvError (usage) on one that is not."""
    return [str(_check_requirement(text, pin)) for text in texts]


def _check_requirement(text: str, pin: Pin) -> Parsed:
    """A named requirement (no URL: the index is the only place anything comes from)."""
    try:
        req = Parsed(text)
    except InvalidRequirement as exc:
        raise EnvError(f"the sdist of {pin.name} {pin.version} declares a bad requirement {text!r}: {exc}",
                       usage=True) from None
    if req.url:
        raise EnvError(f"the sdist of {pin.name} {pin.version} requires {text!r} by URL; refused", usage=True)
    return req

