"""A local wheelhouse of tiny packages, made once per session: environments resolve from it alone."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.env.resolve import IndexConfig
from tests.agent.env.wheels import make_wheelhouse


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_wheelhouse(tmp_path_factory.mktemp("wheelhouse"))


@pytest.fixture()
def local_index(wheelhouse: Path) -> IndexConfig:
    return IndexConfig(find_links=[str(wheelhouse)], no_index=True)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Downloads and probes go to a cache of this session, not the user's."""
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "codebox-cache"))
    yield


@pytest.fixture(scope="session")
def setuptools_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """setuptools and wheel as wheels, for building sdists offline: downloaded once per session.

    Required when CI is set; elsewhere the test skips (with pip's reason) when the index is unreachable.
    """
    folder = tmp_path_factory.mktemp("setuptools-wheels")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:", "--no-deps",
         "--dest", str(folder), "setuptools>=61", "wheel"],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    problem = f"cannot download setuptools and wheel: {proc.stderr.strip()[-300:]}" if proc.returncode else None
    if problem and not os.environ.get("CI"):
        pytest.skip(problem)
    assert problem is None, problem
    return folder
