"""What an environment build is asked for (``EnvRequest``) and the log it reports its stages to."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from agent import defaults
from agent.env.install.box import BuildLimits
from agent.env.read.declared import DEFAULT_RUNNER
from agent.env.recipe import Recipe
from agent.env.resolve import asof
from agent.env.resolve.resolve import IndexConfig

Log = Callable[[str], None]


class EnvRequest(BaseModel):
    """What to build an environment from: the repository, the base image, the user's recipe, the date."""

    repo: Path
    base_image: str = defaults.DEFAULT_IMAGE
    # The sandbox backend whose tasks run it: the build's boxes and its images are that backend's.
    backend: str = defaults.DEFAULT_BACKEND
    extras: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    requirements: list[str] = Field(default_factory=list)
    apt: list[str] = Field(default_factory=list)
    recipe: Recipe = Field(default_factory=Recipe)
    as_of: str = asof.NOW  # normalized (asof.normalize): a timestamp, or now
    index: IndexConfig = Field(default_factory=IndexConfig.from_environ)
    runner: str | None = DEFAULT_RUNNER
    limits: BuildLimits = Field(default_factory=BuildLimits)
    # Resolve what a repository's own package sources would serve from the user's index (source_policy.py).
    allow_public_fallback: bool = False
    # The repository as the task names it (a path, or owner/name), when ``repo`` is a workspace made
    # from it: what the log lines, the image labels and `codebox env ls` show.
    repo_name: str | None = None
    # The candidate environments tried (read/candidates.py): at most ``candidates``, from the ``skip``-th (eval
    # asks for the next when the chosen one fails its PASS_TO_PASS), each within ``candidate_timeout_s``.
    candidates: int = Field(defaults.DEFAULT_ENV_CANDIDATES, ge=1)
    candidate_timeout_s: float = Field(defaults.DEFAULT_ENV_CANDIDATE_TIMEOUT_S, gt=0)
    skip: int = Field(0, ge=0)
    # The X.Y chosen for the task, which ``base_image`` holds (agent/env/python), said in the log. Not part of the
    # key: the base image's id is, and it differs per Python (`env build` and `run --env auto` share an environment).
    python: str | None = None
    # The folder of the declarations at the row's environment_setup_commit (read/at_commit.py), and that commit:
    # the dependencies are read there, the project from ``repo`` (SWE-bench's env image and its instance image).
    deps_repo: Path | None = None
    deps_commit: str | None = None
    # The X.Y asked for (a dataset's spec) when ``python`` runs in its place: the packages of a date older than
    # the stand-in's release were not made for it (toolz 0.10 of 2019 cannot be imported on 3.11), so the
    # resolve's date moves up to that release (a key part only when set: other keys stay as they were).
    stands_in_for: str | None = None

    def shown(self) -> str:
        return self.repo_name or str(self.repo)

    def full_recipe(self) -> Recipe:
        """The flags' recipe, then the task's and the recipes file's (``recipe``)."""
        flags = Recipe(extras=self.extras, groups=self.groups, requirements=self.requirements, apt=self.apt)
        return flags.plus(self.recipe)
