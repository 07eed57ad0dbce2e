"""Django's own runner, as SWE-bench runs it: ``tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1``
on the test_patch's modules, read from its verbose unittest lines (unittest.py: ``test_x (module.Class)``, or a
docstring's first line, as SWE-bench's Django parser names tests)."""

from __future__ import annotations

from pathlib import Path

from agent.languages.python.runners.unittest import label, same_test, verbose_statuses
from agent.languages.runner import regular_file, test_files

RUNTESTS = "tests/runtests.py"


class Django:
    name = "django"
    log_parser = "parse_log_django"

    def evidence(self, repo: Path) -> str | None:
        found = regular_file(repo, RUNTESTS) and regular_file(repo, "django/__init__.py")
        return RUNTESTS if found else None

    def is_test_id(self, name: str) -> bool:
        """Any line of text: a docstring's first line names a test too."""
        return any(c.isalpha() for c in name) and not name.startswith("[")

    def targets(self, names: list[str], patch_files: list[str]) -> list[str]:
        """SWE-bench's directives: each test_patch file as a label (tests/ off, no .py, dots); with no test_patch,
        the named tests' own labels."""
        labels = [_directive(f) for f in test_files(patch_files)]
        if not labels:
            labels = [found for found in map(label, names) if found is not None]
        return list(dict.fromkeys(labels))

    def command(self, targets: list[str]) -> list[str]:
        return ["python3", RUNTESTS, "--verbosity", "2", "--settings=test_sqlite", "--parallel", "1", *targets]

    def environment(self) -> dict[str, str]:
        return {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf8"}

    def statuses(self, log: str) -> dict[str, str]:
        return verbose_statuses(log)

    def key(self, name: str) -> str:
        return same_test(name)


def _directive(path: str) -> str:
    return path.removesuffix(".py").removeprefix("tests/").replace("/", ".")


DJANGO = Django()
