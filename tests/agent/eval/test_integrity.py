"""A model_patch that touches test infrastructure is flagged, with the files; a plain fix is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.eval.apply import apply_patch
from agent.eval.integrity import flagged_paths
from agent.task.workspace import create_workspace
from tests.agent.eval.repos import CALC, diff_of, make_repo

SETUP_CFG = "[metadata]\nname = calc\n\n[tool:pytest]\naddopts = -q\n"
PYPROJECT = '[project]\nname = "calc"\nversion = "1"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
TOX = "[tox]\nenvlist = py3\n\n[pytest]\naddopts = -q\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    make_repo(tmp_path / "repo", {"calc.py": CALC, "setup.cfg": SETUP_CFG, "pyproject.toml": PYPROJECT,
                                  "tox.ini": TOX, "tests/test_calc.py": "def test_x():\n    pass\n"})
    return tmp_path / "repo"


def flags(repo: Path, edit: dict[str, str | None], test_patch: str = "", f2p: tuple[str, ...] = ()) -> list[str]:
    patch = diff_of(repo, edit)
    ws = create_workspace(repo, "HEAD").path
    assert apply_patch(ws, patch).applied
    return flagged_paths(ws, patch, test_patch, list(f2p))


def test_a_fix_is_not_flagged(repo: Path) -> None:
    assert flags(repo, {"calc.py": CALC.replace("a - b", "a + b")}) == []
    assert flags(repo, {"setup.cfg": SETUP_CFG.replace("name = calc", "name = calc2")}) == []
    assert flags(repo, {"pyproject.toml": PYPROJECT.replace('version = "1"', 'version = "2"')}) == []
    assert flags(repo, {"tox.ini": TOX.replace("py3", "py311")}) == []


def test_conftest_and_pytest_settings_are_flagged(repo: Path) -> None:
    assert flags(repo, {"tests/conftest.py": "import pytest\n"}) == ["tests/conftest.py"]
    assert flags(repo, {"pytest.ini": "[pytest]\n"}) == ["pytest.ini"]
    assert flags(repo, {"sitecustomize.py": "x = 1\n"}) == ["sitecustomize.py"]
    assert flags(repo, {"setup.cfg": SETUP_CFG.replace("-q", "-p no:x")}) == ["setup.cfg [tool:pytest]"]
    assert flags(repo, {"pyproject.toml": PYPROJECT + "[tool.pytest.x]\ny = 1\n"}) == ["pyproject.toml [tool.pytest]"]
    assert flags(repo, {"tox.ini": TOX.replace("-q", "-x")}) == ["tox.ini [pytest]"]
    assert flags(repo, {"pyproject.toml": "[broken"}) == ["pyproject.toml [tool.pytest]"]


def test_the_tests_own_files_are_flagged(repo: Path) -> None:
    test_patch = diff_of(repo, {"tests/test_new.py": "def test_new():\n    pass\n"})
    edit = {"tests/test_new.py": "def test_new():\n    assert 1\n", "calc.py": CALC + "\n"}
    assert flags(repo, edit, test_patch) == ["tests/test_new.py"]
    assert flags(repo, {"tests/test_calc.py": "def test_x():\n    assert 1\n"},
                 f2p=("tests/test_calc.py",)) == ["tests/test_calc.py"]
