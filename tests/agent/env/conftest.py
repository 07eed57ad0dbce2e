"""A local wheelhouse of tiny packages, made once per session: environments resolve from it alone."""

from __future__ import annotations

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
