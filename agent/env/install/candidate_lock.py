"""One candidate's lock: resolved once per key as of its date, with the recipe's preferred pins moved or dropped.

The fallbacks of one resolve, each said in a note: a preferred pin a requirement refuses is left
out first (resolve/prefer.py); one with no wheel for this Python moves to its nearest release that
has one (resolve/nearest.py); one an error names is dropped and the rest resolved again, as is the
venv's own setuptools (python_era.py) when the index has none. A dependency whose sdist's metadata
is dynamic is built into a wheel in a box, on the build-tools image when one can be made.
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from agent.env.cancel import EnvCancelled
from agent.env.errors import EnvError
from agent.env.install import images
from agent.env.install.box import DeadlinePassed
from agent.env.install.build_state import BuildState
from agent.env.install.python_era import SEED_SOURCE
from agent.env.read.reqlines import Requirement, parse_requirement
from agent.env.resolve.resolve import Lock, Pin

if TYPE_CHECKING:
    from agent.env.resolve.sdists import SdistMeta


class LocksCandidate(BuildState):
    """A build's step from requirements to a lock (``_lock``)."""

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
        try:
            built = build_wheel(self.client, self._tools_image(), self.target, pin, path, build_lock,
                                self.request.limits, self.deadline, self.cancel, self.log)
        except (EnvCancelled, DeadlinePassed):
            raise
        except EnvError as today:  # today's failing, those of the task's date (PyYAML 5.4.1's setup.py under Cython 3)
            if self.exclude_newer is None:
                raise
            try:
                build_lock = self.resolve(asked, f"build requirements of {pin.filename}", dated=True)
                built = build_wheel(self.client, self._tools_image(), self.target, pin, path, build_lock,
                                    self.request.limits, self.deadline, self.cancel, self.log)
            except (EnvCancelled, DeadlinePassed):
                raise
            except EnvError:
                raise today from None  # the first build's log says more than a date's missing setuptools
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


def _names(message: str, name: str) -> bool:
    """Whether an error message names the package ``name`` (any spelling of it: - _ . are one)."""
    import re

    words = re.split(r"[-_.]", name.lower())
    return re.search(r"(?<![\w.-])" + r"[-_.]".join(map(re.escape, words)) + r"(?![\w-])", message.lower()) is not None
