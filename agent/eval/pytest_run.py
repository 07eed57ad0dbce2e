"""The test run of one instance: the pytest command in the sandbox, and what a failed start says.

pytest starts through a few lines of Python (BOOTSTRAP, passed in the environment so the
command line stays short) that add one plugin: it marks an XPASS in the JUnit report (JUnit
shows a non-strict xfail that passed as passed; SWE-bench's parser does not count it as passed)
and, on pytest < 8.3 (no --no-fold-skipped), writes each skipped test's own -rA line
(``SKIPPED node - reason``), so SWE-bench's parser reads every skip by its node id. The log
carries -rA's short test summary, with no colour: ``-rpsxXEf`` is -rA's summary in -rA's order
without its PASSES section (every passed test's captured output), which pytest builds in
quadratic time (five of the six minutes of packaging's 7,638 tests).
"""

from __future__ import annotations

import re

JUNIT_PATH = "/tmp/codebox-eval-junit.xml"  # the repo is read-only in the sandbox: /tmp is the tmpfs
BOOT_VARIABLE = "CODEBOX_EVAL_BOOT"
SUMMARY = "-rpsxXEf"  # -rA's short test summary (passed, skipped, xfail, xpass, error, failed), no PASSES section
BOOTSTRAP = """\
import re, sys
import pytest

class CodeboxEvalOutcomes:
    def __init__(self, unfold):
        self.unfold, self.xpassed, self.skipped = unfold, set(), []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        if report.when == "call" and report.passed and hasattr(report, "wasxfail"):
            self.xpassed.add(report.nodeid)
        if report.when == "teardown" and report.nodeid in self.xpassed:
            report.user_properties.append(("codebox.outcome", "xpassed"))
        if self.unfold and report.skipped and not hasattr(report, "wasxfail"):
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            self.skipped.append((report.nodeid, reason))

    def pytest_terminal_summary(self, terminalreporter):
        for nodeid, reason in self.skipped:
            terminalreporter.write_line("SKIPPED %s - %s" % (nodeid, reason))

version = tuple(int(part) for part in re.findall(r"\\d+", pytest.__version__)[:2])
args = sys.argv[1:]
if version >= (8, 3):
    args.insert(0, "--no-fold-skipped")
sys.exit(pytest.main(args, plugins=[CodeboxEvalOutcomes(version < (8, 3))]))
"""
# Testbed's conda env of a SWE-bench instance image (harmless where it does not exist).
SWE_BENCH_PATH = "/opt/miniconda3/envs/testbed/bin:/opt/miniconda3/bin"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def pytest_argv(files: list[str]) -> list[str]:
    """The command run in the sandbox (from /repo): pytest on the named tests' files."""
    return ["python3", "-c", f"import os; exec(os.environ[{BOOT_VARIABLE!r}])",
            SUMMARY, "--color=no", "-p", "no:cacheprovider", "-o", "junit_family=xunit1", f"--junitxml={JUNIT_PATH}",
            *files]


def shown_command(files: list[str]) -> list[str]:
    """The command as a user would type it (the bootstrap is codebox's; eval.json and the docs say so)."""
    return ["python3", "-m", "pytest", SUMMARY, "--color=no", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
            f"--junitxml={JUNIT_PATH}", *files]


def run_environment(import_root: str | None, dataset_image: bool) -> dict[str, str]:
    """Variables of the test run: the bootstrap; the repo first on sys.path where no environment installs
    it (``import_root``: "/repo" or "/repo/src"), so an image's own copy of a package (Debian's
    packaging under pytest) never shadows the repository under test; a SWE-bench image's testbed first."""
    env = {BOOT_VARIABLE: BOOTSTRAP}
    if import_root:
        env["PYTHONPATH"] = import_root
    if dataset_image:
        env["PATH"] = f"{SWE_BENCH_PATH}:{DEFAULT_PATH}"
    return env


_CAUSE = re.compile(r"(^E\s+\S)|(Error\b)|(^ERROR\b)|(error:)|(^\s*\w+Error:)|(minversion)|(No module named)",
                    re.IGNORECASE)
_NOISE = re.compile(r"^(\$ |exit code |--- std(out|err) |killed by |timed out after |=+ ?|_+ ?)")


def failure_cause(output: str, lines: int = 3) -> str:
    """The first lines that say why a test run wrote no report (an ImportError, pytest's
    minversion, a usage error), joined in one line; else the last lines of the output."""
    text = [line.rstrip() for line in output.splitlines() if line.strip() and not _NOISE.match(line)]
    causes = [line.strip() for line in text if _CAUSE.search(line)]
    chosen = list(dict.fromkeys(causes))[:lines] or [line.strip() for line in text[-lines:]]
    return " | ".join(chosen)[:500] or "no output"
