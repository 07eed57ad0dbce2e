"""Recipes: what an environment needs that no metadata says, the way SWE-bench's per-repo specs say it.

A recipe comes only from the user: flags (``--pip``, ``--pre-install``, ``--apt``,
``--requirements``), a task's ``env`` object in a task file, and a recipes file given with
``--recipes FILE`` (repository names -> recipes). Never from the repository itself. Recipes
add up, in that order (lists concatenate, repeats dropped), and are part of the cache key.

- ``pip``: packages by name (PEP 508, no URLs), resolved from the index with the rest;
- ``prefer``: the same, taken where they fit and dropped (with a note) where they conflict or cannot be had:
  what a dataset's spec installs first (SWE-bench's ``pip_packages``, which its install may then replace);
- ``apt``: Debian packages, downloaded on the host and installed offline;
- ``requirements``: requirements files inside the repository;
- ``pre_install``: shell commands run in the build container, offline, as the unprivileged
  build user, in the copy of the project, before its build backend runs.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as Pep508
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent.env.errors import EnvError

MAX_COMMANDS = 50
MAX_COMMAND_CHARS = 4000


class Recipe(BaseModel):
    """What to add to an environment beyond what the repository declares."""

    model_config = ConfigDict(extra="forbid")

    pip: list[str] = Field(default_factory=list)
    prefer: list[str] = Field(default_factory=list)
    apt: list[str] = Field(default_factory=list)
    requirements: list[str] = Field(default_factory=list)
    pre_install: list[str] = Field(default_factory=list)
    extras: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)

    @field_validator("pip", "prefer")
    @classmethod
    def _packages(cls, value: list[str]) -> list[str]:
        for text in value:
            try:
                req = Pep508(text)
            except InvalidRequirement as exc:
                raise ValueError(f"{text!r} is not a requirement ({exc})") from None
            if req.url:
                raise ValueError(f"{text!r}: packages come from the index by name, not from a URL")
        return value

    @field_validator("pre_install")
    @classmethod
    def _commands(cls, value: list[str]) -> list[str]:
        if len(value) > MAX_COMMANDS:
            raise ValueError(f"at most {MAX_COMMANDS} pre_install commands")
        for command in value:
            if not command.strip() or len(command) > MAX_COMMAND_CHARS or "\0" in command:
                raise ValueError(f"a pre_install command is a non-empty line of at most {MAX_COMMAND_CHARS} characters")
        return value

    def plus(self, other: Recipe) -> Recipe:
        """This recipe, then ``other``'s additions."""
        merged = {name: list(dict.fromkeys([*getattr(self, name), *getattr(other, name)]))
                  for name in Recipe.model_fields}
        return Recipe(**merged)

    def is_empty(self) -> bool:
        return not any(getattr(self, name) for name in Recipe.model_fields)

    def key(self) -> dict[str, list[str]]:
        """What the cache key holds of it: the commands in their order, the rest as sets (the same packages
        named by a flag or by a task file are the same environment)."""
        return {name: list(getattr(self, name)) if name == "pre_install" else sorted(getattr(self, name))
                for name in Recipe.model_fields}


def parse_recipe(data: Any, where: str, *, name_the_field: bool = True) -> Recipe:
    """A recipe from JSON-like data; EnvError (usage) naming ``where`` (and the field, unless
    ``where`` already says it, as a flag does) when it is not one."""
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        place = ".".join(str(p) for p in problem.get("loc", ())) if name_the_field else ""
        message = str(problem.get("msg", "not a recipe")).removeprefix("Value error, ")
        raise EnvError(f"{where}: {place + ': ' if place else ''}{message}", usage=True) from None


class RecipeBook(BaseModel):
    """A recipes file: repository name -> recipe, with optional per-version additions.

    ``{"owner/name": {"pip": [...], "versions": {"1.3": {"pre_install": [...]}}}}`` (JSON or
    TOML). A name matches a repository by its path, its folder's name, or its last two path
    parts (``owner/name``); the first name that matches is taken.
    """

    recipes: dict[str, Recipe] = Field(default_factory=dict)
    versions: dict[str, dict[str, Recipe]] = Field(default_factory=dict)
    # ``as_of`` and ``python`` of an entry (the key "name" or "name@version" for a version's own), as given.
    settings: dict[str, dict[str, str]] = Field(default_factory=dict)

    def _name(self, repo: str | Path) -> str | None:
        path = Path(repo).expanduser()
        names = {str(repo), str(path), path.name, "/".join(path.parts[-2:])}
        with_resolved = names | {str(path.resolve())}
        return next((name for name in self.recipes if name in with_resolved), None)

    def for_repo(self, repo: str | Path, version: str | None = None) -> Recipe:
        name = self._name(repo)
        if name is None:
            return Recipe()
        recipe = self.recipes[name]
        extra = self.versions.get(name, {}).get(version or "") if version else None
        return recipe.plus(extra) if extra is not None else recipe

    def setting_for(self, repo: str | Path, version: str | None, key: str) -> str | None:
        """The entry's ``as_of`` or ``python`` for this repository (a version's own first)."""
        name = self._name(repo)
        if name is None:
            return None
        own = self.settings.get(f"{name}@{version}", {}).get(key) if version else None
        return own or self.settings.get(name, {}).get(key)


def load_recipes(path: Path) -> RecipeBook:
    """``--recipes FILE``; EnvError (usage) with the file and the entry on any problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EnvError(f"--recipes {path}: cannot read it ({exc})", usage=True) from None
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        kind = "TOML" if path.suffix == ".toml" else "JSON"
        raise EnvError(f"--recipes {path}: not valid {kind} ({exc})", usage=True) from None
    if not isinstance(data, dict):
        raise EnvError(f"--recipes {path}: expected a table of repository name -> recipe", usage=True)
    book = RecipeBook()
    for name, value in data.items():
        if not isinstance(value, dict):
            raise EnvError(f"--recipes {path}: {name}: expected a recipe table", usage=True)
        body = {k: v for k, v in value.items() if k not in ("versions", *ENTRY_SETTINGS)}
        book.recipes[str(name)] = parse_recipe(body, f"--recipes {path}: {name}")
        book.settings[str(name)] = _entry_settings(value, f"--recipes {path}: {name}")
        versions = value.get("versions") or {}
        if not isinstance(versions, dict):
            raise EnvError(f"--recipes {path}: {name}.versions: expected a table of version -> recipe", usage=True)
        for version, entry in versions.items():
            where = f"--recipes {path}: {name}.versions.{version}"
            if not isinstance(entry, dict):
                raise EnvError(f"{where}: expected a recipe table", usage=True)
            book.versions.setdefault(str(name), {})[str(version)] = parse_recipe(
                {k: v for k, v in entry.items() if k not in ENTRY_SETTINGS}, where)
            book.settings[f"{name}@{version}"] = _entry_settings(entry, where)
    return book


ENTRY_SETTINGS = ("as_of", "python")


def _entry_settings(entry: dict[str, Any], where: str) -> dict[str, str]:
    """An entry's ``as_of`` (a date) and ``python`` (X.Y), checked as the flags are."""
    from agent.env.resolve import asof
    from agent.python_versions import minor_of

    found: dict[str, str] = {}
    for key in ENTRY_SETTINGS:
        value = entry.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or (key == "python" and minor_of(value) is None):
            raise EnvError(f"{where}.{key}: expected {'a date' if key == 'as_of' else 'a version such as 3.9'}, "
                           f"got {value!r}", usage=True)
        if key == "as_of":
            asof.normalize(value, f"{where}.as_of")
        found[key] = value
    return found


class EnvSpec(Recipe):
    """A task's ``env`` given as an object: built as ``auto`` builds one, with this recipe, as of ``as_of``."""

    # A date, a timestamp or "now"; default: the later of the task's created_at and its commit's date.
    as_of: str | None = None
    # The candidate environments tried (agent/env/read/candidates.py; None: the settings' defaults), and how many
    # of the first are skipped (eval: the next candidate after one that failed the row's PASS_TO_PASS).
    candidates: int | None = Field(None, ge=1)
    candidate_timeout: float | None = Field(None, gt=0)
    skip_candidates: int = Field(0, ge=0)

    def recipe(self) -> Recipe:
        return Recipe(**self.model_dump(exclude={"as_of", "candidates", "candidate_timeout", "skip_candidates"}))
