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

A pytest older than 3.5 (no ``report.user_properties`` to mark a testcase with; before 2.8 no
``pytest.hookimpl`` either: a 2012-2018 environment, or a dataset spec's pin) runs with another plugin,
in the plain hook style every pytest since 2.2 calls: it keeps each report's outcome itself and writes
the JUnit XML the host reads (the same testcases, each with its node id as ``codebox.nodeid``), and the
options such a pytest lacks (``-o``, ``--color`` before 2.5) are left out; the log gets a modern -rA
summary line per outcome (``PASSED id``), as SWE-bench's parser reads one. Node ids lose pytest 2-3's
``::()`` instance part, as pytest 4 dropped it and the datasets write them.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import sys
import traceback
import xml.etree.ElementTree as ET
from typing import Any, TextIO, cast

BUNDLE = os.environ.get("_CODEBOX_EVAL_BUNDLE", "/tmp/codebox-eval-bundle.txt")
JUNIT = os.environ.get("_CODEBOX_EVAL_JUNIT", "/tmp/codebox-eval-junit.xml")
LOG = os.environ.get("_CODEBOX_EVAL_LOG", "/tmp/codebox-eval-log.txt")
LIMIT = int(os.environ.get("_CODEBOX_EVAL_BUNDLE_LIMIT", "2000000"))
INTERNAL_ERROR = 3  # pytest's own ExitCode.INTERNAL_ERROR
USAGE_ERROR = 4
OWN_REPORT_BELOW = (3, 5)  # pytest 3.5 gave reports user_properties, which the JUnit path marks testcases with
XPASS_PROPERTY = "codebox.outcome"  # the host's names (agent/eval/junit.py; a test keeps them equal)
NODEID_PROPERTY = "codebox.nodeid"
MESSAGE_CHARS = 4000  # of a failure's text kept in the JUnit report (the whole log has all of it)


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


class OldPytestOutcomes:
    """The plugin for a pytest older than 3.5, in the plain hook style pytest 2.2 already calls (no hookimpl):
    each report's SWE-bench status kept here, written as the JUnit report the host reads (write_junit)."""

    def __init__(self, version: tuple[int, ...]) -> None:
        self.version = version
        self.config: Any = None
        self.cases: list[tuple[str, str, str]] = []  # (node id, status, message); status "" is a collection error

    def pytest_configure(self, config: Any) -> None:
        self.config = config

    def shown(self, nodeid: str) -> str:
        """The id as a dataset writes it: from the directory pytest was started in, with no ``::()``."""
        relative = getattr(self.config, "cwd_relative_nodeid", None)
        return str(relative(nodeid) if relative is not None else nodeid).replace("::()", "")

    def pytest_runtest_logreport(self, report: Any) -> None:
        status = old_status(report, self.version)
        if status:
            self.cases.append((self.shown(report.nodeid), status, _text(report) if status in ("FAILED", "ERROR")
                               else ""))

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.cases.append((self.shown(report.nodeid), "", _text(report)))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for nodeid, status, _message in self.cases:
            terminalreporter.write_line(f"{status or 'ERROR'} {nodeid}")


def old_status(report: Any, version: tuple[int, ...]) -> str:
    """A report's status as pytest 8's -rA would write it ("" for a phase that says nothing). An xfail is
    ``wasxfail`` since pytest 2.3, an ``xfail`` keyword before; an old non-strict XPASS is a failed call."""
    xfail = hasattr(report, "wasxfail") or (version < (2, 3) and "xfail" in getattr(report, "keywords", {}))
    if report.when == "call":
        if xfail:
            return "XFAIL" if report.skipped else "XPASS"
        return "PASSED" if report.passed else "FAILED" if report.failed else "SKIPPED"
    if report.failed:
        return "ERROR"
    if report.skipped:
        return "XFAIL" if xfail else "SKIPPED"
    return ""


def _text(report: Any) -> str:
    try:
        text = str(report.longrepr)
    except Exception:  # a repr the repository broke: the log still has it
        text = repr(report.longrepr)
    return text[-MESSAGE_CHARS:]


def write_junit(cases: list[tuple[str, str, str]], path: str) -> None:
    """The JUnit report of ``cases`` as the host reads pytest's: a testcase per outcome, keyed by its node id (a
    collection error: no class name, the module's id as its name, as pytest writes one)."""
    suite = ET.Element("testsuite", {"name": "pytest", "tests": str(len(cases))})
    for nodeid, status, message in cases:
        head, bracket, params = nodeid.partition("[")
        parts = head.split("::")
        if not status:
            case = ET.SubElement(suite, "testcase", {"classname": "", "name": nodeid})
            ET.SubElement(case, "error", {"message": "collection failure"}).text = message
            continue
        classname = ".".join([parts[0].removesuffix(".py").replace("/", "."), *parts[1:-1]])
        case = ET.SubElement(suite, "testcase", {"classname": classname, "name": parts[-1] + bracket + params})
        properties = ET.SubElement(case, "properties")
        ET.SubElement(properties, "property", {"name": NODEID_PROPERTY, "value": nodeid})
        if status == "XPASS":
            ET.SubElement(properties, "property", {"name": XPASS_PROPERTY, "value": "xpassed"})
        elif status == "FAILED":
            ET.SubElement(case, "failure", {"message": "failed"}).text = message
        elif status == "ERROR":
            ET.SubElement(case, "error", {"message": "error"}).text = message
        elif status in ("SKIPPED", "XFAIL"):
            ET.SubElement(case, "skipped", {"type": "pytest.xfail" if status == "XFAIL" else "pytest.skip"})
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def old_args(args: list[str], version: tuple[int, ...]) -> list[str]:
    """The command line without what an old pytest lacks or what its own plugin replaces: the JUnit file (the
    plugin writes it), ``-o`` (pytest 3.0), ``--color`` (2.5)."""
    kept: list[str] = []
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
        elif arg == "-o":
            skip_next = True
        elif arg.startswith("--junitxml") or (arg.startswith("--color") and version < (2, 5)):
            continue
        else:
            kept.append(arg)
    return kept


def pytest_version(pytest: Any) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", pytest.__version__)[:2])


def run_pytest(args: list[str]) -> int:
    import pytest

    version = pytest_version(pytest)
    if version < OWN_REPORT_BELOW:
        plugin = OldPytestOutcomes(version)
        code = int(pytest.main(old_args(args, version), plugins=[plugin]))
        if code not in (INTERNAL_ERROR, USAGE_ERROR) or plugin.cases:  # else no report, as pytest's junitxml
            write_junit(plugin.cases, JUNIT)
        return code
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
