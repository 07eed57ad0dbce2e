"""The project installed by its own build backend, in a box, and the build's retries when it fails.

Its build requirements are resolved as of today, as pip's build isolation does; failing, as of the
task's date (``_build_as_of_the_date``); failing again, with the spec's pins its log names in its build
environment, a few rounds at most (``_build_with_spec_pins``: a setup.py pip builds without isolation).
The backend's metadata adds to every candidate's requirements (candidate_loop.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent.env.errors import ProjectBuildFailed
from agent.env.install import images, plan
from agent.env.install.env_image import PLUGIN_GROUP, RecordsImage, pytest_plugins
from agent.env.install.inputs import backend_extras
from agent.env.install.python_era import build_date
from agent.env.read.reqlines import Requirement, parse_requirement
from agent.env.resolve.resolve import Lock, check_python

if TYPE_CHECKING:
    from agent.env.install.project_build import ProjectBuild

# Builds again with the spec's pins a failed setup.py build names (each round names others: astropy 3.0.dev's build
# needs jinja2, then numpy), at most this many.
MAX_PIN_ROUNDS = 3


class BuildsProject(RecordsImage):
    """A build's way to the environment image when the project's own build runs (``_project_build_with_retries``)."""

    def _project_build_with_retries(self, folder: Path) -> images.Entry:
        """Today's build requirements; failing, those of the task's date; failing again, with the spec's pins its
        log names (a setup.py build pip runs without isolation), a few rounds at most. Each attempt has its own
        folder under ``folder``, named for it (today, dated, pinned-N)."""
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

    def _named_submodules(self, exc: ProjectBuildFailed) -> ProjectBuildFailed:
        """A failed build of a tree with empty submodules: the first line names them (the build may have needed
        them: astropy 1.3's astropy_helpers, which its bootstrap would download)."""
        line = self.inputs.tree.missing_submodules(self.request.shown()) if self.inputs.tree is not None else ""
        return ProjectBuildFailed(f"{line}; {exc}", exc.status) if line else exc

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
            plugins = pytest_plugins(declared.project.entry_points)
            if inputs.backend.name:
                # As of today, as pip's build isolation resolves them (and as SWE-bench's `pip install -e .`
                # did): the setuptools of a 2019 commit imports the distutils Debian's Python ships apart.
                build_lock = self.resolve(build_requires, "build requirements", dated=self.dated_build,
                                          build_dynamic=self._build_dynamic)
                box.install_build_requirements(build_lock)
                box.prepare()
                if inputs.recipe.pre_install:
                    build_lock = self._after_pre_install(box, inputs.build_requires, build_lock, needs_cython)
                more = plan.unsatisfied(box.requires(), build_lock)
                if more:  # the backend's get_requires_for_build_*: a second round on the host
                    asked = [parse_requirement(t, "the build backend (get_requires_for_build_*)") for t in more]
                    box.install_build_requirements(self.resolve(build_requires + asked, "build requirements",
                                                                dated=self.dated_build,
                                                                build_dynamic=self._build_dynamic))
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
        lock = self.resolve(wanted, "build requirements", dated=self.dated_build, build_dynamic=self._build_dynamic)
        box.install_build_requirements(lock)
        return lock
