"""One environment build, on a cache miss: the project layer, static or made by the project's own build.

A build is one object made in layers, one module each, each using only those below it:

```
EnvBuild          env_build.py       static layer, or the project's own build
 BuildsProject    own_build.py       the project's build in a box, and its retries
  RecordsImage    env_image.py       dependencies image + project layer, loaded and recorded
   TriesCandidates candidate_loop.py the first candidate that resolves and installs
    LocksCandidate candidate_lock.py one candidate's lock, with its fallbacks
     BuildState   build_state.py     the request, its inputs, the probed Python, the date, the deadline
```
"""

from __future__ import annotations

from pathlib import Path

from agent.env.cancel import Cancel
from agent.env.install import images
from agent.env.install.env_image import pytest_plugins, static_layer
from agent.env.install.inputs import EnvInputs
from agent.env.install.own_build import BuildsProject
from agent.env.install.request import EnvRequest, Log


class EnvBuild(BuildsProject):
    """One environment build: the host's steps between the boxes (see ensure.py's docstring)."""

    def run(self) -> images.Entry:
        import tempfile

        declared = self.inputs.declared
        with tempfile.TemporaryDirectory(prefix="codebox-env-") as tmp:
            folder = Path(tmp)
            if self.inputs.build:
                return self._project_build_with_retries(folder)
            layer = static_layer(declared, folder / "project.tar")
            # When the dependencies image is built, one load for both images.
            deps, image_id = self._chosen_deps(self.inputs.pip, declared.project.name, self._stacked(layer))
            return self._finish(deps, layer, declared.project.name or "", image_id,
                                pytest_plugins(declared.project.entry_points))


def build_env(request: EnvRequest, inputs: EnvInputs, engine: images.EngineImages, base_id: str, key: str, log: Log,
              cancel: Cancel) -> images.Entry:
    """The environment image of ``request``, built and recorded under ``key``."""
    log(f"building the environment for {request.shown()} on {request.base_image} "
        f"({len(inputs.declared.requirements)} declared requirements"
        + ("; the project's own build runs" if inputs.build else "") + ")")
    return EnvBuild(request, inputs, engine, engine.store, base_id, key, log, cancel).run()
