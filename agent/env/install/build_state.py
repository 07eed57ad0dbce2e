"""What one environment build holds between its steps: the request, its inputs, the probed Python, the date.

The bottom layer of a build (env_build.py draws them all). The layers above share this state: a
candidate moves the date and the deadline for its own time, and every step adds its notes to the
declarations' (what the record keeps).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.env.cancel import Cancel
from agent.env.install import images
from agent.env.install.box import Deadline
from agent.env.install.inputs import EnvInputs
from agent.env.install.python_era import build_date
from agent.env.install.request import EnvRequest, Log
from agent.env.read.reqlines import Requirement
from agent.env.resolve import asof
from agent.env.resolve.resolve import Lock, check_python, resolve

if TYPE_CHECKING:
    from agent.env.resolve.sdists import BuildDynamic
    from agent.sandboxes.build import Builder


class BuildState:
    """One environment build's state, and the steps every layer uses: a dated resolve, a note."""

    def __init__(self, request: EnvRequest, inputs: EnvInputs, engine: images.Engine, client: Builder,
                 base_id: str, key: str, log: Log, cancel: Cancel) -> None:
        self.request = request
        self.inputs = inputs
        self.engine = engine
        self.client = client
        self.base_id = base_id
        self.key = key
        self.log = log
        self.cancel = cancel
        self.deadline = Deadline(request.limits.timeout_s)  # a candidate's own while it is tried
        self.exclude_newer = asof.exclude_newer(request.as_of)  # a candidate's own date while it is tried
        # The candidates' (candidate_lock.py, candidate_loop.py).
        self.chosen = 0  # the candidate built (1-based)
        self.seed_left_out = False  # the venv's setuptools (venv_seed) was not on the index
        self._tools: str | None = None  # the build-tools image's id, once a dependency's sdist needs it
        # The project's own build (own_build.py).
        self.compiles = inputs.build and inputs.declared.project.extension_modules
        self.dated_build = False  # the project's build requirements as of the task's date (after today's failed)
        self.build_pins: list[Requirement] = []  # the spec's pins a failed legacy build named (_build_with_spec_pins)
        self.pin_rounds = 0
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

    def resolve(self, requirements: list[Requirement], what: str, dated: bool = True,
                build_dynamic: BuildDynamic | None = None) -> Lock:
        """As of the task's date, or of its Python's release when the date is older: a backend of an older day may
        not run on a newer Python (setuptools 41 on 3.9). ``dated=False``: as of today, as pip's build isolation
        resolves a build's requirements. ``build_dynamic``: a requirement with no wheel for the sandbox may come
        from its sdist, built in a box (a project build's jinja2 2.10 needs a MarkupSafe that had no 3.9 wheel
        as of 2020), as the dependencies' lock does."""
        exclude_newer = build_date(self.exclude_newer, self.target.python) if dated else None
        if dated and exclude_newer != self.exclude_newer and exclude_newer is not None:
            note = (f"build requirements resolved as of {exclude_newer[:10]}, Python {self.target.python}'s release "
                    f"(the task's date {self.request.as_of[:10]} predates it)")
            if note not in self.inputs.declared.notes:
                self.inputs.declared.notes.append(note)
        when = f" as of {exclude_newer[:10]}" if exclude_newer else ""
        self.log(f"resolving {len(requirements)} {what}{when} for Python {self.target.python}")
        if build_dynamic is not None:
            from agent.env.resolve.sdists import resolve_with_sdists

            return resolve_with_sdists(requirements, self.target, self.request.index, self.cancel, exclude_newer,
                                       self.inputs.declared.notes, build_dynamic)
        return resolve(requirements, self.target, self.request.index, cancel=self.cancel, exclude_newer=exclude_newer)

    def _note(self, note: str | None) -> None:
        if note and note not in self.inputs.declared.notes:
            self.log(note)
            self.inputs.declared.notes.append(note)
