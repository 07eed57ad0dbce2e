"""What tox would install for a test run, read statically: the deps and extras of its test environments.

tox's own order decides which file is read, the first one found: tox.ini, setup.cfg (with a
``[tox:tox]`` section), pyproject.toml ``[tool.tox] legacy_tox_ini`` (a whole tox.ini inside a
TOML string), pyproject.toml ``[tool.tox]`` (tox 4's TOML: ``env_run_base``), tox.toml.
From ``[testenv]`` (``env_run_base``) and the environments that run the tests (named for a
Python: ``[testenv:py311]``, ``[testenv:py{39,310}]``, ``env."3.12"``; or test/tests/unit/pytest):
``deps`` (requirement lines, ``-r`` files in their plain, ``{toxinidir}/`` and ``{tox_root}/``
forms, ``-c`` constraints, noted, ``.[extra]``) and ``extras``. When the base environment has deps
of its own, a Python-named one's deps carry a marker for its Python (``_python_marker``). ``{[section]key}`` references
are expanded; a factor-conditional line (``py38: x``) and any other substitution are noted, not
read. An index in ``setenv`` (``PIP_INDEX_URL`` and kin), ``indexserver`` or ``install_command``
is a named package source serving the deps.
"""

from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agent.env.read.reqlines import logical_lines
from agent.env.read.safe_read import parse_ini, read_ini, read_toml, table
from agent.env.read.sources import PackageSource, source, tox_value, url_kind

_FACTOR = re.compile(r"^[A-Za-z0-9_{},.!-]+:\s")
_REFERENCE = re.compile(r"\{\[([^\]\n]+)\]([A-Za-z0-9_.-]+)\}")
_ROOTS = ("{toxinidir}", "{tox_root}")
# The environments that run the test suite, besides the base one: named for a Python version, or for tests.
_RUN_ENV = re.compile(r"^((py|pypy)[0-9.]*|[0-9]+\.[0-9]+|(py|pypy)\{[0-9.,]+\}|test|tests|unit|pytest)$")
_INDEX_VARIABLES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "UV_INDEX_URL", "UV_DEFAULT_INDEX",
                    "UV_EXTRA_INDEX_URL", "UV_INDEX", "UV_FIND_LINKS")
MAX_REFERENCE_DEPTH = 5
MAX_LINES = 2000
# Lines read in one file, references followed included: each {[a]x} read again where it is named, so
# a 500-byte tox.ini whose x names {[a]x} twenty times was 20**6 lines (100 s, 8.6 GB of notes)
MAX_READ = 20_000


class ToxEnv(BaseModel):
    """The base run environment of the tox configuration found."""

    file: str  # the file (and key) it was read from
    deps: list[tuple[str, str]] = Field(default_factory=list)  # (where, requirement line)
    # where -> a PEP 508 marker for the deps of an environment named for one Python (see _python_marker)
    markers: dict[str, str] = Field(default_factory=dict)
    extras: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    sources: list[PackageSource] = Field(default_factory=list)  # serve the deps (packages filled by the reader)


def read_tox(repo: Path, pyproject: dict[str, Any] | None) -> ToxEnv | None:
    """The first tox configuration in tox's order, or None when the repository has none."""
    cfg = read_ini(repo, "tox.ini")
    if cfg is not None:
        return _from_ini(cfg, "tox.ini")
    setup_cfg = read_ini(repo, "setup.cfg")
    if setup_cfg is not None and setup_cfg.has_section("tox:tox"):
        return _from_ini(setup_cfg, "setup.cfg")
    tox = table(pyproject or {}, "tool", "tox")
    legacy = tox.get("legacy_tox_ini")
    if isinstance(legacy, str):
        where = "pyproject.toml [tool.tox] legacy_tox_ini"
        return _from_ini(parse_ini(legacy, where), where)
    if tox:
        return _from_toml(tox, "pyproject.toml", "tool.tox.")
    native = read_toml(repo, "tox.toml")
    return _from_toml(native, "tox.toml", "") if native is not None else None


# --- INI (tox.ini, setup.cfg, legacy_tox_ini) ---------------------------------------------------


def _from_ini(cfg: configparser.ConfigParser, file: str) -> ToxEnv:
    env = ToxEnv(file=file)
    budget = _Reading()
    base_deps = bool(cfg.has_section("testenv") and cfg.get("testenv", "deps", fallback="").strip())
    for section in [s for s in cfg.sections() if s == "testenv" or (_test_env(s.partition(":")[2])
                    and s.startswith("testenv:"))]:
        where = f"{file} [{section}] deps"
        marker = _python_marker(section.partition(":")[2]) if base_deps else None
        if marker:
            env.markers[where] = marker
        for line in _expand(cfg, cfg.get(section, "deps", fallback=""), where, env.notes, 0, budget):
            _dep(env, where, line)
        extras = _expand(cfg, cfg.get(section, "extras", fallback=""), f"{file} [{section}] extras", env.notes, 0,
                         budget)
        env.extras += [e for line in extras for e in line.replace(",", " ").split() if not _FACTOR.match(line)]
    if cfg.has_section("testenv"):
        env.sources = _ini_sources(cfg, file)
    env.notes = list(dict.fromkeys(env.notes))  # a reference named in many places: one note
    return env


def _python_marker(name: str) -> str | None:
    """The Python an environment's name is for, as a PEP 508 marker: py311 and 3.11 are
    ``python_version == "3.11"``, py{39,310} either; None for a name that names no minor version
    (py, py3, pypy3, tests).

    Used when the base environment declares deps of its own: then tox runs a Python-named one
    only on that Python, in place of the base (dateutil's [testenv:py33] pins pytest<3.3 for
    Python 3.3). When the base declares none, the Python-named environments are where the test
    deps are (mdformat's [testenv:py{39,310,311}]), and they apply to any Python."""
    versions = re.fullmatch(r"(?:py|pypy)\{([0-9.,]+)\}|(?:py|pypy)([0-9.]+)|([0-9]+\.[0-9]+)", name.strip())
    if versions is None:
        return None
    named = [_minor_version(v) for v in (versions.group(1) or versions.group(2) or versions.group(3)).split(",")]
    if not named or None in named:
        return None
    return " or ".join(f'python_version == "{v}"' for v in dict.fromkeys(named))


def _minor_version(text: str) -> str | None:
    """3.11, 311 and 27 as "3.11", "3.11", "2.7"; None for a bare major (3) or nonsense."""
    digits = text.strip().replace(".", "")
    if not digits.isdigit() or len(digits) < 2:
        return None
    return f"{digits[0]}.{digits[1:]}"


def _test_env(name: str) -> bool:
    """An environment that runs the tests: named for a Python (py, py311, py{39,310}, 3.12, pypy3) or for tests."""
    return bool(_RUN_ENV.match(name.strip()))


class _Reading:
    """What one file's values may still read (shared by all of them), and each value's lines, split once."""

    def __init__(self) -> None:
        self.left = MAX_READ
        self.split: dict[str, list[str]] = {}

    def lines(self, value: str) -> list[str]:
        if value not in self.split:
            self.split[value] = _requirement_lines(value)
        return self.split[value]


def _expand(cfg: configparser.ConfigParser, value: str, where: str, notes: list[str], depth: int,
            budget: _Reading) -> list[str]:
    """The value's logical lines, with ``{[section]key}`` references replaced by their lines."""
    lines: list[str] = []
    for line in budget.lines(value):
        budget.left -= 1
        if budget.left < 0:
            if budget.left == -1:
                notes.append(f"{where}: more than {MAX_READ} lines read through its references; the rest not read")
            return lines
        match = _REFERENCE.fullmatch(line.strip())
        if match and depth < MAX_REFERENCE_DEPTH and cfg.has_option(match.group(1), match.group(2)):
            lines += _expand(cfg, cfg.get(match.group(1), match.group(2)), where, notes, depth + 1, budget)
        elif match:
            notes.append(f"{where}: {line.strip()!r} refers to nothing readable; not read")
        else:
            lines.append(line)
        if len(lines) > MAX_LINES:
            notes.append(f"{where}: more than {MAX_LINES} lines; the rest not read")
            return lines[:MAX_LINES]
    return lines


def _requirement_lines(value: str) -> list[str]:
    return [line for _, line in logical_lines(value)]


def _dep(env: ToxEnv, where: str, line: str) -> None:
    """One deps line, kept as a requirements line when it is one; noted when tox would have to substitute."""
    for root in _ROOTS:
        line = line.replace(root + "/", "").replace(root, ".")
    if _FACTOR.match(line):
        env.notes.append(f"{where}: {line!r} (factor-conditional) not read")
    elif "{" in line:
        env.notes.append(f"{where}: {line!r} (substituted by tox) not read")
    else:
        env.deps.append((where, line))


def _ini_sources(cfg: configparser.ConfigParser, file: str) -> list[PackageSource]:
    found = []
    for line in _requirement_lines(cfg.get("testenv", "setenv", fallback="")):
        key, sep, value = line.partition("=")
        if sep and key.strip() in _INDEX_VARIABLES:
            found += _urls(key.strip(), tox_value(value), f"{file} [testenv] setenv {key.strip()}")
    if cfg.has_section("tox"):
        for line in _requirement_lines(cfg.get("tox", "indexserver", fallback="")):
            name, sep, url = line.partition("=")
            if sep:
                found += _urls(f"indexserver {name.strip()}", url, f"{file} [tox] indexserver")
    command = cfg.get("testenv", "install_command", fallback="")
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    for index, option in enumerate(words):
        value = words[index + 1] if index + 1 < len(words) else ""
        name, _, glued = option.partition("=")
        if name in ("-i", "--index-url", "--extra-index-url", "-f", "--find-links"):
            found += _urls(name, glued or value, f"{file} [testenv] install_command")
    return found


def _urls(name: str, value: str, where: str) -> list[PackageSource]:
    return [source(name, url_kind(url), url, where) for url in value.replace(",", " ").split() if url.strip()]


# --- TOML (tox 4: pyproject [tool.tox], tox.toml) ----------------------------------------------


def _from_toml(data: dict[str, Any], file: str, prefix: str) -> ToxEnv:
    base = table(data, "env_run_base")
    env = ToxEnv(file=file)
    tables = [(f"{file} [{prefix}env_run_base]", base)]
    tables += [(f'{file} [{prefix}env."{name}"]', value) for name, value in table(data, "env").items()
               if isinstance(value, dict) and _test_env(str(name))]
    if isinstance(base.get("deps"), list) and base["deps"]:
        for name, value in table(data, "env").items():
            marker = _python_marker(str(name)) if isinstance(value, dict) else None
            if marker:
                env.markers[f'{file} [{prefix}env."{name}"] deps'] = marker
    for where, values in tables:
        deps = values.get("deps")
        for item in deps if isinstance(deps, list) else []:
            if isinstance(item, str):
                _dep(env, f"{where} deps", item.strip())
            else:
                env.notes.append(f"{where} deps: {str(item)[:80]!r} (a tox reference) not read")
        extras = values.get("extras")
        env.extras += [e for e in extras if isinstance(e, str)] if isinstance(extras, list) else []
    where = f"{file} [{prefix}env_run_base]"
    set_env = base.get("set_env")
    for key, value in (set_env if isinstance(set_env, dict) else {}).items():
        if key in _INDEX_VARIABLES and isinstance(value, str):
            env.sources += _urls(key, value, f"{where} set_env {key}")
    return env
