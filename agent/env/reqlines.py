"""One requirement (PEP 508, names and versions only) and requirements files: parsed, never run.

Refused, with the file and line: URLs and paths (``name @ https://...``, ``./pkg``,
``-e ../x``), and every option that would point the resolver at another index or
location (``--index-url``, ``--extra-index-url``, ``--find-links``, ``--trusted-host``).
``-e .`` / ``.[test]`` mean the project itself and are kept as a self-reference.
"""

from __future__ import annotations

import re
from pathlib import Path

from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as Pep508
from packaging.utils import canonicalize_name
from pydantic import BaseModel, Field

from agent.env.errors import EnvError
from agent.env.safe_read import inside, read_text

MAX_INCLUDE_DEPTH = 5
MAX_REQUIREMENTS = 2000
# Options that name another index or location: the resolver uses codebox's index, nothing else.
_REFUSED_OPTIONS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--trusted-host", "--no-index")
# Options that change nothing we rely on (hashes are checked against the lock's own).
_IGNORED_OPTIONS = ("--pre", "--prefer-binary", "--only-binary", "--no-binary", "--use-feature", "--require-hashes")
_SELF = re.compile(r"^\.(?:\[([A-Za-z0-9_.,\s-]*)\])?$")
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


def parse_requirement(text: str, source: str) -> Requirement:
    try:
        req = Pep508(text)
    except InvalidRequirement as exc:
        reason = str(exc).splitlines()[0]
        raise EnvError(f"{source}: {text.strip()!r} is not a requirement: {reason} "
                       "(paths and URLs are not allowed)", usage=True) from None
    if req.url:
        raise EnvError(f"{source}: {req.name} @ {req.url}: URL requirements are not allowed; "
                       "codebox resolves names from its package index only", usage=True)
    return Requirement(text=str(req), name=canonicalize_name(req.name), source=source)


def _self_reference(text: str, source: str) -> SelfReference | None:
    match = _SELF.match(text.strip())
    if match is None:
        return None
    extras = [e.strip() for e in (match.group(1) or "").split(",") if e.strip()]
    return SelfReference(extras=extras, source=source)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, line) with comments removed and backslash continuations joined."""
    lines: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.sub(r"(^|\s)#.*$", "", raw)
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

    def read(self, relative: str, depth: int = 0) -> None:
        if depth > MAX_INCLUDE_DEPTH:
            raise EnvError(f"{relative}: -r includes nested more than {MAX_INCLUDE_DEPTH} deep; refused", usage=True)
        if relative in self.files:
            return
        text = read_text(self.repo, relative)
        if text is None:
            raise EnvError(f"{relative}: no such requirements file", usage=True)
        self.files.append(relative)
        for number, line in _logical_lines(text):
            self._line(relative, number, line, depth)
            if len(self.requirements) > MAX_REQUIREMENTS:
                raise EnvError(f"{relative}: more than {MAX_REQUIREMENTS} requirements; refused", usage=True)

    def _line(self, relative: str, number: int, line: str, depth: int) -> None:
        where = f"{relative}:{number}"
        if line.startswith("-"):
            self._option(relative, where, line, depth)
            return
        line = _HASH.sub("", " " + line).strip()
        ref = _self_reference(line, where)
        if ref is not None:
            self.self_refs.append(ref)
        else:
            self.requirements.append(parse_requirement(line, where))

    def _option(self, relative: str, where: str, line: str, depth: int) -> None:
        name, _, value = line.replace("=", " ", 1).partition(" ")
        value = value.strip()
        if name in _REFUSED_OPTIONS:
            raise EnvError(f"{where}: {name} is not allowed: codebox resolves from its configured index only",
                           usage=True)
        if name in ("-r", "--requirement", "-c", "--constraint"):
            included = str(inside(self.repo, str(Path(relative).parent / value)).relative_to(self.repo.resolve()))
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
