"""The environment image: the chosen dependencies image plus one project layer, loaded and recorded.

The project layer is written on the host from the static reading (``static_layer``: no repository
code runs anywhere), or made by the project's own build backend in a box (own_build.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent.env.cancel import check
from agent.env.install import images
from agent.env.install.candidate_loop import TriesCandidates
from agent.env.read.declared import Declared

if TYPE_CHECKING:
    from agent.env.install.layer import Stacked

PLUGIN_GROUP = "pytest11"  # the entry points pytest loads: recorded, so eval can tell when a patch changes them


class RecordsImage(TriesCandidates):
    """A build's last step: the environment image made of the dependencies image and a layer (``_finish``)."""

    def _stacked(self, layer: Path) -> Stacked:
        """The environment image: its dependencies image plus the project layer."""
        from agent.env.install.layer import Stacked

        labels = {images.LABEL_KIND: images.KIND, images.LABEL_REPO: self.request.shown()}
        return Stacked([layer], f"{images.REPOSITORY}:{self.key[:16]}", labels)

    def _finish(self, deps: images.Entry, layer: Path, name: str, image_id: str | None = None,
                plugins: list[str] | None = None) -> images.Entry:
        """Record the environment image (``image_id``: loaded already with its dependencies image)."""
        from agent.env.install.layer import load_stack

        stacked = self._stacked(layer)
        tag = stacked.tag
        if image_id is None:
            check(self.cancel)
            image_id = load_stack(self.client, deps.id, [stacked])[0]
        entry = images.Entry(
            kind="env", key=self.key, id=image_id, tag=tag, repo=self.request.shown(), base=self.request.base_image,
            base_id=self.base_id, python=self.target.python, lock=deps.lock, packages=deps.packages, apt=deps.apt,
            as_of=self.request.as_of, deps=deps.id, pytest_plugins=plugins or [], engine=self.engine.name,
            candidate=self.chosen, candidates=len(self.candidates()),
            notes=[*self.inputs.declared.notes, *([f"the project ({name}) was installed by its own build backend"]
                                                  if self.inputs.build and name else [])],
        )
        images.write(entry)
        return entry


def pytest_plugins(entry_points: dict[str, dict[str, str]]) -> list[str]:
    """The pytest plugins among a project's entry points, ``name = target`` each (the record keeps them)."""
    return sorted(f"{name} = {target}" for name, target in entry_points.get(PLUGIN_GROUP, {}).items())


def static_layer(declared: Declared, dest: Path) -> Path:
    """The project layer from the static reading: a .pth naming /repo, a dist-info, console scripts."""
    from agent.env.install.layer import PROJECT, VENV, layer_from_files
    from agent.env.install.project import console_scripts, editable_files

    files = {f"{PROJECT}/site/{relative}": (text, 0o644) for relative, text in editable_files(declared.project).items()}
    for name, text in console_scripts(declared.project, f"{VENV}/bin/python").items():
        files[f"{PROJECT}/bin/{name}"] = (text, 0o755)
    return layer_from_files(dest, files)
