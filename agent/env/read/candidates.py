"""The environments a repository's declarations offer, in order of how close each is to what its CI installs.

A repository often declares more than one way to set up its tests: a tox test env, a test extra, a
pinned test requirements file, a minimum-versions pin file, a dev file with docs and linters, an old
``requirements.txt``. Joined into one set, one bad source sinks all (flask's minimum pins conflict
with its dev pins; requests' ``requirements.txt`` pins a 2012 package with no wheel). So each source
is a *group*, and each group plus what every environment gets (the project's own dependencies and
what the user asked for) is one *candidate*. The build tries them in order and keeps the first that
resolves and installs (``install/candidate_loop.py``); eval may ask for the next when the chosen one fails
the row's PASS_TO_PASS.

Ranks (lower is closer to the project's CI):

1. the tox test env, the project's test extra (test, tests, testing), a test dependency group or
   hatch test env, ``tests_require``;
2. a requirements file whose name says test (``requirements/tests.txt``, ``test-requirements.txt``);
3. the rest: the dev extra or group, a dev or CI requirements file, ``requirements.txt``;
4. the project's dependencies alone (the fallback that almost always resolves);
5. when the task's Python was released after the task's date (a 2012 row on SWE-bench's Python 3.9), the
   project's dependencies alone again, resolved as of that Python's release: the test runner of the
   task's own day may not run on a Python years newer (pytest 2.x, which the project does not name, dies
   configuring itself on 3.9), and a runner of the Python's day is what a dataset's spec installs unpinned
   (SWE-bench's requests rows: Python 3.9 and conda's ``pytest``).
"""

from __future__ import annotations

from packaging.utils import canonicalize_name
from pydantic import BaseModel, Field

from agent.env.read.reqlines import Requirement, parse_requirement

CI, TEST_FILE, OTHER, PROJECT_ONLY, PYTHON_ERA = 1, 2, 3, 4, 5
PROJECT_ONLY_NAME = "the project's own dependencies"


class Group(BaseModel):
    """One source of test requirements: its name (what the report shows) and rank."""

    rank: int
    name: str


class Candidate(BaseModel):
    """One environment to try: a group with everything every environment gets."""

    name: str
    rank: int
    requirements: list[Requirement] = Field(default_factory=list)
    as_of: str | None = None
    """Resolved as of this timestamp instead of the task's date (rank PYTHON_ERA only)."""


def make_candidates(base: list[Requirement], groups: list[tuple[Group, list[Requirement]]],
                    runner: str | None, project: bool) -> list[Candidate]:
    """Each group on top of ``base``, by rank (stable), then ``base`` alone when there is a ``project`` (a folder
    of requirement files alone has no fallback); equal sets of requirements kept once (the first); ``runner``
    (None: none) added to each candidate that names no package of that name."""
    ordered = sorted(enumerate(groups), key=lambda item: (item[1][0].rank, item[0]))
    alone = Group(rank=PROJECT_ONLY, name=PROJECT_ONLY_NAME)
    last: list[tuple[int, tuple[Group, list[Requirement]]]] = [(len(groups), (alone, []))] if project or base else []
    found: list[Candidate] = []
    seen: set[frozenset[str]] = set()
    for _, (group, reqs) in [*ordered, *last]:
        requirements = dedupe([*base, *reqs])
        if runner and canonicalize_name(runner) not in {r.name for r in requirements}:
            requirements.append(parse_requirement(runner, "codebox default (the test runner)"))
        texts = frozenset(r.text for r in requirements)
        if texts in seen or not texts:
            continue
        seen.add(texts)
        found.append(Candidate(name=group.name, rank=group.rank, requirements=requirements))
    return found


def with_python_era(candidates: list[Candidate], exclude_newer: str | None, python: str,
                    released: str | None) -> list[Candidate]:
    """``candidates`` and, when ``python`` was ``released`` (YYYY-MM-DD) after ``exclude_newer`` (the task's date;
    None: no limit), the project's own dependencies again, as of that release (rank PYTHON_ERA)."""
    alone = next((c for c in candidates if c.rank == PROJECT_ONLY), None)
    if alone is None or exclude_newer is None or released is None or f"{released}T00:00:00Z" <= exclude_newer:
        return candidates
    era = alone.model_copy(update={"name": f"{PROJECT_ONLY_NAME} as of Python {python}'s release ({released})",
                                   "rank": PYTHON_ERA, "as_of": f"{released}T00:00:00Z"})
    return [*candidates, era]


def dedupe(requirements: list[Requirement]) -> list[Requirement]:
    """Each requirement once (by its text), in first-seen order."""
    seen: set[str] = set()
    kept = []
    for req in requirements:
        if req.text not in seen:
            seen.add(req.text)
            kept.append(req)
    return kept
