"""Any test command no language claims: plain test paths inside the repository, no options; failing tests read
from the formats codebox knows in any output (go test's ``--- FAIL:`` lines)."""

from __future__ import annotations

import re
from pathlib import Path

from agent.languages.base import CONTROL, Detection, TestArgsError, check_test_path, refused, unique_names

ALLOWED = "plain test paths inside the repository (no options: the test command is not pytest)"
_GO = re.compile(r"^\s*--- FAIL: (\S+)", re.M)


class Generic:
    """The fallback: never detects, runs any command with the strictest argument rules."""

    name = "generic"

    def detect(self, repo: Path, lock: str | None) -> Detection | None:
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


GENERIC = Generic()
