"""The environment flags of `run`, `batch`, `eval` and `env build` (defined in agent/cli/parser.py), folded into
each task's ``env``.

``--pip PKG``, ``--apt PKG``, ``--extra NAME``, ``--group NAME``, ``--requirements FILE``,
``--pre-install CMD`` and ``--recipes FILE`` make a recipe, ``--as-of DATE|now``
the date (a recipes file's entry may carry ``as_of`` and ``python`` too: the flag's, then the task's own
win); a task that builds its environment (``auto``, or an ``env`` object) gets them, in
this order: the flags, the recipes file's entry for its repository (and version), the task's
own ``env`` object. A task on ``none`` or a named image keeps its setting: a recipe only
changes an environment codebox builds.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from agent.defaults import DEFAULT_ENV_CANDIDATE_TIMEOUT_S, DEFAULT_ENV_CANDIDATES
from agent.env.recipe import EnvSpec, Recipe, RecipeBook, load_recipes, parse_recipe
from agent.env.resolve import asof

if TYPE_CHECKING:  # `codebox env build` (a cache hit) never needs agent.protocol's models
    from agent.protocol import TaskSpec

AUTO = "auto"
# The recipe's flags (argparse's names) and the recipe fields they fill.
_RECIPE_FLAGS = {"pip": "pip", "apt": "apt", "pre_install": "pre_install", "requirements": "requirements",
                 "extra": "extras", "group": "groups"}


class EnvFlags:
    """The parsed flags, checked once (a bad recipes file or date is one usage error up front)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.recipe = Recipe()
        for flag, field in _RECIPE_FLAGS.items():  # checked one flag at a time, so an error names its flag
            values = list(getattr(args, flag, None) or [])
            if values:
                self.recipe = self.recipe.plus(parse_recipe({field: values}, "--" + flag.replace("_", "-"),
                                                             name_the_field=False))
        path = getattr(args, "recipes", None)
        self.book = load_recipes(Path(path).expanduser()) if path else RecipeBook()
        when = getattr(args, "as_of", None)
        self.as_of = asof.normalize(when) if when else None
        self.candidates: dict[str, float] = {}  # the candidates' settings, when not the defaults
        for flag, field, default in (("env_candidates", "candidates", DEFAULT_ENV_CANDIDATES),
                                     ("env_candidate_timeout", "candidate_timeout", DEFAULT_ENV_CANDIDATE_TIMEOUT_S)):
            value = getattr(args, flag, None)
            if value is not None and value != default:
                self.candidates[field] = value

    def recipe_for(self, repo: str, version: str | None = None) -> Recipe:
        """The flags' recipe, then the recipes file's for this repository."""
        return self.recipe.plus(self.book.for_repo(repo, version))

    def apply(self, task: TaskSpec) -> TaskSpec:
        """``task`` with its environment setting completed by the flags (see the module docstring)."""
        env = task.env
        if isinstance(env, str) and env != AUTO:
            return task
        recipe = self.recipe_for(task.repo, task.version)
        own = env if isinstance(env, EnvSpec) else EnvSpec()
        merged = recipe.plus(own.recipe())
        when = self.as_of or own.as_of or self.book.setting_for(task.repo, task.version, "as_of")
        if merged.is_empty() and when is None and not self.candidates and own == EnvSpec():
            return task
        picked = {"candidates": own.candidates, "candidate_timeout": own.candidate_timeout, **self.candidates}
        return task.model_copy(update={"env": EnvSpec(**merged.model_dump(), as_of=when, **picked,
                                                      skip_candidates=own.skip_candidates)})
