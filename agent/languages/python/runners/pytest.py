"""pytest, as SWE-bench runs it (``pytest -rA`` on the named tests' files) and reads it per repository.

codebox reads pytest's outcomes from its JUnit report (agent/eval/junit.py), not its terminal: this module says
which ids are node ids, which files they name, and the per-repository quirks of SWE-bench's parsers, which
rewrite an id before the dataset's is looked up (``rewrite``): the id as SWE-bench's parser of that repository
writes it is the key the dataset's id matches.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from agent.languages.python import detect

# SWE-bench's parser per repository, where it is not plain parse_log_pytest (swebench's MAP_REPO_TO_PARSER_PY)
_REPO_PARSERS = {
    "psf/requests": "parse_log_pytest_options",
    "pydicom/pydicom": "parse_log_pytest_options",
    "pylint-dev/pylint": "parse_log_pytest_options",
    "matplotlib/matplotlib": "parse_log_matplotlib",
}
_OPTIONS_PARSERS = ("parse_log_pytest_options", "parse_log_pylint", "parse_log_requests", "parse_log_pydicom")
_PARAMS = re.compile(r"^(.*?)\[(.*)\]$")


def node_file(node_id: str) -> str | None:
    """The file part of a pytest node id (``tests/test_x.py::C::test[a::b]`` -> tests/test_x.py), else None."""
    head = node_id.split("[", 1)[0]
    if "::" not in head:
        return None
    return head.split("::", 1)[0] or None


class Pytest:
    name = "pytest"
    log_parser = "parse_log_pytest"

    def evidence(self, repo: Path) -> str | None:
        return detect.pytest_evidence(repo)

    def is_test_id(self, name: str) -> bool:
        return node_file(name) is not None

    def targets(self, names: list[str], patch_files: list[str]) -> list[str]:
        return sorted({f for f in map(node_file, names) if f})

    def command(self, targets: list[str]) -> list[str]:
        return [*detect.PYTEST_COMMAND, *targets]

    def environment(self) -> dict[str, str]:
        return {}


def repo_parser(repo: str, log_parser: str | None) -> str:
    """The SWE-bench parser that reads a repository's logs: the row's own ``log_parser``, else the repository's."""
    return log_parser or _REPO_PARSERS.get(repo.lower(), "parse_log_pytest")


def rewrite(parser: str) -> Callable[[str], str] | None:
    """How that parser rewrites a test's name before the dataset's id is looked up, or None (it does not).

    parse_log_pytest_options keeps only the last part of a parameter that is an absolute path (pylint's
    ``test_functional[/repo/tests/functional/a.py]`` is ``test_functional[/a.py]``); parse_log_matplotlib
    writes a mouse button by its number."""
    if parser in _OPTIONS_PARSERS:
        return _path_param_basename
    if parser == "parse_log_matplotlib":
        return lambda name: name.replace("MouseButton.LEFT", "1").replace("MouseButton.RIGHT", "3")
    return None


def _path_param_basename(name: str) -> str:
    match = _PARAMS.match(name)
    if match is None:
        return name
    head, param = match.groups()
    if param.startswith("/") and not param.startswith("//") and "*" not in param:
        param = "/" + param.rsplit("/", 1)[-1]
    return f"{head}[{param}]"


PYTEST = Pytest()
