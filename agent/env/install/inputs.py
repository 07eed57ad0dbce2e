"""What a build reads on the host before any container, and the cache key made of it.

Equal keys make equal environments (in one engine's store), so the key names everything a build
reads: the declarations, the recipe, the as-of date, the base image's id, the tree when the
project's own build runs, and the candidates the build may try (``window``, ``keyed``).
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel

from agent.env.install import images, plan
from agent.env.install.plan import Backend
from agent.env.install.request import EnvRequest
from agent.env.install.tree import Tree, read_tree
from agent.env.read.candidates import PYTHON_ERA, Candidate, with_python_era
from agent.env.read.declared import DEFAULT_EXTRAS, Declared, read_declared
from agent.env.read.reqlines import Requirement, parse_requirement
from agent.env.read.source_policy import check_sources
from agent.env.recipe import Recipe
from agent.env.resolve import apt, asof
from agent.env.resolve.resolve import PREFERRED, RECIPE_PIP, IndexConfig

FORMAT_VERSION = "3"  # 3: a dated environment of a Python before 3.12 gets setuptools (venv_seed)


class EnvInputs(BaseModel):
    """Everything read on the host before any container: what the key is made of."""

    declared: Declared
    recipe: Recipe
    pip: list[Requirement]
    prefer: list[Requirement]
    backend: Backend
    build_requires: list[Requirement]
    build: bool  # the project's own build runs (else: the static fast path)
    tree: Tree | None = None


def read_inputs(request: EnvRequest) -> EnvInputs:
    recipe = request.full_recipe()
    apt.check_names(recipe.apt)
    declared = read_declared(request.repo, recipe.extras, recipe.groups, recipe.requirements, request.runner)
    if request.deps_repo is not None:
        from agent.env.read.at_commit import with_dependencies_of

        setup = read_declared(request.deps_repo, recipe.extras, recipe.groups, recipe.requirements, request.runner)
        declared = with_dependencies_of(declared, setup, request.deps_commit or "?")
    if request.python:
        from agent.python_versions import RELEASED, minor_of

        minor = minor_of(request.python) or request.python
        declared.candidates = with_python_era(declared.candidates, asof.exclude_newer(request.as_of), minor,
                                              RELEASED.get(minor))
    declared.notes += check_sources(declared, request.index, request.allow_public_fallback)
    pip = [parse_requirement(text, RECIPE_PIP) for text in recipe.pip]
    prefer = [parse_requirement(text, PREFERRED) for text in recipe.prefer]
    backend, requires = plan.backend_of(request.repo, declared)
    build = plan.needs_build(declared, request.repo, recipe, backend, requires)
    tree = read_tree(request.repo) if build else None
    return EnvInputs(declared=declared, recipe=recipe, pip=pip, prefer=prefer, backend=backend,
                     build_requires=requires, build=build, tree=tree)


def inputs_key(base_id: str, inputs: EnvInputs, request: EnvRequest, engine: str = images.DEFAULT_ENGINE) -> str:
    """The cache key: everything a build reads, so equal keys make equal environments (in one engine's store)."""
    declared = inputs.declared
    material = {
        "format": FORMAT_VERSION,
        "base": base_id,
        "requirements": [r.text for r in declared.requirements],
        "build_requires": [r.text for r in inputs.build_requires],
        "backend": inputs.backend.model_dump(mode="json"),
        "sources": declared.sources_digest,
        "project": declared.project.model_dump(mode="json"),
        "recipe": inputs.recipe.key(),
        "as_of": asof.cache_part(request.as_of),
        "index": request.index.model_dump(mode="json"),
        "uv_index": sorted(IndexConfig.user_indexes()),  # every index the user gives uv (resolve.py)
        "tree": inputs.tree.key if inputs.tree is not None else None,
        "candidates": [[c.name, [r.text for r in c.requirements]] for c in keyed(window(declared.candidates, request))],
        # What the backend's metadata adds to every candidate (only where the project's own build runs).
        **({"backend_extras": backend_extras(declared, inputs.recipe)} if inputs.build else {}),
        **({"stands_in_for": request.stands_in_for} if request.stands_in_for else {}),
        **images.engine_part(engine),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:32]


def backend_extras(declared: Declared, recipe: Recipe) -> list[str]:
    """The extras whose requirements the build backend's metadata adds to EVERY candidate: the recipe's (a dataset
    spec's install extras), and the default ones only where the static reading could not see the project's
    dependencies. Default extras read statically are their own candidates (read/candidates.py); added to all,
    they would make "the project's own dependencies" hold them too (pytest 4.5's `testing` extra brought its
    hypothesis of 2019, whose pytest plugin cannot load on Python 3.9, into every candidate)."""
    return [*(DEFAULT_EXTRAS if declared.metadata_is_dynamic else ()), *recipe.extras]


def keyed(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates the key names: the Python-era fallback only when it is the first tried. After another, it
    changes nothing the others build (an environment recorded under the key is the first that installed), and
    every environment of a task older than its Python keeps the key it had before the fallback existed."""
    return [c for i, c in enumerate(candidates) if i == 0 or c.rank != PYTHON_ERA]


def window(candidates: list[Candidate], request: EnvRequest) -> list[Candidate]:
    """The candidates a build of ``request`` tries: from the ``skip``-th, at most ``candidates``."""
    return candidates[request.skip:request.skip + request.candidates]
