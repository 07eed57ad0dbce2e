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

The cache key is computed from the inputs alone (the declarations, the recipe, the as-of
date, the base image id, the tree when the project builds): a hit is one record file and
one image inspect, with no network and no index (``images.py``). Builds are cancellable
(``cancel.py``); a failed or cancelled build leaves no image, no container, no record.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from agent import defaults
from agent.env.cancel import NEVER, Cancel, EnvCancelled, check
from agent.env.errors import EnvError, ProjectBuildFailed
from agent.env.info import EnvInfo
from agent.env.install import images, plan
from agent.env.install.box import ROLE_BUILD, BuildLimits, Deadline, DeadlinePassed, StepFailed
from agent.env.install.plan import Backend
from agent.env.install.tree import Tree, read_tree
from agent.env.read.candidates import PROJECT_ONLY, PYTHON_ERA, Candidate, with_python_era
from agent.env.read.declared import DEFAULT_EXTRAS, DEFAULT_RUNNER, NO_DEPENDENCIES, Declared, read_declared
from agent.env.read.reqlines import Requirement, parse_requirement
from agent.env.read.source_policy import check_sources
from agent.env.recipe import Recipe
from agent.env.resolve import apt, asof
from agent.env.resolve.resolve import PREFERRED, RECIPE_PIP, IndexConfig, Lock, Pin, check_python, resolve
from agent.python_versions import minor_of

if TYPE_CHECKING:
    from agent.env.install.layer import Stacked
    from agent.env.install.project_build import ProjectBuild
    from agent.env.resolve.sdists import SdistMeta
    from agent.sandboxes.build import Builder

FORMAT_VERSION = "3"  # 3: a dated environment of a Python before 3.12 gets setuptools (venv_seed)
# Builds again with the spec's pins a failed setup.py build names (each round names others: astropy 3.0.dev's build
# needs jinja2, then numpy), at most this many.
MAX_PIN_ROUNDS = 3
PLUGIN_GROUP = "pytest11"  # the entry points pytest loads: recorded, so eval can tell when a patch changes them
Log = Callable[[str], None]
__all__ = ["ROLE_BUILD", "EnvRequest", "ensure_env"]



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


class _Inputs(BaseModel):
    """Everything read on the host before any container: what the key is made of."""

    declared: Declared
    recipe: Recipe
    pip: list[Requirement]
    prefer: list[Requirement]
    backend: Backend
    build_requires: list[Requirement]
    build: bool  # the project's own build runs (else: the static fast path)
    tree: Tree | None = None


def _read_inputs(request: EnvRequest) -> _Inputs:
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
    return _Inputs(declared=declared, recipe=recipe, pip=pip, prefer=prefer, backend=backend, build_requires=requires,
                   build=build, tree=tree)


def _ensure(request: EnvRequest, log: Log, cancel: Cancel) -> EnvInfo:
    start = time.monotonic()
    inputs = _read_inputs(request)
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
            entry = _build(request, inputs, engine, base_id, key, log, cancel)
    finally:
        engine.close()
    check(cancel)  # a cancel during the last step (the image load) is still a cancel; the image is whole
    info = _info(entry, request, built=True, start=start)
    log(f"built {entry.tag} ({len(entry.packages)} packages) in {info.duration_s:.1f}s")
    return info


def inputs_key(base_id: str, inputs: _Inputs, request: EnvRequest, engine: str = images.DEFAULT_ENGINE) -> str:
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


def _info(entry: images.Entry, request: EnvRequest, built: bool, start: float) -> EnvInfo:
    return EnvInfo(
        image=entry.tag, image_id=entry.id, base_image=request.base_image, built=built, lock=entry.lock,
        installed=list(entry.packages), apt=list(entry.apt), python=entry.python, notes=list(entry.notes),
        as_of=entry.as_of, pytest_plugins=entry.pytest_plugins, duration_s=round(time.monotonic() - start, 3),
        candidate=entry.candidate, candidates=entry.candidates,
    )


class _Build:
    """One environment build: the host's steps between the boxes (see the module docstring)."""

    def __init__(self, request: EnvRequest, inputs: _Inputs, engine: images.Engine, client: Builder,
                 base_id: str, key: str, log: Log, cancel: Cancel) -> None:
        self.request = request
        self.inputs = inputs
        self.engine = engine
        self.client = client
        self.base_id = base_id
        self.key = key
        self.log = log
        self.cancel = cancel
        self.deadline = Deadline(request.limits.timeout_s)
        self.exclude_newer = asof.exclude_newer(request.as_of)
        self.compiles = inputs.build and inputs.declared.project.extension_modules
        self.chosen = 0  # the candidate built (1-based)
        self.seed_left_out = False  # the venv's setuptools (venv_seed) was not on the index
        self.dated_build = False  # the project's build requirements as of the task's date (after today's failed)
        self.build_pins: list[Requirement] = []  # the spec's pins a failed legacy build named (_build_with_spec_pins)
        self.pin_rounds = 0
        self._tools: str | None = None  # the build-tools image's id, once a dependency's sdist needs it
        from agent.env.install.probe import probe  # a build's own imports: a cache hit never needs them

        self.target, self.installed = probe(client, request.base_image,
                                            with_debs=bool(inputs.recipe.apt) or self.compiles, cancel=cancel)
        self._note(check_python(inputs.declared.project.requires_python, self.target, request.base_image))
        if request.stands_in_for:
            self._date_of_the_stand_in()

    def _date_of_the_stand_in(self) -> None:
        """Packages as of the stand-in Python's release when the task's date is older (see EnvRequest)."""
        moved = build_date(self.exclude_newer, self.target.python)
        if moved is None or moved == self.exclude_newer:
            return
        minor = ".".join(self.target.python.split(".")[:2])
        note = (f"packages resolved as of {moved[:10]}, Python {minor}'s release: it stands in for "
                f"{self.request.stands_in_for}, and the task's date {self.request.as_of[:10]} predates it")
        self.inputs.declared.notes.append(note)
        self.log(note)
        self.exclude_newer = moved

    def resolve(self, requirements: list[Requirement], what: str, dated: bool = True) -> Lock:
        """As of the task's date, or of its Python's release when the date is older: a backend of an older day may
        not run on a newer Python (setuptools 41 on 3.9). ``dated=False``: as of today, as pip's build isolation
        resolves a build's requirements."""
        exclude_newer = build_date(self.exclude_newer, self.target.python) if dated else None
        if dated and exclude_newer != self.exclude_newer and exclude_newer is not None:
            note = (f"build requirements resolved as of {exclude_newer[:10]}, Python {self.target.python}'s release "
                    f"(the task's date {self.request.as_of[:10]} predates it)")
            if note not in self.inputs.declared.notes:
                self.inputs.declared.notes.append(note)
        when = f" as of {exclude_newer[:10]}" if exclude_newer else ""
        self.log(f"resolving {len(requirements)} {what}{when} for Python {self.target.python}")
        return resolve(requirements, self.target, self.request.index, cancel=self.cancel, exclude_newer=exclude_newer)

    def run(self) -> images.Entry:
        import tempfile

        declared = self.inputs.declared
        with tempfile.TemporaryDirectory(prefix="codebox-env-") as tmp:
            folder = Path(tmp)
            if self.inputs.build:
                # Today's build requirements; failing, those of the task's date; failing again, with the spec's
                # pins its log names (a setup.py build pip runs without isolation), a few rounds at most.
                attempt = "today"
                while True:
                    try:
                        return self._with_project_build(folder / attempt, self.compiles)
                    except ProjectBuildFailed as exc:
                        if self._build_as_of_the_date(exc):
                            attempt = "dated"
                        elif self._build_with_spec_pins(exc):
                            attempt = f"pinned-{self.pin_rounds}"
                        else:
                            raise self._named_submodules(exc) from None
            layer = static_layer(declared, folder / "project.tar")
            # When the dependencies image is built, one load for both images.
            deps, image_id = self._chosen_deps(self.inputs.pip, declared.project.name, self._stacked(layer))
            return self._finish(deps, layer, declared.project.name or "", image_id,
                                _plugins(declared.project.entry_points))

    def _named_submodules(self, exc: ProjectBuildFailed) -> ProjectBuildFailed:
        """A failed build of a tree with empty submodules: the first line names them (the build may have needed
        them: astropy 1.3's astropy_helpers, which its bootstrap would download)."""
        line = self.inputs.tree.missing_submodules(self.request.shown()) if self.inputs.tree is not None else ""
        return ProjectBuildFailed(f"{line}; {exc}", exc.status) if line else exc

    def _note(self, note: str | None) -> None:
        if note and note not in self.inputs.declared.notes:
            self.log(note)
            self.inputs.declared.notes.append(note)

    def _build_as_of_the_date(self, exc: ProjectBuildFailed) -> bool:
        """Whether the project's build runs again with its build requirements as of the task's date (from here on):
        when it failed today's (not killed: a signal or the memory is not the backend's doing) and the task has a
        date. A backend of today may refuse what the one of its day took (setuptools with today's packaging refuses
        semver's 2022 ``python_requires = >=3.7.*``, which the setuptools of its day read)."""
        if self.dated_build or self.exclude_newer is None or exc.status >= 128 or self.deadline.remaining() <= 0:
            return False
        self.dated_build = True
        when = (build_date(self.exclude_newer, self.target.python) or "")[:10]
        self.log(f"the project's build failed with today's build requirements: again with those of {when}")
        self.inputs.declared.notes.append(
            f"the project's build failed with today's build requirements ({' '.join(str(exc).split())[:200]}); it "
            f"ran again with those as of {when}, the task's date (or its Python's release)")
        return True

    def _build_with_spec_pins(self, exc: ProjectBuildFailed) -> bool:
        """Whether the project's build runs again with the recipe's preferred pins its failure names in its build
        environment (those named before stay; MAX_PIN_ROUNDS): a setup.py with no ``[build-system]`` is built by
        pip without isolation, in the environment SWE-bench's spec installed first (astropy 3.0.dev's build needs
        jinja2 and numpy)."""
        if self.pin_rounds >= MAX_PIN_ROUNDS or exc.status >= 128 or self.deadline.remaining() <= 0:
            return False
        had = {r.name for r in self.build_pins}
        named = [r for r in plan.pins_a_legacy_build_names(str(exc), self.inputs.prefer, self.request.repo)
                 if r.name not in had]
        if not named:
            return False
        self.pin_rounds += 1
        from agent.env.resolve import nearest

        moved, said = nearest.moved_pins(named, self.target, self.request.index, self.cancel,
                                         made_for=self.request.stands_in_for)
        added = [moved.get(r.text, r) for r in named]
        self.build_pins += added
        shown = ", ".join(r.text for r in added)
        self.log(f"the project's build failed naming {shown}: again with it in the build environment")
        self.inputs.declared.notes += [*said, f"the project's build (a setup.py with no [build-system]: pip builds "
                                       f"it without isolation, after the spec's packages) failed naming {shown}; it "
                                       "ran again with them in its build environment"]
        return True

    def _with_project_build(self, folder: Path, compiles: bool) -> images.Entry:
        from agent.env.install import metadata
        from agent.env.install.project_build import ProjectBuild
        from agent.env.install.tools import ensure_tools

        request, inputs, declared = self.request, self.inputs, self.inputs.declared
        assert inputs.tree is not None
        image = request.base_image
        if compiles:
            image = ensure_tools(self.client, self.engine, request.base_image, self.base_id, self.target,
                                 self.installed, request.limits, self.deadline, self.cancel, self.log,
                                 request.shown()).id
        needs_cython = compiles and plan.pyx_without_c(inputs.tree.files)
        build_requires = plan.build_requirements(inputs.build_requires, inputs.backend, declared, needs_cython)
        build_requires += [r for r in self.build_pins if r.name not in {b.name for b in build_requires}]
        with ProjectBuild(self.client, image, request.repo, inputs.tree, inputs.backend, inputs.recipe,
                          declared.project.import_root, declared.project.version, folder / "project",
                          request.limits, self.deadline, self.cancel, self.log, self.target.executable,
                          self.target.debian) as box:
            self.log("starting the project's build container (network none, unprivileged)")
            box.start(self.installed)
            requirements = list(declared.requirements)
            name = declared.project.name or ""
            plugins = _plugins(declared.project.entry_points)
            if inputs.backend.name:
                # As of today, as pip's build isolation resolves them (and as SWE-bench's `pip install -e .`
                # did): the setuptools of a 2019 commit imports the distutils Debian's Python ships apart.
                build_lock = self.resolve(build_requires, "build requirements", dated=self.dated_build)
                box.install_build_requirements(build_lock)
                box.prepare()
                if inputs.recipe.pre_install:
                    build_lock = self._after_pre_install(box, inputs.build_requires, build_lock, needs_cython)
                more = plan.unsatisfied(box.requires(), build_lock)
                if more:  # the backend's get_requires_for_build_*: a second round on the host
                    asked = [parse_requirement(t, "the build backend (get_requires_for_build_*)") for t in more]
                    box.install_build_requirements(self.resolve(build_requires + asked, "build requirements",
                                                                dated=self.dated_build))
                meta = box.metadata()
                self._note(check_python(meta.requires_python, self.target, request.base_image))
                requirements += metadata.requirements(meta, backend_extras(declared, inputs.recipe), self.target)
                name = meta.name
                plugins = metadata.entry_point_group(meta.entry_points, PLUGIN_GROUP)
                self.log(f"the project's backend says {meta.name} {meta.version}, "
                         f"{len(meta.requires_dist)} Requires-Dist")
            else:
                box.prepare()
            deps, _ = self._chosen_deps(requirements[len(declared.requirements):] + inputs.pip, name)
            self.log("installing the project with its own build backend")
            layer = box.build(folder / "project.tar")
        return self._finish(deps, layer, name, plugins=plugins)

    def candidates(self) -> list[Candidate]:
        """The declared candidates; a repository that declares nothing has one: the test runner and what the recipe
        asks for (a dataset spec's pip packages on a folder of plain modules)."""
        runner = [parse_requirement(self.request.runner, "codebox default (the test runner)")] \
            if self.request.runner else []
        return self.inputs.declared.candidates or [Candidate(name="the recipe's packages alone", rank=PROJECT_ONLY,
                                                             requirements=runner)]

    def _after_pre_install(self, box: ProjectBuild, declared: list[Requirement], lock: Lock,
                           needs_cython: bool) -> Lock:
        """The build requirements as the recipe's pre_install left ``[build-system]`` (pip reads them after it),
        installed over the first ones when they differ."""
        after = plan.requires_after_pre_install(box.pyproject(), declared)
        if after is None:
            return lock
        changed = sorted({r.text for r in after} - {r.text for r in declared})
        self.log(f"pre_install changed [build-system] requires: {', '.join(changed) or 'some removed'}")
        self.inputs.declared.notes.append(f"build requirements as pre_install left pyproject.toml: "
                                          f"{', '.join(r.text for r in after)}")
        wanted = plan.build_requirements(after, self.inputs.backend, self.inputs.declared, needs_cython)
        lock = self.resolve(wanted, "build requirements", dated=self.dated_build)
        box.install_build_requirements(lock)
        return lock

    def _chosen_deps(self, more: list[Requirement], project: str | None,
                     on_top: Stacked | None = None) -> tuple[images.Entry, str | None]:
        """The dependencies image of the first candidate (read/candidates.py) that resolves and installs, each
        with ``more`` and within its own time; one that fails is dropped, said in the notes, and the next tried."""
        tried = window(self.candidates(), self.request)
        if not tried:
            raise EnvError(f"no environment candidate is left to try (skipped {self.request.skip})", usage=True)
        dropped: list[str] = []
        overall = self.deadline
        for number, candidate in enumerate(tried, start=1 + self.request.skip):
            self.log(f"environment candidate {number}: {candidate.name} ({len(candidate.requirements)} requirements)")
            self.deadline = Deadline(min(self.request.candidate_timeout_s, overall.remaining()))
            task_date, self.exclude_newer = self.exclude_newer, candidate.as_of or self.exclude_newer
            seeded = venv_seed([*candidate.requirements, *more], self.target.python, self.exclude_newer)
            self.seed_left_out = False
            try:
                found = self._locked_deps(candidate.requirements + more + seeded, project, on_top)
            except (EnvError, StepFailed) as exc:
                if len(tried) == 1 or not _drops_candidate(exc, overall):
                    raise
                reason = " ".join(str(exc).split())[:600]
                self.log(f"candidate {number} ({candidate.name}) dropped: {reason}")
                dropped.append(f"environment candidate {number} ({candidate.name}) dropped: {reason}")
                continue
            finally:
                self.deadline, self.exclude_newer = overall, task_date
            self.inputs.declared.notes += [*dropped, f"environment: candidate {number} of "
                                           f"{len(self.candidates())}, {candidate.name}"]
            if seeded and not self.seed_left_out:
                self._note(f"setuptools added, as every venv of Python {minor_of(self.target.python)} had it then "
                           "(packages of that time import pkg_resources unasked)")
            self.chosen = number
            return found
        raise EnvError(f"none of {len(tried)} environment candidates could be installed: " + "; ".join(dropped),
                       usage=True)

    def _lock(self, requirements: list[Requirement], project: str | None) -> Lock:
        from packaging.utils import canonicalize_name

        from agent.env.resolve.resolve import past_the_date

        when = f" as of {self.exclude_newer[:10]}" if self.exclude_newer else ""
        self.log(f"resolving {len(requirements)} requirements{when} for Python {self.target.python} "
                 f"({self.target.platform})")
        from agent.env.resolve import lock_memo

        memo = lock_memo.memo_key(requirements, self.inputs.prefer, self.target, self.request.index,
                                  self.exclude_newer)
        # One resolution per key at a time: eval prepares the next row's environment while a row runs, and two rows
        # of a version ask for the same lock; the second waits and takes the first's.
        with images.held(lock_memo.lock_path(memo), f"lock-{memo}", self.cancel) if memo else nullcontext():
            kept = lock_memo.recall(memo) if memo else None
            if kept is not None:
                lock, notes = kept
                self.seed_left_out = any(n.startswith("setuptools left out:") for n in notes)
                self.log(f"the same requirements were resolved before as of that date: lock {lock.digest()[:12]} "
                         "reused")
            else:
                notes = []
                lock = self._with_preferred(requirements, notes)
                notes += past_the_date(lock, [*requirements, *self.inputs.prefer], self.exclude_newer)
                if memo:
                    lock_memo.keep(memo, lock, notes)
        if lock.undated:
            day = (self.exclude_newer or "")[:10]
            notes.append(f"{', '.join(lock.undated)}: no version as of {day} on the index (its "
                         "history deleted, or newer than the date): the first versions after it are used")
        for note in notes:
            self.log(note)
        self.inputs.declared.notes += [n for n in notes if n not in self.inputs.declared.notes]
        if project:  # a dependency may pull the project from the index: /repo is the project
            own = canonicalize_name(project)
            lock = Lock(pins=[p for p in lock.pins if canonicalize_name(p.name) != own], undated=lock.undated)
        return lock

    def _with_preferred(self, requirements: list[Requirement], notes: list[str]) -> Lock:
        """The lock of ``requirements`` and the recipe's preferred versions. A preferred pin that one of
        ``requirements`` refuses is left out first (resolve/prefer.py: the project's install comes later); one with
        no wheel for this Python is moved to its nearest release that has one (resolve/nearest.py); one an error
        names (a conflict, no wheel) is dropped with a note and the rest resolved again."""
        from agent.env.install.metadata import marker_environment
        from agent.env.resolve import nearest
        from agent.env.resolve.prefer import replaced_pins
        from agent.env.resolve.sdists import resolve_with_sdists

        prefer, replaced = replaced_pins(self.inputs.prefer, requirements, marker_environment(self.target))
        notes += replaced
        # A pin with no wheel for this Python (made for another, when a stand-in runs): its series' nearest release
        # that has one (any series' for a stand-in), before uv would take its sdist to build.
        moved, said = nearest.moved_pins(prefer, self.target, self.request.index, self.cancel,
                                         made_for=self.request.stands_in_for)
        prefer = [moved.get(r.text, r) for r in prefer]
        notes += said
        while True:
            try:
                return resolve_with_sdists(requirements + prefer, self.target, self.request.index, self.cancel,
                                           self.exclude_newer, notes, self._build_dynamic)
            except EnvError as exc:
                named = [r for r in prefer if _names(str(exc), r.name)]
                # The venv's own setuptools (venv_seed) is asked for by no one: an index without it loses nothing.
                unasked = [r for r in requirements if r.source.endswith(SEED_SOURCE) and _names(str(exc), r.name)]
                if not named and not unasked:
                    raise
                prefer = [r for r in prefer if r not in named]
                requirements = [r for r in requirements if r not in unasked]
                self.seed_left_out = self.seed_left_out or bool(unasked)
                notes.append(f"{'preferred ' if named else ''}{', '.join(r.text for r in named + unasked)} left out: "
                             f"{str(exc)[:300]}")

    def _build_dynamic(self, pin: Pin, path: Path, build_requires: list[str]) -> SdistMeta:
        """A dependency whose sdist's metadata is dynamic: its wheel built in a box (install/sdist_wheel.py)."""
        from agent.env.install.sdist_wheel import build_wheel
        from agent.env.resolve.sdists import SdistMeta, checked_requires

        asked = [parse_requirement(t, f"{pin.filename} [build-system] requires") for t in build_requires]
        # As of today, as pip's build isolation does: an sdist of 2014 names no setuptools bound, and the
        # setuptools of its day imports the stdlib distutils that Python 3.12 (and Debian's 3.11 without
        # python3-distutils) lacks; setuptools 60+ carries its own.
        build_lock = self.resolve(asked, f"build requirements of {pin.filename}", dated=False)
        built = build_wheel(self.client, self._tools_image(), self.target, pin, path, build_lock,
                            self.request.limits, self.deadline, self.cancel, self.log)
        return SdistMeta(requires_dist=checked_requires(built.requires_dist, pin), build_requires=build_requires,
                         wheel=built.pin)

    def _tools_image(self) -> str:
        """The build-tools image (a C compiler, Python's headers) of the base, made once: where a dependency's sdist
        is built, as pip builds one on a machine with a compiler (SWE-bench's images have gcc). typed_ast 1.4.1,
        which sphinx 3.x's test extra names as of 2020, has no wheel for 3.9 and compiles its parser."""
        from agent.env.install.probe import probe
        from agent.env.install.tools import ensure_tools

        if self._tools is None:
            debs = self.installed or probe(self.client, self.request.base_image, with_debs=True, cancel=self.cancel)[1]
            try:
                self._tools = ensure_tools(self.client, self.engine, self.request.base_image, self.base_id,
                                           self.target, debs, self.request.limits, self.deadline, self.cancel,
                                           self.log, self.request.shown()).id
            except (EnvCancelled, DeadlinePassed):
                raise
            except EnvError as exc:  # no Debian mirror (an offline index): a pure-Python sdist builds all the same
                self._note(f"the build-tools image could not be made ({' '.join(str(exc).split())[:200]}): "
                           "dependencies' sdists are built without a C compiler")
                self._tools = self.request.base_image
        return self._tools

    def _locked_deps(self, requirements: list[Requirement], project: str | None,
                     on_top: Stacked | None = None) -> tuple[images.Entry, str | None]:
        """The lock of ``requirements`` and its dependencies image (see ``ensure_deps``). When no recorded
        image could be that lock's, the box that builds it starts while uv resolves (``deps_box.py``)."""
        from agent.env.install.deps import ensure_deps
        from agent.env.install.deps_box import EarlyBox, may_reuse
        from agent.env.resolve.sdists import build_requirements

        early = None
        if not self.inputs.recipe.apt and not may_reuse(self.base_id, requirements, project):
            early = EarlyBox(self.client, self.request.base_image, self.request.limits, self.deadline, self.cancel,
                             self.log)
        try:
            lock = self._lock(requirements, project)
            sdist_build = (self.resolve(build_requirements(lock), "sdist build requirements") if lock.sdists()
                           else Lock(pins=[]))
            return ensure_deps(self.client, self.engine, self.request.base_image, self.base_id, self.target, lock,
                               sdist_build, list(self.inputs.recipe.apt), self.installed, self.request.limits,
                               self.deadline, self.cancel, self.log, self.request.shown(), on_top, early)
        finally:
            if early is not None:
                early.close()

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


def _drops_candidate(exc: BaseException, overall: Deadline) -> bool:
    """A conflict, a missing wheel, a dynamic sdist, a step that failed (an sdist that does not build), the
    candidate's own time passed: that candidate is dropped. Anything else (the engine, a cancel, the whole
    build's deadline) ends the build."""
    if isinstance(exc, EnvCancelled):
        return False
    if isinstance(exc, DeadlinePassed):
        return overall.end > time.monotonic()
    return isinstance(exc, StepFailed) or (isinstance(exc, EnvError) and exc.usage)


def _build(request: EnvRequest, inputs: _Inputs, engine: images.EngineImages, base_id: str, key: str, log: Log,
           cancel: Cancel) -> images.Entry:
    log(f"building the environment for {request.shown()} on {request.base_image} "
        f"({len(inputs.declared.requirements)} declared requirements"
        + ("; the project's own build runs" if inputs.build else "") + ")")
    return _Build(request, inputs, engine, engine.store, base_id, key, log, cancel).run()


def _names(message: str, name: str) -> bool:
    """Whether an error message names the package ``name`` (any spelling of it: - _ . are one)."""
    import re

    words = re.split(r"[-_.]", name.lower())
    return re.search(r"(?<![\w.-])" + r"[-_.]".join(map(re.escape, words)) + r"(?![\w-])", message.lower()) is not None


# Before Python 3.12 (released on this day), `python -m venv` and virtualenv put setuptools into every environment.
SEEDED_BEFORE = ((3, 12), "2023-10-02")
SEED_SOURCE = " venv's own"


def venv_seed(requirements: list[Requirement], python: str, as_of: str | None) -> list[Requirement]:
    """setuptools, for an environment of a Python older than 3.12 resolved as of a day before 3.12 was out, when
    no requirement names it: the environments of that time had it unasked, and their packages import
    ``pkg_resources`` without declaring it (hypothesis 5.35's entry points). Environments of today (as of now,
    or a later day) get what they declare, as before."""
    from packaging.utils import canonicalize_name

    from agent.python_versions import key

    minor = minor_of(python)
    (last, until) = SEEDED_BEFORE
    if minor is None or key(minor) >= last or as_of is None or as_of[:10] >= until:
        return []
    if any(canonicalize_name(r.name) == "setuptools" for r in requirements):
        return []
    return [Requirement(text="setuptools", name="setuptools", source=f"a Python {minor}{SEED_SOURCE}")]


def build_date(exclude_newer: str | None, python: str) -> str | None:
    """``exclude_newer``, or the release day of ``python``'s minor when that is later (None: no limit)."""
    from agent.python_versions import RELEASED, minor_of

    released = RELEASED.get(minor_of(python) or "")
    if exclude_newer is None or released is None:
        return exclude_newer
    return max(exclude_newer, f"{released}T00:00:00Z")


def _plugins(entry_points: dict[str, dict[str, str]]) -> list[str]:
    return sorted(f"{name} = {target}" for name, target in entry_points.get(PLUGIN_GROUP, {}).items())


def static_layer(declared: Declared, dest: Path) -> Path:
    """The project layer from the static reading: a .pth naming /repo, a dist-info, console scripts."""
    from agent.env.install.layer import PROJECT, VENV, layer_from_files
    from agent.env.install.project import console_scripts, editable_files

    files = {f"{PROJECT}/site/{relative}": (text, 0o644) for relative, text in editable_files(declared.project).items()}
    for name, text in console_scripts(declared.project, f"{VENV}/bin/python").items():
        files[f"{PROJECT}/bin/{name}"] = (text, 0o755)
    return layer_from_files(dest, files)
