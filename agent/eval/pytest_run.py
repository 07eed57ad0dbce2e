"""The test run of one instance: the pytest command in the sandbox, its bundle back, what a failed start says.

The program is boot_pytest.py (sent in the environment, so the command line stays short): pytest
with codebox's plugin, its terminal output teed into a log, and the exit status, the JUnit XML and
the whole log back in one compressed bundle (run_test's report_file). The log carries -rA's short
test summary, with no colour: ``-rpsxXEf`` is -rA's summary in -rA's order without its PASSES
section (every passed test's captured output), which pytest builds in quadratic time (five of the
six minutes of packaging's 7,638 tests).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path

JUNIT_PATH = "/tmp/codebox-eval-junit.xml"  # the repo is read-only in the sandbox: /tmp is the tmpfs
BUNDLE_PATH = "/tmp/codebox-eval-bundle.txt"
LOG_PATH = "/tmp/codebox-eval-log.txt"
BUNDLE_LIMIT = 2_000_000  # under run_test's report_file limit (2 MiB): ~1.5 MB gzip, tens of MB of log
# Variables of the test run in the sandbox only (a leading "_": no setting of the user's, never read on the host).
BOOT_VARIABLE = "_CODEBOX_EVAL_BOOT"
SUMMARY = "-rpsxXEf"  # -rA's short test summary (passed, skipped, xfail, xpass, error, failed), no PASSES section
BOOT_SOURCE = (Path(__file__).with_name("boot_pytest.py")).read_text(encoding="utf-8")


@dataclass
class Bundle:
    """What the run brought back: pytest's exit status, its JUnit XML (None: not written), the log."""

    exit_code: int
    junit: str | None
    log: str


def read_bundle(text: str) -> Bundle | None:
    """The bundle, or None when it is not one (a run killed before it wrote it)."""
    try:
        data = json.loads(gzip.decompress(base64.b64decode(text.strip(), validate=True)))
        return Bundle(int(data["exit"]), data.get("junit"), str(data.get("log") or ""))
    except (binascii.Error, OSError, EOFError, ValueError, KeyError, TypeError):
        return None


# Testbed's conda env of a SWE-bench instance image (harmless where it does not exist).
SWE_BENCH_PATH = "/opt/miniconda3/envs/testbed/bin:/opt/miniconda3/bin"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def pytest_argv(files: list[str]) -> list[str]:
    """The command run in the sandbox (from /repo): pytest on the named tests' files."""
    return ["python3", "-c", f"import os; exec(compile(os.environ[{BOOT_VARIABLE!r}], 'codebox-eval', 'exec'))",
            SUMMARY, "--color=no", "-p", "no:cacheprovider", "-o", "junit_family=xunit1", f"--junitxml={JUNIT_PATH}",
            *files]


def shown_command(files: list[str]) -> list[str]:
    """The command as a user would type it (the bootstrap is codebox's; eval.json and the docs say so)."""
    return ["python3", "-m", "pytest", SUMMARY, "--color=no", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
            f"--junitxml={JUNIT_PATH}", *files]


def run_environment(import_root: str | None, dataset_image: bool) -> dict[str, str]:
    """Variables of the test run: the program and its paths; the repo first on sys.path where no environment installs
    it (``import_root``: "/repo" or "/repo/src"), so an image's own copy of a package (Debian's
    packaging under pytest) never shadows the repository under test; a SWE-bench image's testbed first."""
    env = {BOOT_VARIABLE: BOOT_SOURCE, "_CODEBOX_EVAL_BUNDLE": BUNDLE_PATH, "_CODEBOX_EVAL_JUNIT": JUNIT_PATH,
           "_CODEBOX_EVAL_LOG": LOG_PATH, "_CODEBOX_EVAL_BUNDLE_LIMIT": str(BUNDLE_LIMIT)}
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
