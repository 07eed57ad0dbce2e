"""The project's PEP 517 build backend and its requirements, as ``[build-system]`` declares them.

A project with no ``[build-system]`` table is built the way pip builds it (PEP 517's fallback):
``setuptools.build_meta:__legacy__`` with ``setuptools>=40.8.0`` and ``wheel``. Every requirement
is a name from the index (URLs refused); the backend is a ``module:object`` reference and its
``backend-path`` folders stay inside the repository.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agent.env.errors import EnvError
from agent.env.read.names import backend as checked_backend
from agent.env.read.reqlines import Requirement, parse_requirement
from agent.env.read.safe_read import inside, string_list, table

DEFAULT_BACKEND = "setuptools.build_meta:__legacy__"
DEFAULT_REQUIRES = ["setuptools>=40.8.0", "wheel"]
SETUPTOOLS_BACKENDS = ("setuptools.build_meta", "setuptools.build_meta:__legacy__")
# Backends that build compiled code by design (their own extension modules, not setup.py's).
COMPILING_BACKENDS = ("maturin", "scikit_build_core.build", "mesonpy", "pymsbuild", "enscons.api")


class BuildSystem(BaseModel):
    """``[build-system]``: what building the project needs, and which backend builds it."""

    requires: list[Requirement] = Field(default_factory=list)
    backend: str = DEFAULT_BACKEND
    backend_path: list[str] = Field(default_factory=list)  # folders inside the repo, relative
    declared: bool = False  # False: PEP 517's fallback (no [build-system] table, or no build-backend)

    @property
    def setuptools(self) -> bool:
        return self.backend in SETUPTOOLS_BACKENDS

    @property
    def compiles(self) -> bool:
        """The backend itself builds compiled extensions (maturin, scikit-build-core, meson-python)."""
        return self.backend.split(":")[0] in COMPILING_BACKENDS


def build_requires(pyproject: dict[str, Any] | None, where: str = "pyproject.toml [build-system]"
                   ) -> list[Requirement]:
    """``[build-system] requires``, or PEP 517's default; EnvError (usage) naming ``where`` for a bad entry."""
    system = table(pyproject or {}, "build-system")
    texts = string_list(system.get("requires"), f"{where} requires")
    return [parse_requirement(text, f"{where} requires") for text in texts] or [
        parse_requirement(text, "PEP 517 default build requirements") for text in DEFAULT_REQUIRES]


def read_build_system(repo: Path, pyproject: dict[str, Any] | None) -> BuildSystem:
    """The project's build system; EnvError (usage) naming the key for a bad entry."""
    system = table(pyproject or {}, "build-system")
    where = "pyproject.toml [build-system]"
    requires = build_requires(pyproject, where)
    value = system.get("build-backend")
    if value is None:
        return BuildSystem(requires=requires)
    paths = []
    for folder in string_list(system.get("backend-path"), f"{where} backend-path"):
        if Path(folder).is_absolute():
            raise EnvError(f"{where} backend-path: {folder!r} is absolute; refused", usage=True)
        try:
            inside(repo, folder)
        except EnvError:
            raise EnvError(f"{where} backend-path: {folder!r} leaves the repository; refused", usage=True) from None
        paths.append(folder)
    return BuildSystem(requires=requires, backend=checked_backend(value, f"{where} build-backend"),
                       backend_path=paths, declared=True)
