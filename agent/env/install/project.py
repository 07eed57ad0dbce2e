"""The project under test as an editable install: its name, version, import root and entry points.

From these, ``editable_files`` makes what a venv needs to import the project from /repo
as if ``pip install -e`` had run, without writing to /repo: a ``.pth`` file naming
/repo (or /repo/src) and a ``.dist-info`` folder, so ``importlib.metadata`` finds the
project's version and entry points (pytest plugins, console scripts).
"""

from __future__ import annotations

import configparser
import itertools
import json
import re
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import Version
from pydantic import BaseModel, Field

from agent.defaults import REPO_MOUNT
from agent.env.errors import EnvError
from agent.env.read.names import entry_point, is_version, project_name, specifier, version
from agent.env.read.reqlines import parse_declared
from agent.env.read.safe_read import MAX_LISTED, inside, read_bytes, read_text, string_list, table
from agent.env.read.setup_py import SetupCall

FALLBACK_VERSION = "0.0.0"
_VERSION_ASSIGN = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", re.MULTILINE)


class Project(BaseModel):
    """What an editable install of the project records."""

    name: str | None = None  # a PEP 508 name (checked when read)
    version: str = FALLBACK_VERSION  # a normalized PEP 440 version
    requires_python: str | None = None
    import_root: str = ""  # "" (/repo) or "src" (/repo/src)
    dependencies: list[str] = Field(default_factory=list)
    entry_points: dict[str, dict[str, str]] = Field(default_factory=dict)
    extension_modules: bool = False


def read_project(repo: Path, pyproject: dict[str, Any] | None, setup: SetupCall | None,
                 cfg: configparser.ConfigParser | None = None, notes: list[str] | None = None,
                 compiled: bool = False) -> Project:
    """The project as its files declare it; EnvError (usage) naming the file and key of a hostile value.

    ``compiled``: the project has compiled extensions (decided by the caller from every file).
    """
    notes = notes if notes is not None else []
    data = pyproject or {}
    meta = table(data, "project")
    setup_values = setup.values if setup else {}
    poetry = table(data, "tool", "poetry")
    project = Project(
        name=_name(meta, cfg, setup_values, poetry),
        requires_python=_requires_python(meta, cfg, setup_values, notes),
        import_root=_import_root(repo, data, cfg, setup_values),
        dependencies=_dependencies(meta),
        entry_points=_entry_points(meta, cfg, setup_values),
        extension_modules=compiled,
    )
    project.version = _version(repo, meta, cfg, setup_values, project, poetry.get("version"), notes)
    return project


def _name(meta: dict[str, Any], cfg: configparser.ConfigParser | None, setup_values: dict[str, Any],
          poetry: dict[str, Any]) -> str | None:
    """The first name declared (pyproject, setup.cfg, setup.py, poetry), checked as a PEP 508 name."""
    candidates = [(meta.get("name"), "pyproject.toml [project] name"),
                  (cfg.get("metadata", "name", fallback=None) if cfg else None, "setup.cfg [metadata] name"),
                  (setup_values.get("name"), "setup.py name="),
                  (poetry.get("name"), "pyproject.toml [tool.poetry] name")]
    for value, where in candidates:
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        return project_name(value.strip() if isinstance(value, str) else value, where)
    return None


def _dependencies(meta: dict[str, Any]) -> list[str]:
    """[project] dependencies as packaging writes them (they become Requires-Dist lines)."""
    found = []
    for text in string_list(meta.get("dependencies"), "pyproject.toml [project] dependencies"):
        found.append(parse_declared(text, "pyproject.toml [project] dependencies")[0].text)  # a URL: its name
    return found


def _requires_python(meta: dict[str, Any], cfg: configparser.ConfigParser | None, setup_values: dict[str, Any],
                     notes: list[str]) -> str | None:
    for value, where in ((meta.get("requires-python"), "pyproject.toml [project] requires-python"),
                         (cfg.get("options", "python_requires", fallback=None) if cfg else None,
                          "setup.cfg [options] python_requires"),
                         (setup_values.get("python_requires"), "setup.py python_requires=")):
        if isinstance(value, str) and value.strip():
            normalized = specifier(value)
            if normalized is None:
                notes.append(f"{where}: {value.strip()[:80]!r} is not a valid version specifier; ignored")
                return None
            return normalized
    return None


def _import_root(repo: Path, data: dict[str, Any], cfg: configparser.ConfigParser | None,
                 setup_values: dict[str, Any]) -> str:
    """"src" for a src/ layout (declared, or a src/ folder holding Python code), else "" (flat)."""
    setuptools = table(data, "tool", "setuptools")
    where = table(setuptools, "packages", "find").get("where")
    package_dir = setuptools.get("package-dir") or setup_values.get("package_dir") or {}
    cfg_dir = cfg.get("options", "package_dir", fallback="") if cfg else ""
    declared_src = (
        (isinstance(where, list) and "src" in where)
        or (isinstance(package_dir, dict) and package_dir.get("") == "src")
        or cfg_dir.strip().lstrip("=").strip() == "src"
    )
    src = repo / "src"
    has_code = src.is_dir() and not src.is_symlink() and any(
        (p / "__init__.py").is_file() or p.suffix == ".py" for p in itertools.islice(src.iterdir(), MAX_LISTED)
    )
    return "src" if declared_src or has_code else ""


def _entry_points(meta: dict[str, Any], cfg: configparser.ConfigParser | None,
                  setup_values: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Every entry point declared, each checked (names.entry_point): they become entry_points.txt lines."""
    found: list[tuple[Any, Any, Any, str]] = []
    for key, group in (("scripts", "console_scripts"), ("gui-scripts", "gui_scripts")):
        found += [(group, k, v, f"pyproject.toml [project.{key}]") for k, v in table(meta, key).items()]
    for group, items in table(meta, "entry-points").items():
        if isinstance(items, dict):
            found += [(group, k, v, f"pyproject.toml [project.entry-points.{group}]") for k, v in items.items()]
    if cfg is not None and cfg.has_section("options.entry_points"):
        for group, value in cfg.items("options.entry_points"):
            found += _entry_lines(group, value.splitlines(), "setup.cfg [options.entry_points]")
    declared = setup_values.get("entry_points")
    if isinstance(declared, dict):
        for group, value in declared.items():
            lines = value.splitlines() if isinstance(value, str) else value if isinstance(value, list) else []
            found += _entry_lines(group, [line for line in lines if isinstance(line, str)], "setup.py entry_points=")
    groups: dict[str, dict[str, str]] = {}
    for group, name, target, where in found:
        group, name, target = entry_point(group, name, target, where)
        groups.setdefault(group, {}).setdefault(name, target)
    return groups


def _entry_lines(group: str, lines: list[str], where: str) -> list[tuple[Any, Any, Any, str]]:
    found: list[tuple[Any, Any, Any, str]] = []
    for line in lines:
        key, sep, target = line.partition("=")
        if sep and key.strip():
            found.append((group, key.strip(), target.strip(), where))
    return found


def _version(repo: Path, meta: dict[str, Any], cfg: configparser.ConfigParser | None, setup_values: dict[str, Any],
             project: Project, poetry_version: Any, notes: list[str]) -> str:
    """The static version; else a ``__version__`` literal in the package, or PKG-INFO's; else the highest git tag."""
    cfg_version = cfg.get("metadata", "version", fallback=None) if cfg else None
    for value, where in ((meta.get("version"), "pyproject.toml [project] version"),
                         (cfg_version, "setup.cfg [metadata] version"),
                         (setup_values.get("version"), "setup.py version="),
                         (poetry_version, "pyproject.toml [tool.poetry] version")):
        if isinstance(value, str) and value.strip() and not value.strip().startswith(("attr:", "file:")):
            checked = _static_version(value, where, notes)
            if checked:
                return checked
    if project.name:
        found = _version_in_sources(repo, project) or _version_in_pkg_info(repo)
        if found:
            return found
    return highest_tag(repo) or FALLBACK_VERSION


def _static_version(value: str, where: str, notes: list[str]) -> str | None:
    """A declared version, normalized; one that could be a path is refused, another invalid one noted."""
    if is_version(value):
        return version(value, where)
    if any(c in value for c in "/\\\0\n\r") or ".." in value:
        version(value, where)  # refused, naming the file and key
    notes.append(f"{where}: {value.strip()[:80]!r} is not a PEP 440 version; ignored")
    return None


def _version_in_pkg_info(repo: Path) -> str | None:
    """An unpacked sdist says its version in PKG-INFO."""
    text = read_text(repo, "PKG-INFO") or ""
    match = re.search(r"^Version:\s*(\S+)\s*$", text, re.MULTILINE)
    return str(Version(match.group(1))) if match and is_version(match.group(1)) else None


def _version_in_sources(repo: Path, project: Project) -> str | None:
    assert project.name is not None
    module = project.name.replace("-", "_").replace(".", "_")
    base = f"{project.import_root}/" if project.import_root else ""
    for candidate in (f"{module}/__init__.py", f"{module}/_version.py", f"{module}/version.py", f"{module}.py"):
        try:
            text = read_text(repo, base + candidate)
        except EnvError:  # an unreadable module file is no version, not an error
            continue
        match = _VERSION_ASSIGN.search(text or "")
        if match and is_version(match.group(1)):
            return str(Version(match.group(1)))
    return None


def highest_tag(repo: Path) -> str | None:
    """The highest version-like tag, read from .git's refs and packed-refs (git itself is not run).

    Only inside the repository: a .git file (a worktree) or a symlink out of it gives no tags.
    """
    names: list[str] = []
    try:
        tags = inside(repo, ".git/refs/tags")
        if tags.is_dir():
            names += [p.name for p in itertools.islice(tags.iterdir(), MAX_LISTED)]
        packed = read_bytes(repo, ".git/packed-refs", limit=10_000_000, what="packed-refs")
    except EnvError:
        return None
    for line in (packed or b"").decode("utf-8", "replace").splitlines():
        _, _, ref = line.partition(" refs/tags/")
        if ref:
            names.append(ref.strip())
    versions = []
    for name in names:
        text = name[1:] if name[:1] in ("v", "V") else name
        if is_version(text) and not Version(text).is_prerelease:
            versions.append(Version(text))
    return str(max(versions)) if versions else None


_SCRIPT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def console_scripts(project: Project, python: str) -> dict[str, str]:
    """bin/ scripts for the project's console scripts (what ``pip install -e`` would make), by name.

    Names and targets that are not plain identifiers are skipped: they become program text.
    """
    scripts = {}
    for name, target in project.entry_points.get("console_scripts", {}).items():
        module, _, attr = target.split("[")[0].strip().partition(":")
        module, attr = module.strip(), attr.strip()
        if not (_SCRIPT_NAME.match(name) and _DOTTED.match(module) and (not attr or _DOTTED.match(attr))):
            continue
        if attr:
            call = f"import {module}\nsys.exit({module}.{attr}())"
        else:
            call = f"import runpy\nrunpy.run_module({module!r}, run_name='__main__')"
        scripts[name] = f"#!{python}\nimport sys\n{call}\n"
    return scripts


def editable_files(project: Project) -> dict[str, str]:
    """Files (path relative to site-packages -> text) that make /repo an editable install."""
    root = f"{REPO_MOUNT}/{project.import_root}" if project.import_root else REPO_MOUNT
    files = {"_codebox_repo.pth": root + "\n"}
    if project.name is None:
        return files
    # Checked again where they become a folder name: a Project may come from elsewhere than read_project.
    name, release = project_name(project.name, "the project's name"), version(project.version, "the project's version")
    dist = f"{canonicalize_name(name).replace('-', '_')}-{release}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {release}"]
    if project.requires_python:
        metadata.append(f"Requires-Python: {project.requires_python}")
    metadata += [f"Requires-Dist: {d}" for d in project.dependencies]
    files[f"{dist}/METADATA"] = "\n".join(metadata) + "\n"
    files[f"{dist}/INSTALLER"] = "codebox\n"
    files[f"{dist}/direct_url.json"] = json.dumps({"url": f"file://{REPO_MOUNT}", "dir_info": {"editable": True}})
    if project.entry_points:
        lines = []
        for group, items in project.entry_points.items():
            lines.append(f"[{group}]")
            lines += ["{1} = {2}".format(*entry_point(group, k, v, "the project's entry points"))
                      for k, v in items.items()]
            lines.append("")
        files[f"{dist}/entry_points.txt"] = "\n".join(lines)
    files[f"{dist}/RECORD"] = "".join(f"{p},,\n" for p in sorted(files)) + f"{dist}/RECORD,,\n"
    return files
