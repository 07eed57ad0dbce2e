"""The shapes a repository's names must have before codebox uses them: checked when they are read.

A project name, an extra's name, an entry point, a version and a build backend end up in file
names and file contents that codebox writes (``NAME-VERSION.dist-info/``, ``entry_points.txt``,
an install script). Each is held to its packaging standard here, and refused in one line that
names the file and the key: ``[project] name = "/abs/path/x"`` never becomes a host path.
"""

from __future__ import annotations

import re

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from agent.env.errors import EnvError

# PEP 508 names (project names and extras), case-insensitive.
_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.IGNORECASE)
MAX_NAME = 200
# Entry point groups and names: printable, no '=' (the separator), no '[' (a section header).
_GROUP = re.compile(r"^[\w.-]{1,200}$")
_ENTRY_NAME = re.compile(r"^[^\s=\[\]][^=\[\]\x00-\x1f\x7f]{0,199}(?<!\s)$")
# An object reference: ``module.sub:attr.attr``, optionally followed by ``[extras]``.
_DOTTED = r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*"
_TARGET = re.compile(rf"^\s*{_DOTTED}\s*(:\s*{_DOTTED})?\s*(\[[\w.,\s-]*\])?\s*$")
_BACKEND = re.compile(rf"^{_DOTTED}(:{_DOTTED})?$")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def project_name(value: object, where: str) -> str:
    """A PEP 508 project name, as written; EnvError (usage) naming ``where`` otherwise."""
    if not isinstance(value, str) or len(value) > MAX_NAME or not _NAME.match(value):
        raise EnvError(f"{where}: {_shown(value)} is not a valid project name (PEP 508: letters, digits and "
                       "'.', '_', '-' inside); refused", usage=True)
    return value


def extra_name(value: object, where: str) -> str:
    """An extra's (or a dependency group's) name: a PEP 508 name."""
    if not isinstance(value, str) or len(value) > MAX_NAME or not _NAME.match(value):
        raise EnvError(f"{where}: {_shown(value)} is not a valid extra or group name (PEP 508); refused", usage=True)
    return value


def version(value: str, where: str) -> str:
    """A PEP 440 version, normalized (no whitespace, no path); EnvError (usage) otherwise."""
    try:
        return str(Version(value))
    except InvalidVersion:
        raise EnvError(f"{where}: {_shown(value)} is not a valid version (PEP 440); refused", usage=True) from None


def is_version(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        Version(value)
    except InvalidVersion:
        return False
    return True


def specifier(value: str) -> str | None:
    """A version specifier as packaging writes it, None when it is not one."""
    try:
        return str(SpecifierSet(value))
    except InvalidSpecifier:
        return None


def entry_point(group: object, name: object, target: object, where: str) -> tuple[str, str, str]:
    """One entry point, checked: group and name plain, target an object reference."""
    if not isinstance(group, str) or not _GROUP.match(group):
        raise EnvError(f"{where}: entry point group {_shown(group)} is not a plain name; refused", usage=True)
    if not isinstance(name, str) or not _ENTRY_NAME.match(name):
        raise EnvError(f"{where}: entry point name {_shown(name)} in {group} is not a plain name; refused",
                       usage=True)
    if not isinstance(target, str) or len(target) > 500 or not _TARGET.match(target):
        raise EnvError(f"{where}: entry point {name} = {_shown(target)} is not 'module:object'; refused",
                       usage=True)
    return group, name, target.strip()


def backend(value: object, where: str) -> str:
    """A PEP 517 ``build-backend``: ``module`` or ``module:object``."""
    if not isinstance(value, str) or len(value) > 200 or not _BACKEND.match(value):
        raise EnvError(f"{where}: {_shown(value)} is not a build backend ('module' or 'module:object'); refused",
                       usage=True)
    return value
