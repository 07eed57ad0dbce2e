"""Runs INSIDE the sandbox, never imported on the host: pytest with codebox's eval plugin, its report and log out.

pytest_run.py sends this file's text as the program of `python3 -c` (python3 >= 3.9, any pytest).
It tees pytest's terminal output (sys.stdout and sys.stderr) into a log file and runs pytest
with one plugin, which marks an XPASS in the JUnit report (JUnit shows a non-strict xfail that
passed as passed; SWE-bench's parser does not count it as passed) and, on pytest < 8.3 (no
--no-fold-skipped), writes each skipped test's own summary line (``SKIPPED node - reason``) so
SWE-bench's parser reads every skip by its node id. Where pytest's rootdir is not /repo (a
tests/pytest.ini), the summary names a test from /repo (``tests/test_x.py::t``) and JUnit from the
rootdir (``test_x``): the plugin then gives the testcase the summary's id (``codebox.nodeid``),
which the host reads as its key. At the end, whatever happened, the exit
status, the JUnit XML and the whole log go into one gzip-compressed, base64 bundle file that
run_test's report_file brings back; a bundle over the limit keeps the log's head and its tail
(where the summary is).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import sys
import traceback
from typing import Any, TextIO, cast

BUNDLE = os.environ.get("_CODEBOX_EVAL_BUNDLE", "/tmp/codebox-eval-bundle.txt")
JUNIT = os.environ.get("_CODEBOX_EVAL_JUNIT", "/tmp/codebox-eval-junit.xml")
LOG = os.environ.get("_CODEBOX_EVAL_LOG", "/tmp/codebox-eval-log.txt")
LIMIT = int(os.environ.get("_CODEBOX_EVAL_BUNDLE_LIMIT", "2000000"))
INTERNAL_ERROR = 3  # pytest's own ExitCode.INTERNAL_ERROR


class Tee:
    """A text stream that also writes everything to the log (pytest's terminal writer holds it)."""

    def __init__(self, stream: TextIO, log: TextIO) -> None:
        self._stream, self._log = stream, log

    def write(self, text: str) -> int:
        self._log.write(text)
        return self._stream.write(text)

    def flush(self) -> None:
        self._log.flush()
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)  # fileno, isatty, encoding: the real stream's


def make_plugin(pytest: Any, unfold: bool) -> Any:
    class CodeboxEvalOutcomes:
        def __init__(self) -> None:
            self.xpassed: set[str] = set()
            self.skipped: list[tuple[str, str]] = []
            self.config: Any = None

        def pytest_configure(self, config: Any) -> None:
            self.config = config

        def shown(self, nodeid: str) -> str:
            """The id as the short summary writes it: from the directory pytest was started in."""
            return str(self.config.cwd_relative_nodeid(nodeid)) if self.config is not None else nodeid

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_logreport(self, report: Any) -> None:
            if report.when == "call" and report.passed and hasattr(report, "wasxfail"):
                self.xpassed.add(report.nodeid)
            if report.when == "teardown" and report.nodeid in self.xpassed:
                report.user_properties.append(("codebox.outcome", "xpassed"))
            if report.when == "teardown" and self.shown(report.nodeid) != report.nodeid:
                report.user_properties.append(("codebox.nodeid", self.shown(report.nodeid)))
            if unfold and report.skipped and not hasattr(report, "wasxfail"):
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
                self.skipped.append((self.shown(report.nodeid), reason))

        def pytest_terminal_summary(self, terminalreporter: Any) -> None:
            for nodeid, reason in self.skipped:
                terminalreporter.write_line(f"SKIPPED {nodeid} - {reason}")

    return CodeboxEvalOutcomes()


def run_pytest(args: list[str]) -> int:
    import pytest

    version = tuple(int(part) for part in re.findall(r"\d+", pytest.__version__)[:2])
    if version >= (8, 3):
        args = ["--no-fold-skipped", *args]
    return int(pytest.main(args, plugins=[make_plugin(pytest, version < (8, 3))]))


def pack(code: int, junit: str | None, log: str) -> bytes:
    data = json.dumps({"exit": code, "junit": junit, "log": log}).encode("utf-8", "replace")
    return base64.b64encode(gzip.compress(data, compresslevel=6))


def write_bundle(code: int) -> None:
    junit = _read(JUNIT)
    log = _read(LOG) or ""
    data = pack(code, junit, log)
    while len(data) > LIMIT and len(log) > 2000:  # keep a quarter from the head, the rest from the tail
        keep = len(log) // 2
        cut = len(log) - keep
        log = log[: keep // 4] + f"\n... [{cut} characters cut] ...\n" + log[-(keep - keep // 4):]
        data = pack(code, junit, log)
    with open(BUNDLE, "wb") as handle:
        handle.write(data)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def main() -> None:
    code = INTERNAL_ERROR
    stdout, stderr = sys.stdout, sys.stderr
    with open(LOG, "w", encoding="utf-8", errors="replace") as log:
        sys.stdout, sys.stderr = cast(TextIO, Tee(stdout, log)), cast(TextIO, Tee(stderr, log))
        try:
            code = run_pytest(sys.argv[1:])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else INTERNAL_ERROR
        except BaseException:  # pytest missing, or broken by the repository: its traceback ends the log
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout, sys.stderr = stdout, stderr
    write_bundle(code)
    sys.exit(code)


if __name__ == "__main__":  # `python3 -c`, in the sandbox
    main()
