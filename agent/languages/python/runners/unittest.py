"""Plain unittest, ``python3 -m unittest -v LABELS``, and the verbose lines every unittest runner writes.

A verbose unittest run (Django's runner is one) writes ``description ... outcome`` per test: the description is
``test_x (module.Class)`` (``test_x (module.Class.test_x)`` from Python 3.11), or, under it, the first line of the
test's docstring, which then names the test; a test that prints puts its outcome on a later line. At the end,
``FAIL: test_x (module.Class)`` and ``ERROR: ...`` head each traceback. These are read as SWE-bench's Django
parser reads them (its only reader of unittest's lines): ok, skipped, FAIL and ERROR per description, ``FAIL:`` /
``ERROR:`` under the method's bare name, an ``ok`` alone on a line for the last description left open; an expected
failure and an unexpected success are left out (such a named test did not pass). Ids of both Pythons' forms are
one key: a row written on 3.9 is graded on 3.11's output.
"""

from __future__ import annotations

import re
from pathlib import Path

from agent.languages.runner import ERROR, FAILED, PASSED, SKIPPED, test_files

_PASS_ENDINGS = (" ... ok", " ... OK", " ...  OK")
_OPEN = " ... "
# A Django test whose docstring says this prints its outcome lines later; SWE-bench's parser names it so.
_VERSION_DOC = "--version is equivalent to version"
_NEW_FORM = re.compile(r"^(\w+) \(([\w.]+)\.\1\)$")  # 3.11+: test_x (module.Class.test_x)
_UNITTEST_ID = re.compile(r"^\w+ \([\w.]+\)$")
_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_MIGRATING = re.compile(r"^Applying \S+\.\.\.(?=\S)")  # a migration's line run into the next test's


def verbose_statuses(log: str) -> dict[str, str]:
    """Each test of a verbose unittest log, by its description (as ``same_test`` keys it), and its status."""
    found: dict[str, str] = {}
    open_test: str | None = None
    for raw in log.splitlines():
        line = raw.strip()
        if _VERSION_DOC in line:
            found[_VERSION_DOC] = PASSED
        if _OPEN in line:
            open_test = line.split(_OPEN, 1)[0]
        for description, status in _outcomes(line):
            found[same_test(description)] = status
        if line.startswith("ok") and open_test is not None:
            found[same_test(open_test)] = PASSED
    return found


def _outcomes(line: str) -> list[tuple[str, str]]:
    """The (description, status) pairs one line says."""
    said: list[tuple[str, str]] = []
    ending = next((e for e in _PASS_ENDINGS if line.endswith(e)), None)
    if ending is not None:
        said.append((_MIGRATING.sub("", line).rsplit(ending, 1)[0], PASSED))
    if " ... skipped" in line:
        said.append((line.split(" ... skipped", 1)[0], SKIPPED))
    for word, status in (("FAIL", FAILED), ("ERROR", ERROR)):
        if line.endswith(f" ... {word}"):
            said.append((line.split(f" ... {word}", 1)[0], status))
        if line.startswith(f"{word}:") and len(line.split()) > 1:
            said.append((line.split()[1], status))  # the method's bare name, as SWE-bench's parser keys it
    return said


def same_test(description: str) -> str:
    """One key for a test however its Python described it: ``test_x (module.Class)``."""
    description = description.strip()
    match = _NEW_FORM.match(description)
    return f"{match.group(1)} ({match.group(2)})" if match else description


def label(name: str) -> str | None:
    """The dotted label a unittest runner takes for a dataset id (``module.Class.test_x``), or None (a docstring)."""
    name = same_test(name)
    if _UNITTEST_ID.match(name):
        method, where = name[:-1].split(" (", 1)
        return f"{where}.{method}"
    return name if _DOTTED.match(name) else None


def module_label(path: str) -> str:
    """A test file as the dotted module a runner takes (``tests/test_x.py`` -> tests.test_x)."""
    return path.removesuffix(".py").replace("/", ".")


class Unittest:
    name = "unittest"
    log_parser = "parse_log_django"  # SWE-bench's one parser of unittest's verbose lines

    def evidence(self, repo: Path) -> str | None:
        return None  # chosen by the dataset's ids (unittest's form), not by the repository

    def is_test_id(self, name: str) -> bool:
        return label(name) is not None

    def targets(self, names: list[str], patch_files: list[str]) -> list[str]:
        labels = [found for found in map(label, names) if found is not None]
        modules = [module_label(f) for f in test_files(patch_files) if f.endswith(".py")]
        return list(dict.fromkeys(modules or labels))

    def command(self, targets: list[str]) -> list[str]:
        return ["python3", "-m", "unittest", "-v", *targets]

    def environment(self) -> dict[str, str]:
        return {}

    def statuses(self, log: str) -> dict[str, str]:
        return verbose_statuses(log)

    def key(self, name: str) -> str:
        return same_test(name)


UNITTEST = Unittest()
