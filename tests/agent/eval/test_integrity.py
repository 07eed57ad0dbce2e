"""What in a model_patch changes how tests run is flagged, rule by rule, from what git applied; a plain fix is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.eval.apply import apply_patch
from agent.eval.changed import changed_paths, patch_paths
from agent.eval.integrity import RULES, flag_environment, flag_patch
from agent.protocol import EnvInfo
from agent.task.workspace import create_workspace
from tests.agent.eval.repos import CALC, diff_of, make_repo
from tests.repos import sh

SETUP_CFG = "[metadata]\nname = calc\n\n[options]\ninstall_requires =\n    attrs\n\n[tool:pytest]\naddopts = -q\n"
PYPROJECT = ('[build-system]\nrequires = ["setuptools"]\n\n[project]\nname = "calc"\nversion = "1"\n'
             'dependencies = ["attrs"]\n\n[tool.pytest.ini_options]\naddopts = "-q"\n')
TOX = "[tox]\nenvlist = py3\n\n[testenv]\ndeps = attrs\n\n[pytest]\naddopts = -q\n"
SETUP_PY = "from setuptools import setup\n\nsetup(name='calc', install_requires=['attrs'])\n"
DATED = " 2020-01-01 00:00:00.000000000 +0000"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    make_repo(tmp_path / "repo", {"calc.py": CALC, "setup.cfg": SETUP_CFG, "pyproject.toml": PYPROJECT,
                                  "tox.ini": TOX, "setup.py": SETUP_PY, ".gitignore": "*.egg-info/\n*.pth\n",
                                  "tests/test_calc.py": "def test_x():\n    pass\n",
                                  "tests/test_other.py": "def test_y():\n    pass\n",
                                  "src/_pytest/python.py": "x = 1\n"})
    return tmp_path / "repo"


def flags_of(repo: Path, patch: str, test_patch: str = "", tests: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    ws = create_workspace(repo, "HEAD").path
    assert apply_patch(ws, patch).applied
    found = flag_patch(ws, changed_paths(ws), patch_paths(ws, test_patch) if test_patch else [], list(tests))
    return sorted({(f.rule, f.path) for f in found})


def flags(repo: Path, edit: dict[str, str | None], test_patch: str = "",
          tests: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return flags_of(repo, diff_of(repo, edit), test_patch, tests)


def forced_diff(repo: Path, name: str, text: str) -> str:
    """A patch that adds ``name`` even where the repository's .gitignore hides it."""
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(text)
    sh("git", "add", "-A", "-f", cwd=repo)
    patch = sh("git", "diff", "--cached", "--binary", cwd=repo) + "\n"
    sh("git", "reset", "-q", "--hard", cwd=repo)
    sh("git", "clean", "-qfdx", cwd=repo)
    return patch


def test_a_fix_is_not_flagged(repo: Path) -> None:
    assert flags(repo, {"calc.py": CALC.replace("a - b", "a + b")}) == []
    assert flags(repo, {"src/_pytest/python.py": "x = 2\n"}) == []  # pytest's own code, under test in its repo
    assert flags(repo, {"setup.cfg": SETUP_CFG.replace("name = calc", "name = calc2")}) == []
    assert flags(repo, {"pyproject.toml": PYPROJECT.replace('version = "1"', 'version = "2"')}) == []
    assert flags(repo, {"tox.ini": TOX.replace("py3", "py311")}) == []
    assert flags(repo, {"setup.py": SETUP_PY.replace("name='calc'", "name='calc', version='2'")}) == []
    assert flags(repo, {"tests/helpers_new.py": "x = 1\n", "test/__init__.py": ""}) == []


def test_conftest_and_pytest_settings_are_flagged(repo: Path) -> None:
    assert flags(repo, {"tests/conftest.py": "import pytest\n"}) == [("conftest", "tests/conftest.py")]
    assert flags(repo, {"pytest.ini": "[pytest]\n"}) == [("pytest-settings", "pytest.ini")]
    assert flags(repo, {"setup.cfg": SETUP_CFG.replace("-q", "-p no:x")}) == [("pytest-settings", "setup.cfg")]
    assert flags(repo, {"pyproject.toml": PYPROJECT + "[tool.pytest.x]\ny = 1\n"}) == [
        ("pytest-settings", "pyproject.toml")]
    assert flags(repo, {"tox.ini": TOX.replace("-q", "-x")}) == [("pytest-settings", "tox.ini")]
    assert ("pytest-settings", "pyproject.toml") in flags(repo, {"pyproject.toml": "[broken"})


def test_a_conftest_named_with_a_date_after_a_space_is_flagged(repo: Path) -> None:
    """Attack (a): a traditional diff whose names end in a date after a space (no tab). git's and GNU
    patch's reading of the name is what lands in the tree; the flag comes from the tree."""
    body = "import pytest\n"
    patch = f"--- a/tests/conftest.py{DATED}\n+++ b/tests/conftest.py{DATED}\n@@ -0,0 +1 @@\n+{body}"
    assert flags_of(repo, patch) == [("conftest", "tests/conftest.py")]


def test_pytest_plugins_are_flagged_wherever_they_are_declared(repo: Path) -> None:
    """Attack (b): a pytest11 entry point (pyproject, setup.cfg, setup.py) or package metadata on sys.path."""
    ep = '\n[project.entry-points.pytest11]\nrewrite = "calc_plugin"\n'
    assert ("plugins", "pyproject.toml") in flags(repo, {"pyproject.toml": PYPROJECT + ep, "calc_plugin.py": ""})
    cfg = SETUP_CFG + "\n[options.entry_points]\npytest11 =\n    rewrite = calc_plugin\n"
    assert ("plugins", "setup.cfg") in flags(repo, {"setup.cfg": cfg})
    setup = SETUP_PY.replace("install_requires=['attrs']",
                             "install_requires=['attrs'], entry_points={'pytest11': ['r = calc_plugin']}")
    assert flags(repo, {"setup.py": setup}) == [("plugins", "setup.py")]
    assert flags_of(repo, forced_diff(repo, "calc.egg-info/entry_points.txt", "[pytest11]\nr = calc_plugin\n")) == [
        ("plugins", "calc.egg-info/entry_points.txt")]  # ignored by .gitignore: still seen


def test_startup_files_and_bytecode_are_flagged(repo: Path) -> None:
    assert flags_of(repo, forced_diff(repo, "src/evil.pth", "import os\n")) == [("startup", "src/evil.pth")]
    assert flags(repo, {"sitecustomize.py": "x = 1\n"}) == [("startup", "sitecustomize.py")]
    assert flags(repo, {"lib/usercustomize/__init__.py": ""}) == [("startup", "lib/usercustomize/__init__.py")]
    assert flags(repo, {"tests/__pycache__/test_calc.cpython-311.pyc": "x"}) == [
        ("startup", "tests/__pycache__/test_calc.cpython-311.pyc")]


def test_the_tests_own_files_are_flagged(repo: Path) -> None:
    """Attack (c): a PASS_TO_PASS test's file that the test_patch does not touch."""
    test_patch = diff_of(repo, {"tests/test_new.py": "def test_new():\n    pass\n"})
    tests = ("tests/test_new.py", "tests/test_other.py")
    assert flags(repo, {"tests/test_other.py": "import _pytest.python\n"}, test_patch, tests) == [
        ("test-files", "tests/test_other.py")]
    edit = {"tests/test_new.py": "def test_new():\n    assert 1\n", "calc.py": CALC + "\n"}
    assert flags(repo, edit, test_patch) == [("test-files", "tests/test_new.py")]
    assert flags(repo, {"tests/test_calc.py": "x = 1\n"}, test_patch, tests) == []  # names no test here


def test_dependencies_and_the_build_system_are_flagged(repo: Path) -> None:
    assert flags(repo, {"pyproject.toml": PYPROJECT.replace('["attrs"]', '["attrs", "pytest-evil"]')}) == [
        ("dependencies", "pyproject.toml")]
    assert flags(repo, {"pyproject.toml": PYPROJECT.replace('["setuptools"]', '["setuptools", "evil"]')}) == [
        ("dependencies", "pyproject.toml")]
    assert flags(repo, {"setup.cfg": SETUP_CFG.replace("    attrs", "    attrs\n    evil")}) == [
        ("dependencies", "setup.cfg")]
    assert flags(repo, {"setup.py": SETUP_PY.replace("['attrs']", "['attrs', 'evil']")}) == [
        ("dependencies", "setup.py")]
    assert flags(repo, {"tox.ini": TOX.replace("deps = attrs", "deps = evil")}) == [("dependencies", "tox.ini")]
    assert flags(repo, {"requirements/test.txt": "evil\n"}) == [("dependencies", "requirements/test.txt")]


def test_other_runners_files_and_shadowing_modules_are_flagged(repo: Path) -> None:
    assert flags(repo, {"tests/runtests.py": "x = 1\n", "bin/test": "x\n"}) == [
        ("runner", "bin/test"), ("runner", "tests/runtests.py")]
    assert flags(repo, {"pytest.py": "x = 1\n"}) == [("runner", "pytest.py")]
    assert flags(repo, {"src/pluggy/__init__.py": ""}) == [("runner", "src/pluggy/__init__.py")]
    assert flags(repo, {"argparse.py": ""}) == [("runner", "argparse.py")]


def test_the_environment_built_again_is_judged_on_its_lock_and_its_plugins() -> None:
    before = EnvInfo(image="a", base_image="b", image_id="sha256:1", lock="attrs==1 --hash=x\n", pytest_plugins=[])
    same = before.model_copy(update={"image_id": "sha256:2"})
    assert flag_environment(before, same) == []
    more = same.model_copy(update={"lock": "attrs==1 --hash=x\npytest-evil==1 --hash=y\n"})
    assert [(f.rule, "+pytest-evil==1" in f.why) for f in flag_environment(before, more)] == [("dependencies", True)]
    plugin = same.model_copy(update={"pytest_plugins": ["r = calc_plugin"]})
    assert [f.rule for f in flag_environment(before, plugin)] == ["plugins"]
    unknown = before.model_copy(update={"pytest_plugins": None})  # a record made before plugins were kept
    assert flag_environment(unknown, plugin) == []


def test_every_rule_is_documented() -> None:
    text = (Path(__file__).parents[3] / "docs" / "evaluation.md").read_text()
    assert all(f"`{rule}`" in text for rule in RULES)
