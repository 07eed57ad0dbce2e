"""Make (or reuse) the environment image of a repository: ``codebox-env:<key>``.

```
host:   read what the repo declares (never run) ─▶ the cache key ─▶ recorded? done (offline)
host:   [build-system] requires: uv resolve + download (wheels) as of today
box:    build venv ─▶ pre_install ─▶ PEP 517 hooks ─▶ METADATA          (only when metadata is dynamic,
host:   resolve Requires-Dist + declared + recipe as of DATE ─▶ lock       the project compiles or a
box:    dependencies image = base + apt + venv of the lock (shared)        recipe has pre_install)
box:    project layer = editable install + generated files (this tree only)
```

An environment image is the dependencies image (``deps.py``: built from the lock's files
alone, shared by every repository and commit with the same lock, base and Debian packages)
plus one project layer: written on the host from the static reading when the project's
metadata is static (the fast path: no repository code runs anywhere), else made by the
project's own build backend in a box (``project_build.py``) and keyed by the whole project
tree, so it is never reused for another tree. Every box is network-none, unprivileged for
repository and package code, and limited (``box.py``).

The cache key is computed from the inputs alone (``inputs.py``: the declarations, the recipe, the
as-of date, the base image id, the tree when the project builds): a hit is one record file and
one image inspect, with no network and no index (``images.py``). A miss is a build
(``env_build.py`` and the layers it names). Builds are cancellable (``cancel.py``); a failed or
cancelled build leaves no image, no container, no record.
"""

from __future__ import annotations

import time

from agent.env.cancel import NEVER, Cancel, EnvCancelled, check
from agent.env.errors import EnvError
from agent.env.info import EnvInfo
from agent.env.install import images
from agent.env.install.box import ROLE_BUILD
from agent.env.install.inputs import inputs_key, read_inputs
from agent.env.install.request import EnvRequest, Log
from agent.env.read.declared import NO_DEPENDENCIES

__all__ = ["ROLE_BUILD", "EnvRequest", "ensure_env"]


def _quiet(_: str) -> None:
    pass


def ensure_env(request: EnvRequest, log: Log = _quiet, cancel: Cancel = NEVER) -> EnvInfo:
    """The environment image for ``request``: reused when its inputs are unchanged, else built.

    ``log`` gets one line per stage (the console shows it as progress). ``cancel`` (a
    CancelToken) stops a build midway: EnvCancelled, and nothing left behind. A
    KeyboardInterrupt in this thread is one too, once the build's uv and containers are gone.
    """
    check(cancel)
    try:
        return _ensure(request, log, cancel)
    except KeyboardInterrupt:
        raise EnvCancelled("interrupted") from None


def _ensure(request: EnvRequest, log: Log, cancel: Cancel) -> EnvInfo:
    start = time.monotonic()
    inputs = read_inputs(request)
    if not (inputs.build or inputs.declared.needs_env or inputs.recipe.apt or inputs.pip or inputs.prefer):
        return EnvInfo(image=request.base_image, base_image=request.base_image, notes=[NO_DEPENDENCIES])
    engine = images.EngineImages.connect(request.backend)
    try:
        base = engine.inspect(request.base_image)
        if base is None:
            build = "codebox image build" + ("" if engine.name == "docker" else f" --backend {engine.name}")
            raise EnvError(f"the base image {request.base_image!r} is not in {engine.name}'s image store; build it "
                           f"with `{build}` (or pass --image)")
        base_id = str(base["Id"])
        key = inputs_key(base_id, inputs, request, engine.name)
        with images.building("env", key, cancel):  # one build per inputs, across threads and processes
            entry = images.lookup(engine, "env", key)
            if entry is not None:
                log(f"reusing {entry.tag} ({len(entry.packages)} packages)")
                # Counted again: a Python-era candidate after the others is no part of the key (keyed()).
                return _info(entry.model_copy(update={"candidates": len(inputs.declared.candidates)}), request,
                             built=False, start=start)
            from agent.env.install.env_build import build_env  # a build's own modules: a hit never loads them

            entry = build_env(request, inputs, engine, base_id, key, log, cancel)
    finally:
        engine.close()
    check(cancel)  # a cancel during the last step (the image load) is still a cancel; the image is whole
    info = _info(entry, request, built=True, start=start)
    log(f"built {entry.tag} ({len(entry.packages)} packages) in {info.duration_s:.1f}s")
    return info


def _info(entry: images.Entry, request: EnvRequest, built: bool, start: float) -> EnvInfo:
    return EnvInfo(
        image=entry.tag, image_id=entry.id, base_image=request.base_image, built=built, lock=entry.lock,
        installed=list(entry.packages), apt=list(entry.apt), python=entry.python, notes=list(entry.notes),
        as_of=entry.as_of, pytest_plugins=entry.pytest_plugins, duration_s=round(time.monotonic() - start, 3),
        candidate=entry.candidate, candidates=entry.candidates,
    )

