"""Package sources a repository names (indexes, find-links, git/path/URL sources): read, named, never followed.

Where codebox takes packages from is the user's choice alone (uv's default index, UV_INDEX_URL /
UV_DEFAULT_INDEX / UV_EXTRA_INDEX_URL, ``--find-links``). A repository's own sources are read only
to name them in the environment's notes and to know which packages they would serve: resolving
such a package by name from another index is how dependency confusion happens, so
``source_policy`` holds those back unless the user configures that index or allows the fallback.

Read from: ``[[tool.poetry.source]]`` and poetry dependencies with ``source``/``git``/``path``/``url``;
``[[tool.uv.index]]``, ``[tool.uv.sources]``, ``[tool.uv]`` ``index-url``/``extra-index-url``/
``find-links`` and a uv.toml; ``[[tool.pdm.source]]``; requirements files' ``-i``/``--index-url``/
``--extra-index-url``/``-f``/``--find-links`` (``reqlines``); PEP 508 ``name @ URL`` requirements;
pip.conf / pip.ini in the repository; setup.cfg ``[easy_install]``; tox ``setenv`` of
``PIP_INDEX_URL`` and kin (``tox``).
"""

from __future__ import annotations

import configparser
import fnmatch
import re
import urllib.parse
from pathlib import Path
from typing import Any, Literal

from packaging.utils import canonicalize_name
from pydantic import BaseModel, Field

from agent.env.read.safe_read import read_ini, read_toml, table

SourceKind = Literal["index", "find-links", "git", "path", "url"]
# The public index, and mirrors of it (they serve PyPI's own files): naming them redirects nothing.
PUBLIC_HOSTS = ("pypi.org", "pypi.python.org", "files.pythonhosted.org")
MIRROR_HOSTS = ("mirrors.aliyun.com", "pypi.tuna.tsinghua.edu.cn", "mirrors.tuna.tsinghua.edu.cn",
                "mirrors.cloud.tencent.com", "pypi.doubanio.com", "pypi.douban.com", "mirrors.ustc.edu.cn",
                "pypi.mirrors.ustc.edu.cn", "repo.huaweicloud.com", "mirror.baidu.com", "mirrors.bfsu.edu.cn")
PIP_CONFIGS = ("pip.conf", "pip.ini", ".pip/pip.conf", ".config/pip/pip.conf")
MAX_SOURCES = 200
_POETRY_KINDS: tuple[tuple[str, SourceKind], ...] = (("git", "git"), ("path", "path"), ("url", "url"),
                                                     ("file", "path"))
_UV_SOURCE_KINDS: tuple[tuple[str, SourceKind], ...] = (("git", "git"), ("url", "url"), ("path", "path"))
_UV_KEYS: tuple[tuple[str, SourceKind], ...] = (("index-url", "index"), ("extra-index-url", "index"),
                                                ("find-links", "find-links"))
_TOX_ENV = re.compile(r"^\{env:[A-Za-z_][A-Za-z0-9_]*:(?P<default>[^{}]*)\}$")


class PackageSource(BaseModel):
    """One package source a repository declares, and the packages it would serve."""

    name: str  # the source's own name, or the option that names it ("--index-url")
    kind: SourceKind
    location: str  # the URL or path as written (credentials removed)
    declared_in: str  # file and key (or file and line)
    packages: list[str] = Field(default_factory=list)  # canonical names (or name patterns) it would serve
    every_package: bool = False  # it comes before (or replaces) the default index for every package
    public: bool = False  # the public index or a mirror of it

    def serves(self, name: str) -> bool:
        return self.every_package or any(fnmatch.fnmatchcase(name, p) for p in self.packages)

    def describe(self) -> str:
        label = f"'{self.name}' " if self.name else ""
        return f"{self.declared_in} names the {self.kind} source {label}({self.location})"


def shown_location(text: str) -> str:
    """A source's URL or path for notes: credentials removed, printable, at most 200 characters."""
    text = "".join(c if c.isprintable() else "?" for c in text.strip())
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        return text[:200]
    if parts.username or parts.password:
        host = parts.hostname or ""
        port = f":{parts.port}" if _port(parts) else ""
        text = urllib.parse.urlunsplit((parts.scheme, f"***@{host}{port}", parts.path, parts.query, ""))
    return text[:200]


def _port(parts: urllib.parse.SplitResult) -> int | None:
    try:
        return parts.port
    except ValueError:
        return None


def is_public(location: str) -> bool:
    """The public index (pypi.org) or a well-known full mirror of it."""
    try:
        parts = urllib.parse.urlsplit(location.strip())
    except ValueError:
        return False
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https"):
        return False
    return host in PUBLIC_HOSTS or (host in MIRROR_HOSTS and "pypi" in f"{host}{parts.path}".lower())


def url_kind(location: str) -> SourceKind:
    """An index URL, or find-links / path for something that is not an http(s) URL."""
    return "index" if re.match(r"^https?://", location.strip(), re.IGNORECASE) else "path"


def source(name: str, kind: SourceKind, location: str, declared_in: str, packages: list[str] | None = None,
           every_package: bool = False) -> PackageSource:
    return PackageSource(name=name, kind=kind, location=shown_location(location), declared_in=declared_in,
                         packages=sorted({canonicalize_name(p) for p in packages or []}),
                         every_package=every_package, public=is_public(location))


def tox_value(text: str) -> str:
    """``{env:PIP_INDEX_URL:https://...}`` is its default; any other text is itself."""
    match = _TOX_ENV.match(text.strip())
    return match.group("default") if match else text.strip()


# --- pyproject.toml ---------------------------------------------------------------------------


def read_pyproject_sources(data: dict[str, Any]) -> list[PackageSource]:
    found = [*_poetry(data), *_uv(table(data, "tool", "uv"), "pyproject.toml [tool.uv]"), *_pdm(data)]
    found += _uv_sources(data)
    return found


def _poetry(data: dict[str, Any]) -> list[PackageSource]:
    poetry = table(data, "tool", "poetry")
    declared = poetry.get("source")
    deps = _poetry_dependencies(poetry)
    found: list[PackageSource] = []
    named: dict[str, list[str]] = {}
    for name, value in deps:
        for entry in value if isinstance(value, list) else [value]:
            if not isinstance(entry, dict):
                continue
            if isinstance(entry.get("source"), str):
                named.setdefault(entry["source"].lower(), []).append(name)
            for kind_key, kind in _POETRY_KINDS:
                if isinstance(entry.get(kind_key), str):
                    found.append(source(name, kind, entry[kind_key],
                                        f"pyproject.toml [tool.poetry] dependency {name}", [name]))
    where = "pyproject.toml [[tool.poetry.source]]"
    everything = [name for name, _ in deps]
    for entry in declared if isinstance(declared, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        name = entry["name"]
        url = str(entry["url"]) if isinstance(entry.get("url"), str) else "https://pypi.org/simple"
        priority = str(entry.get("priority", "default" if entry.get("default") else
                                 "supplemental" if entry.get("secondary") else "primary")).lower()
        # A primary (or default) source turns the implicit PyPI off: every dependency comes from it.
        serves = everything if priority in ("primary", "default") else []
        found.append(source(name, url_kind(url), url, where, [*serves, *named.pop(name.lower(), [])]))
    for name, packages in named.items():  # `source = "x"` with no [[tool.poetry.source]] named x
        found.append(source(name, "index", f"(undeclared source {name})", "pyproject.toml [tool.poetry]", packages))
    return found


def _poetry_dependencies(poetry: dict[str, Any]) -> list[tuple[str, Any]]:
    tables = [table(poetry, "dependencies"), table(poetry, "dev-dependencies")]
    tables += [table(group, "dependencies") for group in table(poetry, "group").values() if isinstance(group, dict)]
    return [(str(name), value) for deps in tables for name, value in deps.items() if str(name).lower() != "python"]


def _uv(uv: dict[str, Any], where: str) -> list[PackageSource]:
    """uv's indexes: ``[[index]]`` (non-explicit ones come before the default for every package),
    ``index-url`` / ``extra-index-url`` / ``find-links`` (from pyproject's [tool.uv] or a uv.toml)."""
    found = []
    indexes = uv.get("index")
    for entry in indexes if isinstance(indexes, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("url"), str):
            name = str(entry.get("name") or "")
            kind: SourceKind = "find-links" if entry.get("format") == "flat" else url_kind(entry["url"])
            found.append(source(name, kind, entry["url"], f"{where} index", every_package=not entry.get("explicit")))
    for key, kind in _UV_KEYS:
        values = uv.get(key)
        for url in [values] if isinstance(values, str) else values if isinstance(values, list) else []:
            if isinstance(url, str):
                found.append(source(key, kind, url, f"{where} {key}", every_package=True))
    return found


def _uv_sources(data: dict[str, Any]) -> list[PackageSource]:
    """``[tool.uv.sources]``: a package pinned to a named index, a git/URL/path source, a workspace member."""
    where = "pyproject.toml [tool.uv.sources]"
    indexes = {str(e.get("name")).lower(): e for e in table(data, "tool", "uv").get("index") or []
               if isinstance(e, dict) and e.get("name")}
    found = []
    for name, value in table(data, "tool", "uv", "sources").items():
        for entry in value if isinstance(value, list) else [value]:
            if not isinstance(entry, dict):
                continue
            if isinstance(entry.get("index"), str):
                index = indexes.get(entry["index"].lower(), {})
                url = str(index["url"]) if isinstance(index.get("url"), str) else f"(undeclared index {entry['index']})"
                found.append(source(entry["index"], "index", url, f"{where} {name}", [str(name)]))
            elif entry.get("workspace"):
                found.append(source(str(name), "path", "(a workspace member)", f"{where} {name}", [str(name)]))
            for key, kind in _UV_SOURCE_KINDS:
                if isinstance(entry.get(key), str):
                    found.append(source(str(name), kind, entry[key], f"{where} {name}", [str(name)]))
    return found


def _pdm(data: dict[str, Any]) -> list[PackageSource]:
    """PDM merges every source's candidates with PyPI's: a source serves every package unless it
    lists ``include_packages``."""
    where = "pyproject.toml [[tool.pdm.source]]"
    found = []
    for entry in table(data, "tool", "pdm").get("source") or []:
        if not (isinstance(entry, dict) and isinstance(entry.get("url"), str)):
            continue
        include = [str(p) for p in entry.get("include_packages") or [] if isinstance(p, str)]
        kind: SourceKind = "find-links" if entry.get("type") == "find_links" else url_kind(entry["url"])
        found.append(source(str(entry.get("name") or ""), kind, entry["url"], where, include,
                            every_package=not include))
    return found


# --- other files ------------------------------------------------------------------------------


def read_file_sources(repo: Path) -> tuple[list[PackageSource], list[str]]:
    """Sources in pip's config files, a uv.toml and setup.cfg's [easy_install]; and the files read."""
    found: list[PackageSource] = []
    files = []
    for relative in PIP_CONFIGS:
        cfg = read_ini(repo, relative)
        if cfg is not None:
            files.append(relative)
            found += _pip_config(cfg, relative)
    uv_toml = read_toml(repo, "uv.toml")
    if uv_toml is not None:
        files.append("uv.toml")
        found += _uv(uv_toml, "uv.toml")
    setup_cfg = read_ini(repo, "setup.cfg")
    if setup_cfg is not None and setup_cfg.has_section("easy_install"):
        for key in ("index_url", "index-url", "find_links", "find-links"):
            for url in setup_cfg.get("easy_install", key, fallback="").split():
                kind: SourceKind = "find-links" if key.startswith("find") else "index"
                found.append(source(key, kind, url, f"setup.cfg [easy_install] {key}", every_package=True))
    return found[:MAX_SOURCES], files


def _pip_config(cfg: configparser.ConfigParser, relative: str) -> list[PackageSource]:
    found = []
    for section in cfg.sections():
        for key in ("index-url", "extra-index-url", "find-links", "index_url", "extra_index_url", "find_links"):
            for url in cfg.get(section, key, fallback="").split():
                kind: SourceKind = "find-links" if key.startswith("find") else url_kind(url)
                found.append(source(key, kind, url, f"{relative} [{section}] {key}", every_package=True))
    return found
