"""Any test command no language claims: plain test paths inside the repository, no options; failing tests read
from the formats codebox knows in any output (go test's ``--- FAIL:`` lines); the line that says why a run that
named no failing test failed (an exception, a compiler's error, a panic), whatever the language."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from agent.languages.base import CONTROL, Detection, TestArgsError, check_test_path, refused, unique_names

if TYPE_CHECKING:
    from agent.env.info import EnvInfo

ALLOWED = "plain test paths inside the repository (no options: the test command is not pytest)"
_GO = re.compile(r"^\s*--- FAIL: (\S+)", re.M)
# An exception (Python's, Java's: "ModuleNotFoundError: ...", pytest's "E   " before it), a compiler's error
# ("error[E0425]: ...", "error: ..."), a panic: the last one is usually the reason.
_ERROR_LINE = re.compile(r"^(?:E\s+)?((?:[A-Za-z_][\w.]*(?:Error|Exception)|error(?:\[\w+\])?|panic):\s*\S.*?)\s*$",
                         re.M)
_SUMMARY = re.compile(r"^error: (aborting due to|could not compile)")  # cargo's closing lines: the cause is above


class Generic:
    """The fallback: never detects, runs any command with the strictest argument rules."""

    name = "generic"

    def detect(self, repo: Path, env: EnvInfo | None) -> Detection | None:
        return None

    def runs(self, test_cmd: list[str]) -> bool:
        return True

    def check_test_args(self, test_cmd: list[str], args: list[str], repo: Path | None) -> None:
        for arg in args:
            try:
                if CONTROL.search(arg):
                    raise TestArgsError(f"{arg!r} contains a control character")
                check_test_path(arg, repo)
            except TestArgsError as exc:
                raise refused(arg, str(exc), ALLOWED) from None

    def failing_tests(self, output: str) -> list[str]:
        return unique_names(_GO.findall(output))

    def error_line(self, output: str) -> str | None:
        """The last line of ``output`` that says an error happened (unescaped), or None."""
        found = [line for line in _ERROR_LINE.findall(output) if not _SUMMARY.match(line)]
        return found[-1] if found else None


GENERIC = Generic()
