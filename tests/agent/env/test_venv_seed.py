"""setuptools in a dated environment of a Python before 3.12, as every venv of that time had it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.env.install.python_era import venv_seed
from agent.env.read.reqlines import Requirement
from agent.env.resolve.resolve import IndexConfig
from tests.agent.env.projects import write


def req(name: str) -> Requirement:
    return Requirement(text=name, name=name, source="test")


def test_a_2020_environment_of_39_gets_setuptools() -> None:
    seeded = venv_seed([req("hypothesis")], "3.9.2", "2020-09-12T11:09:48Z")
    assert [r.name for r in seeded] == ["setuptools"]
    assert seeded[0].source == "a Python 3.9 venv's own"


def test_not_when_declared_or_in_another_spelling() -> None:
    assert venv_seed([req("SetupTools")], "3.9.2", "2020-09-12T00:00:00Z") == []


def test_not_for_312_or_today_or_undated() -> None:
    assert venv_seed([], "3.12.1", "2020-01-01T00:00:00Z") == []
    assert venv_seed([], "3.11.2", "2026-12-05T00:00:00Z") == []  # a venv made today: what it declares
    assert venv_seed([], "3.11.2", "2023-10-02T00:00:00Z") == []
    assert venv_seed([], "3.11.2", None) == []
    assert venv_seed([], "pypy", "2020-01-01T00:00:00Z") == []


@pytest.mark.docker
def test_an_index_without_setuptools_loses_nothing(tmp_path: Path, local_index: IndexConfig) -> None:
    """A 2020 environment of 3.11 would get setuptools; the local index holds none: it is left out, with a note,
    and the environment is what the project declares."""
    from agent.containers.image import ensure_sandbox_image
    from agent.env.install.ensure import EnvRequest, ensure_env
    from tests.engine import docker, remove_image

    ensure_sandbox_image()
    repo = tmp_path / "proj"
    write(repo, {"requirements-test.txt": "beta==1.0\n", "test_x.py": "def test_x():\n    pass\n"})
    info = ensure_env(EnvRequest(repo=repo, base_image="codebox-sandbox:latest", index=local_index,
                                 as_of="2020-07-08T09:30:00Z"))
    try:
        assert "beta==1.0" in info.installed
        assert not any(p.startswith("setuptools==") for p in info.installed)
        assert any(n.startswith("setuptools left out:") for n in info.notes), info.notes
        assert not any(n.startswith("setuptools added") for n in info.notes)
    finally:
        remove_image(docker(), info.image)
