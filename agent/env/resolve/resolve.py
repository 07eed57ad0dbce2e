"""Resolve declared requirements into a lock, on the host, with uv: binary wheels, for the
sandbox image's Python and platform (not the host's). Nothing is built or run here: an sdist is
allowed only for the packages ``sdists.py`` names together with their statically read metadata.

``uv pip compile --format pylock.toml`` gives every pinned package with the URL and sha256 of
the wheels that fit the target; ``fetch.py`` downloads exactly those.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import BaseModel, Field

from agent.env.cancel import NEVER, Cancel, run_process
from agent.env.errors import EnvError
from agent.env.read.reqlines import Requirement
from agent.env.resolve.prefer import exact_version

RESOLVE_TIMEOUT_S = 300.0
# The variables by which a user names indexes to uv (which reads them from the environment we pass on).
USER_INDEX_VARIABLES = ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_INDEX")


class Target(BaseModel):
    """The interpreter the environment is for: the sandbox image's python3."""

    python: str  # full version, e.g. "3.11.2"
    platform: str  # uv's --python-platform, e.g. "x86_64-manylinux_2_36"
    headers: bool = True  # Python.h is there (building C extensions needs it)
    # The interpreter itself, resolved to an absolute path before anything ran in a box of the image, and not
    # writable by the build user: what codebox's own steps in a box run (with -I -S). "": not probed.
    executable: str = ""
    # The image's Debian release (/etc/os-release's VERSION_CODENAME): where its Debian packages come from. "":
    # not Debian, or not probed (the host's release is assumed).
    debian: str = ""


class IndexConfig(BaseModel):
    """Where wheels come from: the configured index (uv's default or UV_INDEX_URL), or local folders."""

    find_links: list[str] = Field(default_factory=list)
    no_index: bool = False

    @classmethod
    def from_environ(cls) -> IndexConfig:
        """``CODEBOX_FIND_LINKS`` (folders, ``:``-separated) and ``CODEBOX_NO_INDEX=1``: offline use."""
        links = [p for p in os.environ.get("CODEBOX_FIND_LINKS", "").split(os.pathsep) if p]
        return cls(find_links=links, no_index=os.environ.get("CODEBOX_NO_INDEX") == "1")

    def uv_args(self) -> list[str]:
        args = ["--no-index"] if self.no_index else []
        for folder in self.find_links:
            args += ["--find-links", folder]
        return args

    @staticmethod
    def user_indexes() -> dict[str, str]:
        """The index URLs the user gave uv in the environment (uv reads them itself), by variable.

        A repository's private index counts as configured by the user when it is one of these.
        """
        found: dict[str, str] = {}
        for variable in USER_INDEX_VARIABLES:
            for index, value in enumerate(os.environ.get(variable, "").split()):
                url = value.partition("=")[2] if variable == "UV_INDEX" and "=" in value.split("://")[0] else value
                if url:
                    found[url] = variable if index == 0 else f"{variable} (entry {index + 1})"
        return found


class Pin(BaseModel):
    name: str
    version: str
    url: str
    sha256: str
    sdist: bool = False  # no wheel fits: built offline in the install container
    build_requires: list[str] = Field(default_factory=list)  # an sdist's [build-system] requires
    uploaded: str | None = None  # the file's upload time on the index (RFC 3339 UTC), when the lock says it

    @property
    def filename(self) -> str:
        return self.url.rsplit("/", 1)[-1]


class Lock(BaseModel):
    """The resolved set: one wheel per package, each with its URL and sha256."""

    pins: list[Pin]
    # Packages with no version as of the date (their history deleted: atomicwrites before 1.4.1), taken from
    # the first versions after it (see resolve).
    undated: list[str] = Field(default_factory=list)

    def requirements_txt(self) -> str:
        return "".join(f"{p.name}=={p.version}\n" for p in self.pins)

    def hashed_txt(self) -> str:
        """The lock as installed: each pin with its file's sha256 (uv checks every file against it)."""
        return "".join(f"{p.name}=={p.version} --hash=sha256:{p.sha256}\n" for p in self.pins)

    def digest(self) -> str:
        """A hash of exactly what is installed (names, versions, files)."""
        import hashlib

        text = "".join(f"{p.name} {p.version} {p.sha256} {int(p.sdist)}\n" for p in sorted(
            self.pins, key=lambda p: p.name))
        return hashlib.sha256(text.encode()).hexdigest()

    def installed(self) -> list[str]:
        return [f"{p.name}=={p.version}" for p in self.pins]

    def sdists(self) -> list[Pin]:
        return [p for p in self.pins if p.sdist]


class NeedsSource(EnvError):
    """uv found no usable wheel for ``names`` (they may have sdists)."""

    def __init__(self, message: str, names: list[str]) -> None:
        super().__init__(message, usage=True)
        self.names = names


def uv_binary() -> str:
    """The uv executable shipped by the ``uv`` wheel (a dependency of codebox)."""
    try:
        from uv import find_uv_bin
    except ImportError as exc:
        raise EnvError("uv is not installed; `pip install uv` (a codebox dependency)") from exc
    return str(find_uv_bin())


def check_python(requires_python: str | None, target: Target, image: str) -> str | None:
    """EnvError (usage) when the image's Python is outside the project's requires-python; a note when the
    requires-python is no valid specifier, which is ignored then, as pip ignores it (semver's 2022
    ``>=3.7.*``, a wildcard today's packaging refuses and the setuptools of its day accepted)."""
    if not requires_python:
        return None
    try:
        spec = SpecifierSet(requires_python)
    except InvalidSpecifier:
        return f"requires-python {requires_python!r} is not a valid version specifier: ignored, as pip ignores it"
    if not spec.contains(target.python, prereleases=True):
        raise EnvError(
            f"the project requires Python {requires_python}, but the sandbox image {image} has Python "
            f"{target.python}; pass --image with a Python that fits (any image with python3 works as a base)",
            usage=True,
        )
    return None


def resolve(requirements: list[Requirement], target: Target, index: IndexConfig,
            sdist_metadata: dict[str, list[str]] | None = None, cancel: Cancel = NEVER,
            exclude_newer: str | None = None, options: tuple[str, ...] = ()) -> Lock:
    """Run ``uv pip compile`` for ``target``; EnvError (usage) naming what could not be resolved.

    ``exclude_newer`` (an RFC 3339 timestamp): only files uploaded before it, so an old commit
    gets the versions of its day (``asof.py``).

    ``sdist_metadata``: packages allowed as sdists, each with its Requires-Dist, given to uv so
    that it never builds one to learn them. NeedsSource when a package has no usable wheel.
    ``options``: more of uv's (``--no-deps``, ``--resolution lowest``: nearest.py's questions).
    A cancel kills uv (its whole process group) and raises EnvCancelled.
    """
    undated: list[str] = []
    for _ in range(MAX_UNDATED + 1):
        try:
            lock = _compile(requirements, target, index, sdist_metadata, cancel, exclude_newer, undated, options)
            return lock.model_copy(update={"undated": undated})
        except _NoVersions as exc:
            if not exclude_newer or set(exc.names) <= set(undated) or len(undated) >= MAX_UNDATED:
                raise EnvError(str(exc), usage=True) from None
            undated += [n for n in exc.names if n not in undated]
    raise AssertionError("unreachable")


# A package with no version as of the date is taken from the versions after it, this many at most per resolve.
MAX_UNDATED = 5


class _NoVersions(EnvError):
    """uv found no version at all of ``names`` as of the date."""

    def __init__(self, message: str, names: list[str]) -> None:
        super().__init__(message, usage=True)
        self.names = names


def _compile(requirements: list[Requirement], target: Target, index: IndexConfig,
             sdist_metadata: dict[str, list[str]] | None, cancel: Cancel, exclude_newer: str | None,
             undated: list[str], options: tuple[str, ...] = ()) -> Lock:
    import tempfile  # here: a cache hit imports this module (IndexConfig), never resolves

    with tempfile.TemporaryDirectory(prefix="codebox-resolve-") as tmp:
        source = Path(tmp, "requirements.in")
        source.write_text("".join(r.text + "\n" for r in requirements), encoding="utf-8")
        cmd = [
            uv_binary(), "pip", "compile", str(source), "-o", str(Path(tmp, "pylock.toml")),
            *_interpreter_args(), "--python-version", target.python, "--python-platform", target.platform,
            "--only-binary", ":all:", "--no-config", "--quiet", "--no-header", *index.uv_args(),
            *_sdist_args(sdist_metadata or {}, Path(tmp)),
            *(["--exclude-newer", exclude_newer, *_pinned_whatever_the_date(requirements, undated)]
              if exclude_newer else []),
            *options,
        ]
        try:  # cwd: an empty folder, so no uv.toml or pyproject of anyone else's is read
            proc = run_process(cmd, cancel, RESOLVE_TIMEOUT_S, cwd=tmp, errors="replace", env=_uv_env(),
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise EnvError(f"resolving took longer than {RESOLVE_TIMEOUT_S:g} s (is the package index reachable?)"
                           ) from None
        if proc.returncode != 0:
            names = re.findall(r"Wheels are required for `([^`]+)`", proc.stderr)
            if names:
                raise NeedsSource(_explain(proc.stderr, requirements), names)
            missing = re.findall(r"there (?:are|is) no versions of `?([A-Za-z0-9][A-Za-z0-9._-]*)", proc.stderr)
            if missing:
                raise _NoVersions(_explain(proc.stderr, requirements), [m.lower().rstrip(".") for m in missing])
            raise EnvError(_explain(proc.stderr, requirements), usage=_is_unsatisfiable(proc.stderr))
        return parse_pylock(Path(tmp, "pylock.toml").read_text(encoding="utf-8"))


RECIPE_PIP = "the recipe's pip"  # the source of a recipe's packages (a --pip flag)
PREFERRED = "the recipe's prefer"  # a recipe's preferred versions (a dataset spec's pip_packages)


def _pinned_whatever_the_date(requirements: list[Requirement], undated: tuple[str, ...] | list[str] = ()) -> list[str]:
    """uv's arguments that take a recipe's exact pin (``attrs==23.1.0``) whatever the as-of date: the recipe named
    that version (SWE-bench's specs pin versions newer than their rows' dates); and the ``undated`` packages (no
    version as of the date: see resolve)."""
    args: list[str] = []
    for requirement in requirements:
        if requirement.source in (RECIPE_PIP, PREFERRED) and exact_version(requirement.text) is not None:
            args += ["--exclude-newer-package", f"{requirement.name}=false"]
    return args + [arg for name in undated if f"{name}=false" not in args
                   for arg in ("--exclude-newer-package", f"{name}=false")]


def _interpreter_args() -> list[str]:
    """``--python`` naming codebox's own interpreter. The resolve is for ``--python-version`` and
    ``--python-platform`` alone; without an interpreter named, uv searches virtual environments, its
    managed installs and PATH for one of the target's exact version (0.4-0.6 s per resolve here)."""
    return ["--python", sys.executable] if sys.executable else []


def _sdist_args(metadata: dict[str, list[str]], folder: Path) -> list[str]:
    """``--no-binary NAME`` for each sdist-only package, and a uv.toml giving uv their metadata
    (``dependency-metadata``): with it uv picks the sdist without building it."""
    if not metadata:
        return []
    entries = "".join(f"[[dependency-metadata]]\nname = {json.dumps(name)}\nrequires-dist = {json.dumps(reqs)}\n\n"
                      for name, reqs in sorted(metadata.items()))
    config = folder / "uv.toml"
    config.write_text(entries, encoding="utf-8")
    args = ["--config-file", str(config)]
    for name in sorted(metadata):
        args += ["--no-binary", name]
    return args


def _uv_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("UV_NO_PROGRESS", "1")
    env["NO_COLOR"] = "1"
    return env


def _is_unsatisfiable(stderr: str) -> bool:
    return "No solution found" in stderr or "not found in" in stderr or "no usable wheels" in stderr.lower()


def _explain(stderr: str, requirements: list[Requirement]) -> str:
    """One line: what could not be resolved, where it was declared, and uv's reason."""
    text = " ".join(stderr.replace("╰─▶", " ").replace("\u00d7", " ").split())
    match = re.search(r"Because .*?(?:unsatisfiable\.|$)", text)
    reason = (match.group(0) if match else text)[:400]
    mentioned = [r for r in requirements if re.search(rf"(?<![\w.-]){re.escape(r.name)}(?![\w-])", text.lower())]
    where = "; ".join(f"{r.text} (declared in {r.source})" for r in mentioned[:3])
    wheelless = no_wheel_names(stderr)
    if wheelless:  # name the package whose wheel is missing, not the declared one that pulls it in
        head = f"no usable wheel of {', '.join(wheelless)} for the sandbox's Python and platform"
        return f"{head}{f' (needed by {where})' if where else ''}: {reason}"
    head = f"cannot resolve {where}" if where else "cannot resolve the declared requirements"
    return f"{head}: {reason}"


_NO_WHEEL = (r"(?:^|[\s,(])([A-Za-z0-9][A-Za-z0-9_.-]*)(?:[<>=!~]=?[^\s,]*)? "
             r"has no (?:usable wheels|wheels with a matching)")


def no_wheel_names(stderr: str) -> list[str]:
    """The packages uv says have no wheel for the target: its hint, or its reason's "has no usable wheels" /
    "has no wheels with a matching Python ABI tag"."""
    text = " ".join(stderr.split())
    names = re.findall(r"Wheels are required for `([^`]+)`", text)
    names += re.findall(_NO_WHEEL, text)
    return list(dict.fromkeys(n.lower() for n in names))


def parse_pylock(text: str) -> Lock:
    data = tomllib.loads(text)
    pins = []
    for package in data.get("packages", []):
        wheels = package.get("wheels") or []
        entry = wheels[0] if wheels else package.get("sdist")
        if not isinstance(entry, dict):
            raise EnvError(f"the lock has neither a wheel nor an sdist for {package.get('name')}")
        sha256 = (entry.get("hashes") or {}).get("sha256")
        url = entry.get("url") or entry.get("path")
        if not sha256 or not url:
            raise EnvError(f"the lock gives no URL or sha256 for {package.get('name')}")
        pins.append(Pin(name=package["name"], version=str(package["version"]), url=str(url), sha256=sha256,
                        sdist=not wheels, uploaded=_utc(entry.get("upload-time"))))
    return Lock(pins=sorted(pins, key=lambda p: p.name))


def _utc(value: object) -> str | None:
    """A lock's ``upload-time`` (TOML reads a datetime) as RFC 3339 UTC, the as-of dates' form; None if absent."""
    import datetime as dt

    if not isinstance(value, dt.datetime):
        return None
    moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def past_the_date(lock: Lock, requirements: list[Requirement], exclude_newer: str | None) -> list[str]:
    """One note per exact recipe pin (a spec's ``pip_packages``, a ``--pip``) taken though its file is newer than the
    as-of date: the pin names that release, so the date does not hold it back (``_pinned_whatever_the_date``)."""
    if not exclude_newer:
        return []
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    def same(a: str, b: str) -> bool:
        try:
            return Version(a) == Version(b)
        except InvalidVersion:
            return a == b

    exact = {canonicalize_name(r.name): (r, version) for r in requirements if r.source in (RECIPE_PIP, PREFERRED)
             and (version := exact_version(r.text)) is not None}
    notes = []
    for pin in lock.pins:
        named = exact.get(canonicalize_name(pin.name))
        if named and same(pin.version, named[1]) and pin.uploaded and pin.uploaded > exclude_newer:
            notes.append(f"{named[0].text} ({named[0].source}): uploaded {pin.uploaded[:10]}, after the as-of date "
                         f"{exclude_newer[:10]}; taken all the same, as an exact pin names its release")
    return notes
