"""setuptools in a dated environment of a Python before 3.12, as every venv of that time had it."""

from __future__ import annotations

from agent.env.install.ensure import venv_seed
from agent.env.read.reqlines import Requirement


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
