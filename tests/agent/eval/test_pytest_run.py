"""The test run's command and what a failed start says: the first lines of the real error."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.eval import boot_pytest
from agent.eval.pytest_run import (
    BOOT_SOURCE,
    BOOT_VARIABLE,
    SUMMARY,
    failure_cause,
    pytest_argv,
    read_bundle,
    run_environment,
)

CONFTEST_IMPORT = """$ python3 -c ...
exit code 4 (failed) after 0.31 s
--- stderr (412 bytes) ---
ImportError while loading conftest '/repo/tests/conftest.py'.
tests/conftest.py:3: in <module>
    import freezegun
E   ModuleNotFoundError: No module named 'freezegun'"""
MINVERSION = """$ python3 -c ...
exit code 1 (failed) after 0.2 s
--- stderr (90 bytes) ---
ERROR: /repo/pyproject.toml: 'minversion' requires pytest-9.0, actual pytest-7.2.1'"""


def test_the_first_lines_of_the_real_error() -> None:
    cause = failure_cause(CONFTEST_IMPORT)
    assert cause.startswith("ImportError while loading conftest") and "No module named 'freezegun'" in cause
    assert failure_cause(MINVERSION) == MINVERSION.splitlines()[-1]
    assert failure_cause("$ x\nexit code 3 (failed) after 1 s\n--- stdout (5 bytes) ---\nhello") == "hello"
    assert failure_cause("") == "no output"


def test_the_command_and_its_environment() -> None:
    argv = pytest_argv(["tests/test_a.py"])
    assert argv[:2] == ["python3", "-c"] and BOOT_VARIABLE in argv[2] and argv[-1] == "tests/test_a.py"
    assert SUMMARY in argv and "--color=no" in argv
    assert run_environment("/repo/src", False)["PYTHONPATH"] == "/repo/src"
    assert run_environment(None, False)[BOOT_VARIABLE] == BOOT_SOURCE
    assert "PYTHONPATH" not in run_environment(None, False)
    assert run_environment(None, True)["PATH"].startswith("/opt/miniconda3/envs/testbed/bin:")


def test_the_bundle_brings_the_report_and_the_whole_log_back_and_keeps_the_summary_when_cut(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, path in (("BUNDLE", "b.txt"), ("JUNIT", "j.xml"), ("LOG", "l.txt")):
        monkeypatch.setattr(boot_pytest, name, str(tmp_path / path))
    (tmp_path / "j.xml").write_text("<testsuites/>")
    (tmp_path / "l.txt").write_text("header\n" + "".join(f"PASSED t.py::test_{n}\n" for n in range(20000)) + "1 passed")
    boot_pytest.write_bundle(0)
    bundle = read_bundle((tmp_path / "b.txt").read_text())
    assert bundle is not None and bundle.exit_code == 0 and bundle.junit == "<testsuites/>"
    assert bundle.log == (tmp_path / "l.txt").read_text()
    monkeypatch.setattr(boot_pytest, "LIMIT", 20_000)  # over the limit: the head and the tail stay
    boot_pytest.write_bundle(1)
    cut = read_bundle((tmp_path / "b.txt").read_text())
    assert cut is not None and len((tmp_path / "b.txt").read_bytes()) <= 20_000
    assert cut.log.startswith("header\n") and cut.log.endswith("1 passed") and "characters cut] ..." in cut.log
    assert read_bundle("not base64 at all") is None
