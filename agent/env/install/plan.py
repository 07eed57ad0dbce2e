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
from pydantic import BaseModel, Field

from agent.env.errors import EnvError
from agent.env.read.backend import build_requires
from agent.env.read.declared import Declared
from agent.env.read.reqlines import Requirement, parse_requirement
from agent.env.read.safe_read import parse_toml, read_ini, read_toml, table
from agent.env.recipe import Recipe
from agent.env.resolve.resolve import Lock


class Backend(BaseModel):
    """The project's PEP 517 backend as ``[build-system]`` names it (None: no build at all, only the recipe)."""

    name: str | None = "setuptools.build_meta:__legacy__"
    path: list[str] = Field(default_factory=list)  # backend-path folders, inside the project

    @property
    def setuptools(self) -> bool:
        return (self.name or "").split(":")[0] == "setuptools.build_meta"



# A dynamic version alone is read from the sources statically, unless a version tool writes a version
# file from the git metadata while the project builds: then the build must run for that file to exist.
VERSION_TOOLS = {"setuptools-scm", "hatch-vcs", "versioneer", "pbr", "vcs-versioning", "poetry-dynamic-versioning",
                 "setuptools-git-versioning", "flit-scm", "dunamai", "pdm-backend", "versioningit", "miniver"}
# Entry points (pytest plugins, console scripts) only the backend can tell.
_DYNAMIC_ENTRY_POINTS = {"entry-points", "scripts", "gui-scripts"}


def backend_of(repo: Path, declared: Declared) -> tuple[Backend, list[Requirement]]:
    """The project's backend and ``[build-system]`` requires (PEP 517's fallback when not declared);
    no backend at all for a folder with no build files (only a recipe's steps run then)."""
    system = declared.build_system
    data = read_toml(repo, "pyproject.toml") or {}
    has_build = system.declared or bool(table(data, "build-system")) or bool(table(data, "project")) or \
        (repo / "setup.py").is_file() or (repo / "setup.cfg").is_file()
    if not has_build:
        return Backend(name=None), system.requires
    return Backend(name=system.backend, path=list(system.backend_path)), system.requires


def version_file_at_build(repo: Path, build_requires: list[Requirement]) -> bool:
    """A version tool (setuptools-scm, hatch-vcs, ...) is a build requirement and no file states the version:
    the version comes from the git metadata, and the tool may write a version file the code imports
    (``write_to``, ``version_file``, hatch's vcs hook), whatever file configures it. Or the entry
    points are ``dynamic``."""
    data = read_toml(repo, "pyproject.toml") or {}
    project = table(data, "project")
    dynamic = project.get("dynamic") or []
    fields = {str(d) for d in dynamic} if isinstance(dynamic, list) else set()
    if _DYNAMIC_ENTRY_POINTS & fields:
        return True
    if not VERSION_TOOLS & {r.name for r in build_requires}:
        return False
    cfg = read_ini(repo, "setup.cfg")
    cfg_version = cfg.get("metadata", "version", fallback="").strip() if cfg is not None else ""
    stated = isinstance(project.get("version"), str) or (cfg_version and not cfg_version.startswith(("attr:", "file:")))
    return not stated


def needs_build(declared: Declared, repo: Path, recipe: Recipe, backend: Backend,
                build_requires: list[Requirement]) -> bool:
    """The project's own build runs (see the module docstring)."""
    if recipe.pre_install:
        return True
    if backend.name is None:
        return False
    return declared.project.extension_modules or declared.metadata_is_dynamic or \
        version_file_at_build(repo, build_requires)


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


def requires_after_pre_install(text: str | None, before: list[Requirement]) -> list[Requirement] | None:
    """``[build-system] requires`` of the pyproject.toml a recipe's pre_install left (``text``), when they differ
    from ``before`` (read on the host); else None. pip reads them when it builds, after SWE-bench's pre_install:
    astropy 4.1-5.2's spec pins ``setuptools==68.0.0`` there by sed (today's setuptools has no ``dep_util``)."""
    if text is None:
        return None
    where = "pyproject.toml [build-system], as pre_install left it,"
    after = build_requires(parse_toml(text, "pyproject.toml (after pre_install)"), where)
    return after if [r.text for r in after] != [r.text for r in before] else None


def pins_a_legacy_build_names(log: str, pins: list[Requirement], repo: Path) -> list[Requirement]:
    """The exact pins among ``pins`` whose names a failed build's ``log`` holds, when the project is a setup.py
    with no ``[build-system]`` (pip builds it without isolation, seeing what was installed first); else []."""
    if table(read_toml(repo, "pyproject.toml") or {}, "build-system"):
        return []
    # The error lines only (``ImportError: Numpy version 1.10.0 or later must be installed``): a traceback's paths
    # name packages too (setuptools/_vendor/packaging).
    errors = "\n".join(line for line in log.lower().splitlines() if re.search(r"error\b", line))
    found = []
    for pin in pins:
        words = re.split(r"[-_.]", pin.name.lower())
        pattern = r"(?<![\w./-])" + r"[-_.]".join(map(re.escape, words)) + r"(?![\w/-])"
        if "==" in pin.text and re.search(pattern, errors):
            found.append(pin)
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
