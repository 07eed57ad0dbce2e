"""Codex's own apply_patch conformance data, run against sandbox.patch.

The data lives in ``shared/codex-apply-patch`` beside the repository (see its README):
``scenarios/`` (input/, patch.txt, expected/) and ``cases.json``. Every scenario and every
case runs twice: in process through ``apply_patch`` and through ``python -m sandbox.patch``.

The one deliberate difference from Codex: where Codex's standalone tool keeps the files it
wrote before a later hunk failed (scenario 015, and ``cli`` cases with ``expected_error``),
codebox is atomic and leaves the tree exactly as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sandbox.patch import PatchError, apply_patch

REPO = Path(__file__).resolve().parents[3]
SHARED = REPO.parent / "shared" / "codex-apply-patch"
SCENARIOS = SHARED / "scenarios"
CASES = SHARED / "cases.json"
# Without the data these tests skip, unless this is set to 1 (CI sets it): then they fail.
REQUIRE_ENV = "CODEBOX_REQUIRE_CONFORMANCE"
MISSING = (
    f"Codex conformance data not found at {SHARED}. It is shared/codex-apply-patch, laid beside the "
    f"repository checkout (../shared from the repo root); these tests need it ({REQUIRE_ENV}=1 is set)."
)

if not SHARED.is_dir() and os.environ.get(REQUIRE_ENV) != "1":
    pytest.skip(
        f"Codex conformance data not found at {SHARED} (set {REQUIRE_ENV}=1 to fail instead)",
        allow_module_level=True,
    )

# Codex keeps partial results here; codebox must leave the tree unchanged instead.
PARTIAL_IN_CODEX = {"015_failure_after_partial_success_leaves_changes"}


def _scenario_dirs() -> list[Path | None]:
    if not SCENARIOS.is_dir():
        return [None]
    return [path for path in sorted(SCENARIOS.iterdir()) if path.is_dir()]


def _cases() -> list[dict[str, Any] | None]:
    if not CASES.is_file():
        return [None]
    cases: list[dict[str, Any] | None] = json.loads(CASES.read_text(encoding="utf-8"))["cases"]
    return cases


def _id(item: Any) -> str:
    if item is None:
        return "missing-data"
    return item.name if isinstance(item, Path) else str(item["name"])


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes)."""
    out: dict[str, bytes] = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath, name)
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def run_cli(patch: str, root: Path) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "sandbox.patch", "--root", str(root)],
        input=patch.encode("utf-8"),
        capture_output=True,
        env=env,
        cwd=str(REPO),
        timeout=60,
        check=False,
    )


def test_conformance_data_is_present() -> None:
    if not SHARED.is_dir():
        pytest.fail(MISSING)
    assert len(_scenario_dirs()) >= 23, "scenarios/ looks incomplete"
    assert len(_cases()) >= 45, "cases.json looks incomplete"


def _run_without_data(tmp_path: Path, require: bool) -> subprocess.CompletedProcess[str]:
    """This file, copied into a checkout with no ../shared beside it, run by pytest."""
    tests = tmp_path / "checkout" / Path(__file__).resolve().parent.relative_to(REPO)
    tests.mkdir(parents=True)
    shutil.copy(__file__, tests / "test_copy.py")
    env = {k: v for k, v in os.environ.items() if k not in (REQUIRE_ENV, "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(REPO)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the copy needs no plugin; starts faster
    if require:
        env[REQUIRE_ENV] = "1"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "-k",
            "test_conformance_data_is_present",  # never this test again, whatever the copy does
            str(tests / "test_copy.py"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path),
        timeout=120,
        check=False,
    )


def test_absent_data_skips_with_a_reason_or_fails_when_required(tmp_path: Path) -> None:
    skipped = _run_without_data(tmp_path / "lenient", require=False)
    # The whole module skips, so no test is collected (in a whole run, other files have tests).
    assert skipped.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, skipped.stdout + skipped.stderr
    assert "1 skipped" in skipped.stdout
    assert f"conformance data not found at {tmp_path / 'lenient' / 'shared' / 'codex-apply-patch'}" in skipped.stdout
    assert f"set {REQUIRE_ENV}=1 to fail instead" in skipped.stdout

    required = _run_without_data(tmp_path / "strict", require=True)
    assert required.returncode == pytest.ExitCode.TESTS_FAILED, required.stdout + required.stderr
    assert "1 failed" in required.stdout
    assert f"{REQUIRE_ENV}=1 is set" in required.stdout


# --------------------------------------------------------------------------------------
# Fixture scenarios
# --------------------------------------------------------------------------------------


def _prepare_scenario(scenario: Path, root: Path) -> None:
    root.mkdir()
    if (scenario / "input").is_dir():
        shutil.copytree(scenario / "input", root, dirs_exist_ok=True)


def _scenario_expectation(scenario: Path) -> tuple[dict[str, bytes], bool]:
    """(tree after, patch must be rejected)."""
    before = tree(scenario / "input") if (scenario / "input").is_dir() else {}
    expected = tree(scenario / "expected") if (scenario / "expected").is_dir() else {}
    if scenario.name in PARTIAL_IN_CODEX:
        assert expected != before, "scenario no longer shows a partial result; update PARTIAL_IN_CODEX"
        return before, True
    # A rejected patch has expected/ equal to input/ (README).
    return expected, expected == before


@pytest.mark.parametrize("scenario", _scenario_dirs(), ids=_id)
def test_scenario_in_process(scenario: Path | None, tmp_path: Path) -> None:
    if scenario is None:
        pytest.fail(MISSING)
    root = tmp_path / "root"
    _prepare_scenario(scenario, root)
    expected, rejected = _scenario_expectation(scenario)
    patch = (scenario / "patch.txt").read_text(encoding="utf-8")
    if rejected:
        with pytest.raises(PatchError):
            apply_patch(patch, str(root))
    else:
        result = apply_patch(patch, str(root))
        assert result.text().startswith("Success. Updated the following files:\n")
    assert tree(root) == expected


@pytest.mark.parametrize("scenario", _scenario_dirs(), ids=_id)
def test_scenario_cli(scenario: Path | None, tmp_path: Path) -> None:
    if scenario is None:
        pytest.fail(MISSING)
    root = tmp_path / "root"
    _prepare_scenario(scenario, root)
    expected, rejected = _scenario_expectation(scenario)
    proc = run_cli((scenario / "patch.txt").read_text(encoding="utf-8"), root)
    if rejected:
        assert proc.returncode == 1, proc.stdout
        assert proc.stderr.strip(), "an error must be reported on standard error"
        assert proc.stdout == b""
    else:
        assert proc.returncode == 0, proc.stderr.decode()
        assert proc.stdout.decode().startswith("Success. Updated the following files:\n")
    assert tree(root) == expected


def test_scenario_015_is_atomic_in_codebox(tmp_path: Path) -> None:
    """Codex's CLI leaves created.txt behind; codebox creates nothing."""
    scenario = SCENARIOS / "015_failure_after_partial_success_leaves_changes"
    if not scenario.is_dir():
        pytest.fail(MISSING)
    root = tmp_path / "root"
    _prepare_scenario(scenario, root)
    with pytest.raises(PatchError) as info:
        apply_patch((scenario / "patch.txt").read_text(encoding="utf-8"), str(root))
    assert "Failed to read file to update missing.txt" in str(info.value)
    assert not (root / "created.txt").exists()
    assert tree(root) == {}


# --------------------------------------------------------------------------------------
# Cases transcribed from Codex's tests
# --------------------------------------------------------------------------------------


def _prepare_case(case: dict[str, Any], root: Path) -> dict[str, bytes]:
    root.mkdir()
    for rel, content in case["input_files"].items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8"))
    return tree(root)


def _case_expected(case: dict[str, Any], before: dict[str, bytes]) -> dict[str, bytes]:
    if case.get("expected_error"):
        # Atomic: whatever Codex's level keeps, codebox leaves the tree as it was.
        return before
    return {rel: content.encode("utf-8") for rel, content in case["expected_files"].items()}


def _check_eol(case: dict[str, Any], after: dict[str, bytes]) -> None:
    if not case.get("requires_eol_preservation"):
        return
    for rel, content in case["expected_files"].items():
        expected = content.encode("utf-8")
        assert after[rel] == expected
        assert after[rel].count(b"\r\n") == expected.count(b"\r\n"), "CRLF endings must be kept"


@pytest.mark.parametrize("case", _cases(), ids=_id)
def test_case_in_process(case: dict[str, Any] | None, tmp_path: Path) -> None:
    if case is None:
        pytest.fail(MISSING)
    root = tmp_path / "root"
    before = _prepare_case(case, root)
    if case.get("expected_error"):
        with pytest.raises(PatchError) as info:
            apply_patch(case["patch"], str(root))
        # The model sees Codex's agent wording; the CLI prints Codex's standalone wording.
        message = str(info.value) if case["level"] == "agent" else info.value.cli_message
        for fragment in case.get("expected_error_contains", []):
            assert fragment in message
    else:
        apply_patch(case["patch"], str(root))
    after = tree(root)
    assert after == _case_expected(case, before)
    if not case.get("expected_error"):
        expected_after = {rel: c.encode("utf-8") for rel, c in case["expected_files"].items()}
        assert after == expected_after
    _check_eol(case, after)


@pytest.mark.parametrize("case", _cases(), ids=_id)
def test_case_cli(case: dict[str, Any] | None, tmp_path: Path) -> None:
    if case is None:
        pytest.fail(MISSING)
    root = tmp_path / "root"
    before = _prepare_case(case, root)
    proc = run_cli(case["patch"], root)
    if case.get("expected_error"):
        assert proc.returncode == 1, proc.stdout
        assert proc.stdout == b""
        if case["level"] == "cli":
            stderr = proc.stderr.decode("utf-8")
            for fragment in case.get("expected_error_contains", []):
                assert fragment in stderr
    else:
        assert proc.returncode == 0, proc.stderr.decode()
        assert proc.stdout.decode().startswith("Success. Updated the following files:\n")
    after = tree(root)
    assert after == _case_expected(case, before)
    _check_eol(case, after)
