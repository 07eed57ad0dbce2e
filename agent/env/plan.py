"""How an environment is made: from the static reading alone (the fast path), or with the project's own build.

The project's build runs (in a box, ``project_build.py``) when the static reading cannot say
everything: metadata the project computes (``dynamic`` in pyproject, setup.py arguments that
are not literals), compiled extensions, or a recipe with ``pre_install`` commands. Otherwise
the project layer is a .pth and a dist-info written on the host, and no repository code runs
anywhere. Also here: the backend ``[build-system]`` names and what its build needs first.
"""

from __future__ import annotations

import re
from pathlib import Path

from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as Pep508
from packaging.utils import canonicalize_name

from agent.env.declared import Declared
from agent.env.errors import EnvError
from agent.env.project_build import Backend
from agent.env.recipe import Recipe
from agent.env.reqlines import Requirement, parse_requirement
from agent.env.resolve import Lock
from agent.env.safe_read import read_ini, read_toml, string_list, table
from agent.env.setup_py import read_setup_py

DEFAULT_BACKEND = "setuptools.build_meta:__legacy__"
DEFAULT_REQUIRES = ["setuptools>=40.8.0", "wheel"]
# Metadata that only the backend can tell when it is dynamic. A dynamic version alone is read from the
# sources statically, unless a version tool writes a version file from the git metadata at build time.
_DYNAMIC = {"dependencies", "optional-dependencies", "entry-points", "scripts", "gui-scripts"}
VERSION_TOOLS = {"setuptools-scm", "hatch-vcs", "versioneer", "pbr", "vcs-versioning", "poetry-dynamic-versioning",
                 "setuptools-git-versioning", "flit-scm", "dunamai", "pdm-backend", "versioningit", "miniver"}
_SETUP_KEYS = {"name", "version", "install_requires", "extras_require", "entry_points", "tests_require"}
_BACKEND = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*(:[A-Za-z_][A-Za-z0-9_.]*)?$")


def backend_of(repo: Path) -> tuple[Backend, list[Requirement]]:
    """The project's backend and ``[build-system]`` requires (PEP 517's fallback when not declared)."""
    data = read_toml(repo, "pyproject.toml") or {}
    system = table(data, "build-system")
    where = "pyproject.toml [build-system]"
    texts = string_list(system.get("requires"), f"{where} requires") if "requires" in system else DEFAULT_REQUIRES
    requires = [parse_requirement(t, f"{where} requires") for t in texts]
    name = system.get("build-backend")
    if name is None:
        has_build = bool(system) or bool(table(data, "project")) or (repo / "setup.py").is_file() or \
            (repo / "setup.cfg").is_file()
        return Backend(name=DEFAULT_BACKEND if has_build else None), requires
    if not isinstance(name, str) or not _BACKEND.match(name):
        raise EnvError(f"{where} build-backend {name!r} is not a module:object reference", usage=True)
    paths = []
    for folder in string_list(system.get("backend-path"), f"{where} backend-path"):
        resolved = (repo / folder).resolve()
        if Path(folder).is_absolute() or (resolved != repo.resolve() and repo.resolve() not in resolved.parents):
            raise EnvError(f"{where} backend-path {folder!r} leaves the repository; refused", usage=True)
        paths.append(folder)
    return Backend(name=name, path=paths), requires


def metadata_is_dynamic(repo: Path, build_requires: list[Requirement]) -> bool:
    """True when the files do not state the project's dependencies or entry points as literals, or its
    version comes from a version tool (which writes a version file while the project builds)."""
    data = read_toml(repo, "pyproject.toml") or {}
    project = table(data, "project")
    if project:
        dynamic = project.get("dynamic") or []
        fields = {str(d) for d in dynamic} if isinstance(dynamic, list) else set()
        versioned = "version" in fields and bool(VERSION_TOOLS & {r.name for r in build_requires})
        return versioned or bool(_DYNAMIC & fields)
    if table(data, "tool", "poetry"):
        return False
    setup = read_setup_py(repo)
    cfg = read_ini(repo, "setup.cfg")
    cfg_static = cfg is not None and cfg.has_option("metadata", "name") and cfg.has_option("metadata", "version") \
        and not cfg.get("metadata", "version").strip().startswith(("attr:", "file:"))
    if setup is None:
        return cfg is not None and not cfg_static
    if _SETUP_KEYS & set(setup.computed):
        return True
    return not (cfg_static or {"name", "version"} <= set(setup.values))


def needs_build(declared: Declared, repo: Path, recipe: Recipe, backend: Backend,
                build_requires: list[Requirement]) -> bool:
    """The project's own build runs (see the module docstring)."""
    if recipe.pre_install:
        return True
    if backend.name is None:
        return False
    return declared.project.extension_modules or metadata_is_dynamic(repo, build_requires)


def build_requirements(requires: list[Requirement], backend: Backend, declared: Declared,
                       needs_cython: bool) -> list[Requirement]:
    """``[build-system]`` requires, with wheel for setuptools (older ones ask for it in a second round
    otherwise) and Cython when the tree has .pyx files whose C is not there."""
    found = list(requires)
    names = {r.name for r in found}
    if backend.setuptools and "wheel" not in names:
        found.append(parse_requirement("wheel", "codebox (setuptools builds wheels with it)"))
    if needs_cython and "cython" not in names:
        declared_cython = next((r for r in declared.requirements if r.name == "cython"), None)
        found.append(declared_cython or parse_requirement("cython", "codebox (the tree has .pyx with no C)"))
    return found


def pyx_without_c(files: list[str]) -> bool:
    """A Cython module whose generated C is not in the tree (a Makefile makes it upstream)."""
    present = set(files)
    return any(name.endswith(".pyx") and name[:-4] + ".c" not in present and name[:-4] + ".cpp" not in present
               for name in files)


def unsatisfied(texts: list[str], lock: Lock) -> list[str]:
    """The requirements ``lock`` does not already satisfy (``get_requires_for_build_*``'s answer)."""
    pinned = {canonicalize_name(p.name): p.version for p in lock.pins}
    missing = []
    for text in texts:
        try:
            req = Pep508(text)
        except InvalidRequirement as exc:
            raise EnvError(f"the build backend asked for {text!r}, which is not a requirement: {exc}",
                           usage=True) from None
        version = pinned.get(canonicalize_name(req.name))
        if version is None or not req.specifier.contains(version, prereleases=True):
            missing.append(text)
    return missing
