"""One requirement (PEP 508, names and versions only) and requirements files: parsed, never run.

Options that name another index or location (``-i``/``--index-url``, ``--extra-index-url``,
``-f``/``--find-links``) are never followed: each becomes a named package source
(``sources.PackageSource``) serving the packages of that file and the files it includes, and
``source_policy`` decides whether those may come from the user's index. A ``name @ URL``
requirement is such a source for its one package. ``--trusted-host`` and ``--no-index`` are noted
and ignored. Refused, with the file and line: paths (``./pkg``, ``-e ../x``), bare URLs and
unknown options. ``-e .`` / ``.[test]`` mean the project itself and are kept as a self-reference, as
are pip-compile's ``file:.`` / ``-e file:.`` (with an ``#egg=name`` fragment or not).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as Pep508
from packaging.utils import canonicalize_name
from pydantic import BaseModel, Field

from agent.env.errors import EnvError
from agent.env.read.safe_read import inside, read_text
from agent.env.read.sources import PackageSource, source, url_kind

MAX_INCLUDE_DEPTH = 5
MAX_REQUIREMENTS = 2000
# Options that name another index or location: named as a package source, never followed.
_SOURCE_OPTIONS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links")
# Options that change nothing we rely on (hashes are checked against the lock's own; the index is the user's).
_IGNORED_OPTIONS = ("--pre", "--prefer-binary", "--only-binary", "--no-binary", "--use-feature", "--require-hashes",
                    "--trusted-host", "--no-index")
# Short options pip also takes glued to their value (``-rrequirements.txt``, ``-e.``).
_SHORT_WITH_VALUE = ("-r", "-c", "-e", "-i", "-f")
_SELF = re.compile(r"^(?:file:)?\./?(?:\[([A-Za-z0-9_.,\s-]*)\])?(?:#egg=[A-Za-z0-9_.-]+)?$")
_HASH = re.compile(r"\s--hash[=\s]\S+")


class Requirement(BaseModel):
    """A requirement and where it was declared (file and table, or file and line)."""

    text: str
    name: str
    source: str


class SelfReference(BaseModel):
    """``.[extra]`` / ``-e .`` or ``project[extra]``: the project's own extras, expanded, never resolved."""

    extras: list[str] = Field(default_factory=list)
    source: str


def _pep508(text: str, source: str) -> Pep508:
    try:
        return Pep508(text)
    except InvalidRequirement as exc:
        reason = str(exc).splitlines()[0]
        raise EnvError(f"{source}: {text.strip()[:200]!r} is not a requirement: {reason} "
                       "(paths and URLs are not allowed)", usage=True) from None


def parse_requirement(text: str, source: str) -> Requirement:
    """A requirement by name; EnvError (usage) for anything else, a ``name @ URL`` included."""
    req = _pep508(text, source)
    if req.url:
        raise EnvError(f"{source}: {req.name} @ {req.url}: URL requirements are not allowed; "
                       "codebox resolves names from its package index only", usage=True)
    return Requirement(text=str(req), name=canonicalize_name(req.name), source=source)


def parse_declared(text: str, where: str) -> tuple[Requirement, PackageSource | None]:
    """A requirement a project declares: a ``name @ URL`` is its name, with the URL as its source."""
    req = _pep508(text, where)
    if not req.url:
        return Requirement(text=str(req), name=canonicalize_name(req.name), source=where), None
    url = req.url
    req.url = None
    named = source(req.name, "git" if url.startswith("git+") else "url", url, where, [req.name])
    return Requirement(text=str(req), name=canonicalize_name(req.name), source=where), named


def _self_reference(text: str, source: str) -> SelfReference | None:
    match = _SELF.match(text.strip())
    if match is None:
        return None
    extras = [e.strip() for e in (match.group(1) or "").split(",") if e.strip()]
    return SelfReference(extras=extras, source=source)


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, line) with comments removed and backslash continuations joined (pip's and
    tox's reading of a requirements list alike)."""
    lines: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            lines.append((start, line))
    return lines


class RequirementsFile:
    """Everything a requirements file (and the files it includes with -r) declares."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.requirements: list[Requirement] = []
        self.self_refs: list[SelfReference] = []
        self.notes: list[str] = []
        self.files: list[str] = []
        self.sources: list[PackageSource] = []
        self._pending: list[PackageSource] = []  # sources of the file tree being read
        self._marker: str | None = None  # a condition on every requirement of the block being read
        self._read: set[tuple[str, str | None]] = set()  # (file, marker) pairs read

    def read(self, relative: str, depth: int = 0) -> None:
        """Read a requirements file (and its -r includes); a missing file is an error."""
        if depth > MAX_INCLUDE_DEPTH:
            raise EnvError(f"{relative}: -r includes nested more than {MAX_INCLUDE_DEPTH} deep; refused", usage=True)
        if (relative, None) in self._read or (relative, self._marker) in self._read:
            return
        text = read_text(self.repo, relative)
        if text is None:
            raise EnvError(f"{relative}: no such requirements file", usage=True)
        self._read.add((relative, self._marker))
        if relative not in self.files:
            self.files.append(relative)
        lines = [(f"{relative}:{number}", line) for number, line in logical_lines(text)]
        self._tree(lambda: self._lines(lines, str(Path(relative).parent), depth), depth)

    def read_lines(self, lines: list[tuple[str, str]], base: str = ".",
                   sources: list[PackageSource] | None = None, marker: str | None = None) -> None:
        """Lines of a requirements block kept elsewhere (tox's deps), each with its own ``where``;
        ``-r`` paths are relative to ``base`` (a folder of the repo). ``sources`` (named outside the
        lines, like tox's setenv) serve the packages of the block, as its own options would.
        ``marker`` (PEP 508) is added to every requirement of the block and of the files it includes
        (tox's deps for one Python: ``python_version == "3.3"``)."""
        self._marker = marker
        try:
            self._tree(lambda: self._lines(lines, base, 0), 0, sources or [])
        finally:
            self._marker = None

    def _tree(self, read: Callable[[], None], depth: int, sources: list[PackageSource] | None = None) -> None:
        """Run ``read``; at the top of a file tree, its sources serve every package the tree declared."""
        if depth > 0:
            read()
            return
        start, self._pending = len(self.requirements), list(sources or [])
        read()
        names = sorted({r.name for r in self.requirements[start:]})
        for found in self._pending:
            self.sources.append(found.model_copy(update={"packages": names}))
        self._pending = []

    def _lines(self, lines: list[tuple[str, str]], base: str, depth: int) -> None:
        for where, line in lines:
            self._line(where, line, base, depth)
            if len(self.requirements) > MAX_REQUIREMENTS:
                raise EnvError(f"{where}: more than {MAX_REQUIREMENTS} requirements; refused", usage=True)

    def _line(self, where: str, line: str, base: str, depth: int) -> None:
        if line.startswith("-"):
            self._option(where, line, base, depth)
            return
        line = _HASH.sub("", " " + line).strip()
        ref = _self_reference(line, where)
        if ref is not None:
            self.self_refs.append(ref)
            return
        requirement, url_source = parse_declared(line, where)
        if self._marker is not None:
            requirement = _with_marker(requirement, self._marker)
        self.requirements.append(requirement)
        if url_source is not None:
            self.sources.append(url_source)

    def _option(self, where: str, line: str, base: str, depth: int) -> None:
        name, _, value = line.replace("=", " ", 1).partition(" ")
        if name[:2] in _SHORT_WITH_VALUE and len(name) > 2 and not name.startswith("--"):
            name, value = name[:2], name[2:] + " " + value  # -rfile.txt, -e.
        value = value.strip()
        if not value and name in (*_SOURCE_OPTIONS, "-r", "--requirement", "-c", "--constraint", "-e", "--editable"):
            raise EnvError(f"{where}: {name} needs a value", usage=True)
        if name in _SOURCE_OPTIONS:
            kind = "find-links" if name in ("-f", "--find-links") and url_kind(value) == "index" else url_kind(value)
            self._pending.append(source(name, kind, value, where))
            return
        if name in ("-r", "--requirement", "-c", "--constraint"):
            included = str(inside(self.repo, str(Path(base) / value)).relative_to(self.repo.resolve()))
            if name in ("-c", "--constraint"):
                self.notes.append(f"{where}: constraints file {value} not applied")
                return
            self.read(included, depth + 1)
            return
        if name in ("-e", "--editable"):
            ref = _self_reference(value, where)
            if ref is None:
                raise EnvError(f"{where}: editable install of {value!r} is not allowed (only '-e .', the project)",
                               usage=True)
            self.self_refs.append(ref)
            return
        if name in _IGNORED_OPTIONS:
            self.notes.append(f"{where}: option {name} ignored")
            return
        raise EnvError(f"{where}: unknown option {name!r}; refused", usage=True)


def _with_marker(requirement: Requirement, marker: str) -> Requirement:
    """The requirement under one more condition: its own marker and ``marker`` both."""
    req = Pep508(requirement.text)
    req.marker = Marker(f"({req.marker}) and ({marker})" if req.marker else marker)
    return requirement.model_copy(update={"text": str(req)})
