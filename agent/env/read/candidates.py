"""The environments a repository's declarations offer, in order of how close each is to what its CI installs.

A repository often declares more than one way to set up its tests: a tox test env, a test extra, a
pinned test requirements file, a minimum-versions pin file, a dev file with docs and linters, an old
``requirements.txt``. Joined into one set, one bad source sinks all (flask's minimum pins conflict
with its dev pins; requests' ``requirements.txt`` pins a 2012 package with no wheel). So each source
is a *group*, and each group plus what every environment gets (the project's own dependencies and
what the user asked for) is one *candidate*. The build tries them in order and keeps the first that
resolves and installs (``install/ensure.py``); eval may ask for the next when the chosen one fails
the row's PASS_TO_PASS.

Ranks (lower is closer to the project's CI):

1. the tox test env, the project's test extra (test, tests, testing), a test dependency group or
   hatch test env, ``tests_require``;
2. a requirements file whose name says test (``requirements/tests.txt``, ``test-requirements.txt``);
3. the rest: the dev extra or group, a dev or CI requirements file, ``requirements.txt``;
4. the project's dependencies alone (always last: the fallback that almost always resolves).
"""

from __future__ import annotations

from packaging.utils import canonicalize_name
from pydantic import BaseModel, Field

from agent.env.read.reqlines import Requirement, parse_requirement

CI, TEST_FILE, OTHER, PROJECT_ONLY = 1, 2, 3, 4
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


def dedupe(requirements: list[Requirement]) -> list[Requirement]:
    """Each requirement once (by its text), in first-seen order."""
    seen: set[str] = set()
    kept = []
    for req in requirements:
        if req.text not in seen:
            seen.add(req.text)
            kept.append(req)
    return kept
