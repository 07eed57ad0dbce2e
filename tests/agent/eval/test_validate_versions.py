"""The record of each row's validated candidate per version, and the note when two rows of a version differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.eval import validate
from agent.protocol import EnvInfo, TaskSpec


def row(name: str, setup: str | None = "s" * 40, base: str = "b" * 40) -> TaskSpec:
    return TaskSpec(id=name, goal="g", repo="/r", base_commit=base, version="5.4", environment_setup_commit=setup)


ENV = EnvInfo(image="codebox-env:x", base_image="codebox-sandbox:py3.9", candidate=1, candidates=3)


def test_only_rows_with_their_own_setup_commit_have_a_version_record() -> None:
    assert validate.version_key(row("a", setup=None), ENV) is None
    assert validate.version_key(row("a", setup="b" * 40), ENV) is None  # the setup commit is the base
    key = validate.version_key(row("a"), ENV)
    assert key is not None and key == validate.version_key(row("b", base="c" * 40), ENV)
    assert key != validate.version_key(row("a"), ENV.model_copy(update={"base_image": "codebox-sandbox:latest"}))


def test_the_later_row_says_which_candidate_splits_the_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path))
    first, second, third = row("pytest-7168"), row("pytest-7220"), row("pytest-7373")
    key = validate.version_key(first, ENV)
    assert key is not None
    validate.record_row(key, first, 1, {1: 0})
    others = validate.other_rows(key, second)
    assert others == [("pytest-7168", 1, {1: 0})]
    assert validate.split_notes(second, 2, {1: 3, 2: 0}, others) == [
        "rows of version 5.4 differ: candidate 1 passes pytest-7168's PASS_TO_PASS and fails pytest-7220's "
        "(3 failing); pytest-7168 uses candidate 1, this row candidate 2 (each row gets the best candidate for it)"]
    validate.record_row(key, second, 2, {1: 3, 2: 0})
    assert validate.split_notes(third, 1, {1: 0}, validate.other_rows(key, third)) == [
        "rows of version 5.4 differ: candidate 1 passes pytest-7373's PASS_TO_PASS and fails pytest-7220's "
        "(3 failing); pytest-7220 uses candidate 2, this row candidate 1 (each row gets the best candidate for it)"]
    assert validate.split_notes(second, 1, {1: 0}, [("pytest-7168", 1, {1: 0})]) == []  # the same choice: no note
    (tmp_path / "validated" / f"version-{key}" / ("f" * 32)).write_text("not json")  # a torn record is skipped
    assert [r[0] for r in validate.other_rows(key, third)] == ["pytest-7168", "pytest-7220"]
