"""Fixtures for the viewer: batch folders (view_fixtures.py writes them) and headless Chromium."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from view_fixtures import write_batch


@pytest.fixture
def batch_out(tmp_path: Path) -> Path:
    """A batch --out folder: completed, stopped, error and still-running tasks, no hostile data."""
    return write_batch(tmp_path / "runs")


@pytest.fixture
def xss_out(tmp_path: Path) -> Path:
    """The batch plus a task whose goal, id, file names, test output and messages are XSS payloads."""
    return write_batch(tmp_path / "runs", hostile=True)


# --- the browser ---------------------------------------------------------------------------------

CHROMIUM = os.environ.get("CODEBOX_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("CODEBOX_TEST_ARTIFACTS", Path(__file__).resolve().parents[3] / "test-artifacts"))


def _browser_problem() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CODEBOX_CHROMIUM)"
    return None


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """Headless Chromium through Playwright: required in CI, skipped with the reason elsewhere."""
    problem = _browser_problem()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests cannot run in CI: {problem}")
        pytest.skip(problem)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def artifacts() -> Path:
    """Where the browser tests keep their screenshots (gitignored; CI may upload it)."""
    folder = ARTIFACTS / "view"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
