"""A real pytest 3.4 (2018: no report.user_properties, the pin SWE-bench's astropy 1.3 spec names as 3.3.1) from
PyPI's wheels, run by eval's own command in the Python 3.9 sandbox, graded by the host as any pytest's report."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from agent.eval.grading import FAILED, PASSED, SKIPPED, XFAIL
from agent.eval.junit import junit_cases, junit_key, status_map
from agent.eval.pytest_run import BUNDLE_PATH, pytest_argv, read_bundle, run_environment
from tests.engine import docker, run

pytestmark = pytest.mark.docker
# pytest 3.4.2 and what it needs, as of its day (py 1.11 for Python 3.9's imports).
WHEELS = ["pytest==3.4.2", "py==1.11.0", "pluggy==0.6.0", "attrs==17.4.0", "six==1.11.0", "more-itertools==4.1.0",
          "setuptools==39.0.1"]
TESTS = """import unittest

import pytest


def test_pass():
    pass


def test_fail():
    assert 1 == 2


@pytest.mark.skipif("True")
def test_skip():
    pass


@pytest.mark.xfail
def test_xfail():
    assert 0


@pytest.mark.xfail
def test_xpass():
    pass


class TestPlain:
    def test_method(self):
        pass


class Suite(unittest.TestCase):
    def test_ok(self):
        pass


@pytest.mark.parametrize("x", [1, 2])
def test_param(x):
    assert x == 1
"""


@pytest.fixture(scope="module")
def old_pytest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheels from the package index, once into ~/.cache/codebox-tests, unpacked into a folder for PYTHONPATH.

    Required when CI is set; elsewhere the test skips (with pip's reason) when the index is unreachable."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "codebox-tests" / "old-pytest-3.4.2"
    if not (cache / ".complete").is_file():
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary",
                               ":all:", "--dest", str(cache), *WHEELS],
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        problem = f"cannot download {WHEELS[0]}: {proc.stderr.strip()[-300:]}" if proc.returncode else None
        if problem and not os.environ.get("CI"):
            pytest.skip(problem)
        assert problem is None, problem
        (cache / ".complete").write_text("\n".join(WHEELS))
    site = tmp_path_factory.mktemp("old-pytest-site")
    for wheel in cache.glob("*.whl"):
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    return site


def test_a_pytest_without_user_properties_is_graded_by_node_id_with_its_log_summary(
        old_pytest: Path, tmp_path: Path) -> None:
    from agent.containers.pythons import ensure_suite_sandbox

    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_old.py").write_text(TESTS)
    env = {**run_environment(None, False), "PYTHONPATH": "/old-pytest"}
    argv = pytest_argv(["tests/test_old.py"])
    script = 'cd /repo && env "$@"; echo "exit $?"; echo "=== bundle"; cat ' + BUNDLE_PATH
    out = run(docker(), ensure_suite_sandbox("3.9"),
              ["sh", "-c", script, "sh", *[f"{k}={v}" for k, v in env.items()], *argv],
              binds=[f"{repo}:/repo:ro", f"{old_pytest}:/old-pytest:ro"])
    shown, _, text = out.partition("=== bundle\n")
    bundle = read_bundle(text)
    assert bundle is not None and bundle.exit_code == 1 and "exit 1" in shown, out[-3000:]
    assert "pytest-3.4.2" in bundle.log and bundle.junit is not None
    status = status_map(junit_cases(bundle.junit))
    assert status == {junit_key("tests/test_old.py::test_pass"): PASSED,
                      junit_key("tests/test_old.py::TestPlain::test_method"): PASSED,  # 3.4's id: TestPlain::()::
                      junit_key("tests/test_old.py::Suite::test_ok"): PASSED,
                      junit_key("tests/test_old.py::test_param[1]"): PASSED,
                      junit_key("tests/test_old.py::test_skip"): SKIPPED,
                      junit_key("tests/test_old.py::test_xfail"): XFAIL,
                      junit_key("tests/test_old.py::test_fail"): FAILED,
                      junit_key("tests/test_old.py::test_param[2]"): FAILED}  # the XPASS left out, as SWE-bench's
    assert "PASSED tests/test_old.py::TestPlain::test_method\n" in bundle.log  # SWE-bench's parser reads it too
    assert "XPASS tests/test_old.py::test_xpass\n" in bundle.log
