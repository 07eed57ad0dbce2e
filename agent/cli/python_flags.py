"""Each task's Python, chosen and provided before it runs (run, batch, eval), said in one line and kept in the task.

The choice is agent/env/python/choice.py's chain (the user's word > the dataset's spec > the project's
requires-python and the task's date); the image holding that Python is agent/containers/pythons.py's chain
(a registered image > a Debian suite built offline > a registry, opted in). A task with an image of its own
(``--image``, a task file's ``image``, a dataset's image) keeps it: its Python is the image's.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agent.cli.commands.common import setting_origin
from agent.defaults import DEFAULT_IMAGE
from agent.env.errors import EnvError
from agent.env.python import choice
from agent.env.python.choice import PythonChoice, Source
from agent.env.python.requires import Reader, requires_python
from agent.python_versions import minor_of
from agent.settings.environment import config_dir

if TYPE_CHECKING:
    from agent.containers.pythons import PythonImages
    from agent.protocol import TaskSpec

REGISTERED_FILE = "python-images.json"
# A repository that shows another ecosystem's manifest and none of Python's runs in its toolchain's image
# (agent/languages): no Python is chosen for it by its date, so an old Rust row is not skipped for want of 3.5.
OTHER_ECOSYSTEM_FILES = ("Cargo.toml", "go.mod", "package.json")
PYTHON_PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "tox.ini")
Log = Callable[[str], None]


def not_python(read: Reader) -> bool:
    """Whether the tree is another ecosystem's project (a Cargo.toml, go.mod or package.json at its root) with no
    Python project file beside it."""
    return (any(read(name) is not None for name in OTHER_ECOSYSTEM_FILES)
            and all(read(name) is None for name in PYTHON_PROJECT_FILES))


def registrations_file() -> Path:
    return config_dir() / REGISTERED_FILE


def registered_images(setting: list[str]) -> dict[str, str]:
    """X.Y -> image: `codebox image python`'s file, then the ``python_images`` setting (X.Y=IMAGE), which wins."""
    found: dict[str, str] = {}
    try:
        data = json.loads(registrations_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if isinstance(data, dict):
        found.update({minor_of(k) or k: v for k, v in data.items() if isinstance(v, str) and minor_of(k)})
    for entry in setting:
        version, sep, name = entry.partition("=")
        minor = minor_of(version)
        if not sep or minor is None or not name.strip():
            raise EnvError(f"python_images: {entry!r} is not X.Y=IMAGE", usage=True)
        found[minor] = name.strip()
    return found


def register(minor: str, name: str | None) -> Path:
    """Record (or, with ``name`` None, forget) the image of ``minor`` in the registrations file."""
    path = registrations_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    data = data if isinstance(data, dict) else {}
    if name is None:
        data.pop(minor, None)
    else:
        data[minor] = name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(sorted(data.items())), indent=2) + "\n", encoding="utf-8")
    return path


class PythonFlags:
    """``--python``, ``--python-pull``, the registered images and ``--image``: checked once, then ``apply`` per task."""

    def __init__(self, args: argparse.Namespace, log: Log) -> None:
        from agent.containers.pythons import PythonImages

        self.where = setting_origin(args, "python", "--python")
        self.asked = choice.asked_version(args.python, self.where) if args.python else None
        self.user_image = bool(getattr(args, "image", None))
        if self.asked and self.user_image:
            raise EnvError(f"{self.where} and --image both choose the sandbox's Python: give one of them", usage=True)
        self.images: PythonImages = PythonImages(registered_images(list(args.python_images)),
                                                 pull=args.python_pull == "yes", log=log)
        self.backend = getattr(args, "backend", None) or "docker"
        self._copied: set[str] = set()

    def apply(self, task: TaskSpec, read: Reader, as_of: str | None, spec: tuple[str, str] | None = None,
              recipe_python: str | None = None) -> TaskSpec:
        """``task`` with its Python's image and the choice (PythonUnavailable when no source has it)."""
        if self.user_image or task.image:
            return task.model_copy(update={"python_choice": None})
        asked = self._asked(task, recipe_python)
        if asked is None and spec is None and not_python(read):
            return task.model_copy(update={"python_choice": None})
        requires = requires_python(read) if asked is None and spec is None else None
        wanted = choice.want(asked, spec, requires, as_of)
        if wanted.minor is None:
            chosen = PythonChoice(ran=choice.DEFAULT_PYTHON, source=wanted.source, why=wanted.why,
                                  image=DEFAULT_IMAGE, link="codebox's default image")
            return task.model_copy(update={"python_choice": chosen})
        provided = self.images.provide(self._here(wanted))
        self._into_backend(provided.image)
        chosen = PythonChoice(wanted=wanted.minor, ran=provided.minor, source=wanted.source, why=wanted.why,
                              image=provided.image, link=provided.link)
        return task.model_copy(update={"image": provided.image, "python_choice": chosen})

    def _here(self, wanted: choice.Wanted) -> str:
        """The minor to provide: the wanted one, or, when no link here has it and no registry is asked, the first of
        its alternatives that one has (a task's date: 3.10 wanted in 2021-10 -> 3.9, out by then, before 3.11)."""
        assert wanted.minor is not None
        here = self.images.available()
        if wanted.minor in here or self.images.pull:
            return wanted.minor
        return next((m for m in wanted.alternatives if m in here), wanted.minor)

    def _asked(self, task: TaskSpec, recipe_python: str | None) -> tuple[str, Source, str] | None:
        if self.asked:
            return self.asked, "flag", self.where
        if task.python:
            return choice.asked_version(task.python, "the task's python"), "task", "the task's python"
        if recipe_python:
            return choice.asked_version(recipe_python, "the recipes file's python"), "recipe", "the recipes file"
        return None

    def _into_backend(self, image: str) -> None:
        """Podman's store gets the image Docker built (as `codebox image build --backend podman` copies it), once."""
        if self.backend != "podman" or image in self._copied:
            return
        from agent.backends.podman import copy_image_from_docker

        copy_image_from_docker(image)
        self._copied.add(image)
