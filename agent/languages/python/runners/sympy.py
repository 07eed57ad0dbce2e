"""sympy's own runner, as SWE-bench runs it: ``bin/test -C --verbose FILES`` (no cache, a line per test).

Its verbose output has a line per test, ``test_name ok`` (or F, E; f: expected to fail, X: passed though expected
to fail, s: skipped, w: skipped as slow), and a header per failure, ``___ path.py:test_name ___``. SWE-bench's
dataset names tests by their bare function name (``test_Mod``); the statuses are read the same way. Unlike
SWE-bench's parser, the last test of each file is read too (its line ends in the file's ``[OK]`` / ``[FAIL]``
mark, which that parser misses: no dataset row names such a test, so no verdict changes). Like SWE-bench's, an
expected failure (f), an unexpected pass (X) and a skip (s, w) are left out: such a named test did not pass.
"""

from __future__ import annotations

import re
from pathlib import Path

from agent.languages.runner import ERROR, FAILED, IDENTIFIER, PASSED, regular_file, test_files

# "test_name ok", then optionally the file's closing mark in brackets
_LINE = re.compile(r"^(test_\w*) (ok|F|E|f|s|w|X)(?:\s+\[(?:OK|FAIL)\])?$")
_HEADER = re.compile(r"^_+ (\S+\.py):(\w+) _+$")  # a failure's (or error's) traceback header
_OUTCOME = {"ok": PASSED, "F": FAILED, "E": ERROR}  # f, X, s, w: not recorded (see above)


class Sympy:
    name = "sympy"
    log_parser = "parse_log_sympy"

    def evidence(self, repo: Path) -> str | None:
        found = regular_file(repo, "bin/test") and regular_file(repo, "sympy/utilities/runtests.py")
        return "bin/test" if found else None

    def is_test_id(self, name: str) -> bool:
        return IDENTIFIER.fullmatch(name) is not None

    def targets(self, names: list[str], patch_files: list[str]) -> list[str]:
        return test_files(patch_files)

    def command(self, targets: list[str]) -> list[str]:
        return ["python3", "bin/test", "-C", "--verbose", *targets]

    def environment(self) -> dict[str, str]:
        return {"PYTHONWARNINGS": "ignore::UserWarning,ignore::SyntaxWarning"}

    def statuses(self, log: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for line in log.splitlines():
            line = line.strip()
            if (match := _LINE.match(line)) and match.group(2) in _OUTCOME:
                found[match.group(1)] = _OUTCOME[match.group(2)]
            elif (header := _HEADER.match(line)) and header.group(2) not in found:
                found[header.group(2)] = FAILED  # its "F" line was lost in the test's own output
        return found

    def key(self, name: str) -> str:
        return name.strip()

    def failing_tests(self, output: str) -> list[str]:
        """``path.py:test_name`` from the failure headers, else the bare names of F and E lines."""
        headers = [f"{m.group(1)}:{m.group(2)}" for m in map(_HEADER.match, _stripped(output)) if m]
        if headers:
            return headers
        return [m.group(1) for m in map(_LINE.match, _stripped(output)) if m and m.group(2) in ("F", "E", "X")]


def _stripped(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines()]


SYMPY = Sympy()
