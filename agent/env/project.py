"""The project under test as an editable install: its name, version, import root and entry points.

From these, ``editable_files`` makes what a venv needs to import the project from /repo
as if ``pip install -e`` had run, without writing to /repo: a ``.pth`` file naming
/repo (or /repo/src) and a ``.dist-info`` folder, so ``importlib.metadata`` finds the
project's version and entry points (pytest plugins, console scripts).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, Field

from agent.env.safe_read import read_ini, read_text, table
from agent.env.setup_py import SetupCall

REPO_MOUNT = "/repo"
FALLBACK_VERSION = "0.0.0"
_VERSION_ASSIGN = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", re.MULTILINE)


class Project(BaseModel):
    """What an editable install of the project records."""

    name: str | None = None
    version: str = FALLBACK_VERSION
    requires_python: str | None = None
    import_root: str = ""  # "" (/repo) or "src" (/repo/src)
    dependencies: list[str] = Field(default_factory=list)
    entry_points: dict[str, dict[str, str]] = Field(default_factory=dict)
    extension_modules: bool = False


def read_project(repo: Path, pyproject: dict[str, Any] | None, setup: SetupCall | None) -> Project:
    data = pyproject or {}
    meta = table(data, "project")
    cfg = read_ini(repo, "setup.cfg")
    setup_values = setup.values if setup else {}
    poetry = table(data, "tool", "poetry")
    name = meta.get("name") or (cfg.get("metadata", "name", fallback=None) if cfg else None) or setup_values.get("name")
    name = name or poetry.get("name")
    project = Project(
        name=str(name) if isinstance(name, str) and name.strip() else None,
        requires_python=_requires_python(meta, cfg, setup_values),
        import_root=_import_root(repo, data, cfg, setup_values),
        dependencies=[d for d in meta.get("dependencies", []) if isinstance(d, str)],
        entry_points=_entry_points(meta, cfg),
        extension_modules=_has_extensions(data, setup),
    )
    project.version = _version(repo, meta, cfg, setup_values, project, poetry.get("version"))
    return project


def _requires_python(meta: dict[str, Any], cfg: Any, setup_values: dict[str, Any]) -> str | None:
    value = meta.get("requires-python") or (cfg.get("options", "python_requires", fallback=None) if cfg else None)
    value = value or setup_values.get("python_requires")
    return value if isinstance(value, str) and value.strip() else None


def _import_root(repo: Path, data: dict[str, Any], cfg: Any, setup_values: dict[str, Any]) -> str:
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
        (p / "__init__.py").is_file() or p.suffix == ".py" for p in src.iterdir()
    )
    return "src" if declared_src or has_code else ""


def _entry_points(meta: dict[str, Any], cfg: Any) -> dict[str, dict[str, str]]:
    groups: dict[str, dict[str, str]] = {}
    for key, group in (("scripts", "console_scripts"), ("gui-scripts", "gui_scripts")):
        if table(meta, key):
            groups[group] = {str(k): str(v) for k, v in table(meta, key).items()}
    for group, items in table(meta, "entry-points").items():
        if isinstance(items, dict):
            groups[str(group)] = {str(k): str(v) for k, v in items.items()}
    if cfg is not None and cfg.has_section("options.entry_points"):
        for group, value in cfg.items("options.entry_points"):
            for line in value.splitlines():
                key, sep, target = line.partition("=")
                if sep and key.strip():
                    groups.setdefault(group, {})[key.strip()] = target.strip()
    return groups


def _has_extensions(data: dict[str, Any], setup: SetupCall | None) -> bool:
    return bool(table(data, "tool", "setuptools").get("ext-modules")) or bool(setup and setup.has_extensions)


def _version(repo: Path, meta: dict[str, Any], cfg: Any, setup_values: dict[str, Any], project: Project,
             poetry_version: Any = None) -> str:
    """The static version; else a ``__version__`` literal in the package, or PKG-INFO's; else the highest git tag."""
    for value in (meta.get("version"), cfg.get("metadata", "version", fallback=None) if cfg else None,
                  setup_values.get("version"), poetry_version):
        if isinstance(value, str) and _valid(value):
            return value
    if project.name:
        found = _version_in_sources(repo, project) or _version_in_pkg_info(repo)
        if found:
            return found
    return _highest_tag(repo) or FALLBACK_VERSION


def _version_in_pkg_info(repo: Path) -> str | None:
    """An unpacked sdist says its version in PKG-INFO."""
    text = read_text(repo, "PKG-INFO") or ""
    match = re.search(r"^Version:\s*(\S+)\s*$", text, re.MULTILINE)
    return match.group(1) if match and _valid(match.group(1)) else None


def _valid(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def _version_in_sources(repo: Path, project: Project) -> str | None:
    assert project.name is not None
    module = project.name.replace("-", "_").replace(".", "_")
    base = f"{project.import_root}/" if project.import_root else ""
    for candidate in (f"{module}/__init__.py", f"{module}/_version.py", f"{module}/version.py", f"{module}.py"):
        try:
            text = read_text(repo, base + candidate)
        except Exception:  # an unreadable module file is no version, not an error
            continue
        match = _VERSION_ASSIGN.search(text or "")
        if match and _valid(match.group(1)):
            return match.group(1)
    return None


def _highest_tag(repo: Path) -> str | None:
    """The highest version-like tag, read from .git's refs and packed-refs (git itself is not run)."""
    git = repo / ".git"
    names: list[str] = []
    tags = git / "refs" / "tags"
    if tags.is_dir():
        names += [p.name for p in tags.iterdir()][:10_000]
    packed = git / "packed-refs"
    if packed.is_file() and packed.stat().st_size < 10_000_000:
        for line in packed.read_text(errors="replace").splitlines():
            _, _, ref = line.partition(" refs/tags/")
            if ref:
                names.append(ref.strip())
    versions = []
    for name in names:
        text = name[1:] if name[:1] in ("v", "V") else name
        if _valid(text) and not Version(text).is_prerelease:
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
    dist = f"{canonicalize_name(project.name).replace('-', '_')}-{project.version}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {project.name}", f"Version: {project.version}"]
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
            lines += [f"{k} = {v}" for k, v in items.items()]
            lines.append("")
        files[f"{dist}/entry_points.txt"] = "\n".join(lines)
    files[f"{dist}/RECORD"] = "".join(f"{p},,\n" for p in sorted(files)) + f"{dist}/RECORD,,\n"
    return files
