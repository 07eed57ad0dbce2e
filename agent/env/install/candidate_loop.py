"""The candidates tried in turn: the dependencies image of the first whose lock resolves and installs.

Each candidate (read/candidates.py) runs within its own time and as of its own date, with what every
candidate gets (``more``: the project's metadata, the recipe's pip packages) and the venv's own
setuptools when its day had it. One that fails as a candidate can (``_drops_candidate``) is dropped,
said in the notes, and the next tried; anything else ends the build.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from agent.env.cancel import EnvCancelled
from agent.env.errors import EnvError
from agent.env.install import images
from agent.env.install.box import Deadline, DeadlinePassed, StepFailed
from agent.env.install.candidate_lock import LocksCandidate
from agent.env.install.inputs import window
from agent.env.install.python_era import venv_seed
from agent.env.read.candidates import PROJECT_ONLY, Candidate
from agent.env.read.reqlines import Requirement, parse_requirement
from agent.env.resolve.resolve import Lock
from agent.python_versions import minor_of

if TYPE_CHECKING:
    from agent.env.install.layer import Stacked


class TriesCandidates(LocksCandidate):
    """A build's step from the candidates to one dependencies image (``_chosen_deps``)."""

    def candidates(self) -> list[Candidate]:
        """The declared candidates; a repository that declares nothing has one: the test runner and what the recipe
        asks for (a dataset spec's pip packages on a folder of plain modules)."""
        runner = [parse_requirement(self.request.runner, "codebox default (the test runner)")] \
            if self.request.runner else []
        return self.inputs.declared.candidates or [Candidate(name="the recipe's packages alone", rank=PROJECT_ONLY,
                                                             requirements=runner)]

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


def _drops_candidate(exc: BaseException, overall: Deadline) -> bool:
    """A conflict, a missing wheel, a dynamic sdist, a step that failed (an sdist that does not build), the
    candidate's own time passed: that candidate is dropped. Anything else (the engine, a cancel, the whole
    build's deadline) ends the build."""
    if isinstance(exc, EnvCancelled):
        return False
    if isinstance(exc, DeadlinePassed):
        return overall.end > time.monotonic()
    return isinstance(exc, StepFailed) or (isinstance(exc, EnvError) and exc.usage)
