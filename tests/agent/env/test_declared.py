"""Reading declared dependencies: every shape of project, and every hostile file refused in one line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.env.install.project import console_scripts, editable_files
from agent.env.read.declared import read_declared
from agent.env.read.poetry import constraint
from tests.agent.env import projects
from tests.agent.env.projects import write

ROOT = Path(__file__).resolve().parents[3]


def texts(repo: Path, **kw: object) -> dict[str, str]:
    declared = read_declared(repo, runner=None, **kw)  # type: ignore[arg-type]
    return {r.text: r.source for r in declared.requirements}


def test_flat_project_takes_dependencies_and_the_test_extra_not_docs(tmp_path: Path) -> None:
    found = texts(write(tmp_path, projects.FLAT))
    assert found == {
        "alpha": "pyproject.toml [project] dependencies",
        "gamma": "pyproject.toml [project.optional-dependencies] test",
    }
    declared = read_declared(tmp_path, runner=None)
    assert declared.project.name == "flatproj" and declared.project.version == "1.2.3"
    assert declared.project.import_root == ""


def test_hatch_default_env_and_pdm_dev_dependencies(tmp_path: Path) -> None:
    found = texts(write(tmp_path, projects.HATCH_PDM))
    assert found == {"gamma": "pyproject.toml [tool.hatch.envs.default] dependencies",
                     "delta": "pyproject.toml [tool.pdm.dev-dependencies] test"}


def test_poetry_tables_are_translated(tmp_path: Path) -> None:
    declared = read_declared(write(tmp_path, projects.POETRY), runner=None)
    assert {r.text for r in declared.requirements} == {"alpha<2,>=1.0", "gamma[x]<3.1,>=3.0", "beta==2.0", "delta"}
    assert declared.project.name == "poet" and declared.project.version == "0.4.0"


@pytest.mark.parametrize(("spec", "pep440"), [("^1.2.3", ">=1.2.3,<2"), ("^0.2.3", ">=0.2.3,<0.3"),
                                              ("~1.2", ">=1.2,<1.3"), ("*", ""), (">=1,<3", ">=1,<3"),
                                              ("1.2.*", "==1.2.*")])
def test_poetry_constraints(spec: str, pep440: str) -> None:
    assert constraint(spec, "x") == pep440


def test_a_poetry_git_dependency_is_kept_by_name_with_its_source_named(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[tool.poetry.dependencies]\nx = {git = "https://10.0.0.1/x.git"}\n'})
    declared = read_declared(tmp_path, runner=None)
    assert [r.text for r in declared.requirements] == ["x"]
    assert [(s.kind, s.location, s.packages) for s in declared.sources] == [("git", "https://10.0.0.1/x.git", ["x"])]


def test_console_scripts_are_made_for_plain_targets_only(tmp_path: Path) -> None:
    project = read_declared(write(tmp_path, projects.FLAT)).project
    scripts = console_scripts(project, "/opt/codebox-env/bin/python")
    assert list(scripts) == ["flat-hello"]
    script = scripts["flat-hello"]
    assert script.startswith("#!/opt/codebox-env/bin/python\n") and "flatproj.hello()" in script


def test_a_named_extra_is_added(tmp_path: Path) -> None:
    assert "delta" in texts(write(tmp_path, projects.FLAT), extras=["docs"])


def test_an_unknown_extra_is_an_error_that_lists_the_real_ones(tmp_path: Path) -> None:
    with pytest.raises(EnvError, match=r"no extra named 'nope'.*docs, test"):
        read_declared(write(tmp_path, projects.FLAT), extras=["nope"])


def test_src_layout_self_referencing_extras_and_a_version_from_the_sources(tmp_path: Path) -> None:
    declared = read_declared(write(tmp_path, projects.SRC), runner=None)
    assert {r.text for r in declared.requirements} == {"pulls-project", "gamma"}
    assert declared.project.import_root == "src" and declared.project.version == "7.1"
    files = editable_files(declared.project)
    assert files["_codebox_repo.pth"] == "/repo/src\n"
    assert "Version: 7.1" in files["srcproj-7.1.dist-info/METADATA"]
    assert "srcplug = srcproj.plugin" in files["srcproj-7.1.dist-info/entry_points.txt"]


def test_dependency_groups_default_and_named_with_include_group(tmp_path: Path) -> None:
    repo = write(tmp_path, projects.GROUPS)
    assert set(texts(repo)) == {"gamma", "delta"}
    assert set(texts(repo, groups=["other"])) == {"gamma", "delta", "beta==1.0"}


def test_a_group_including_itself_is_refused(tmp_path: Path) -> None:
    repo = write(tmp_path, {"pyproject.toml": '[dependency-groups]\ntest = [{include-group = "test"}]\n'})
    with pytest.raises(EnvError, match="includes itself"):
        read_declared(repo)


def test_requirements_files_about_tests_with_includes_and_continuations(tmp_path: Path) -> None:
    found = texts(write(tmp_path, projects.REQUIREMENTS))
    assert found == {"alpha": "requirements.txt:1", "gamma>=3": "requirements-test.txt:2"}


def test_pip_compiles_file_dot_lines_are_the_project_itself(tmp_path: Path) -> None:
    # referencing 80c9781's test-requirements.txt (pip-compile): 'file:.#egg=referencing' was refused
    repo = write(tmp_path, {**projects.SRC, "test-requirements.txt": "file:.#egg=srcproj\n-e file:.\n"
                                                                      "file:./[more]\npytest==8.2.0\n"})
    declared = read_declared(repo, runner=None)
    assert {r.text for r in declared.requirements} == {"pulls-project", "gamma", "pytest==8.2.0"}
    assert not declared.sources


def test_setup_py_literals_are_read_without_running_it(tmp_path: Path) -> None:
    repo = write(tmp_path, {**projects.SETUP_PY, "ran": ""})
    (repo / "ran").unlink()
    declared = read_declared(repo, runner=None)
    assert {r.text for r in declared.requirements} == {"alpha", "gamma"}
    assert declared.project.name == "legacy" and declared.project.import_root == "src"
    assert not (repo / "ran").exists()


def test_setup_py_that_computes_its_requirements_is_noted_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    repo = write(tmp_path / "r", {"setup.py": f"open({str(marker)!r}, 'w')\nfrom setuptools import setup\n"
                                              "setup(name='x', install_requires=open('r.txt').read().split())\n"})
    declared = read_declared(repo, runner=None)
    assert not marker.exists()
    assert any("install_requires= is computed" in n for n in declared.notes)


def test_setup_cfg_requirements_and_extras(tmp_path: Path) -> None:
    declared = read_declared(write(tmp_path, projects.SETUP_CFG), runner=None)
    assert {r.text for r in declared.requirements} == {"alpha", "gamma"}
    assert declared.project.name == "cfgproj" and declared.project.version == "3.0"


def test_tox_deps_skip_factor_lines_and_follow_r(tmp_path: Path) -> None:
    declared = read_declared(write(tmp_path, projects.TOX), runner=None)
    assert {r.text for r in declared.requirements} == {"gamma", "beta"}
    assert any("py38: delta" in n for n in declared.notes)


def test_the_runner_is_added_unless_declared(tmp_path: Path) -> None:
    repo = write(tmp_path, projects.FLAT)
    declared = read_declared(repo)
    assert declared.requirements[-1].text == "pytest" and "codebox default" in declared.requirements[-1].source
    write(repo, {"requirements-dev.txt": "pytest>=8\n"})
    assert [r.text for r in read_declared(repo).requirements].count("pytest") == 0


def test_a_repo_that_declares_nothing_needs_no_environment() -> None:
    assert not read_declared(ROOT / "agent" / "cli" / "demo_data" / "repo").needs_env


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"pyproject.toml": "x = " + "[" * 200 + "]" * 200 + "\n"}, r"pyproject.toml: nested"),
        ({"pyproject.toml": "[project\n"}, r"pyproject.toml: not valid TOML"),
        ({"setup.py": "x = " + "(" * 5000 + ")" * 5000}, r"setup.py: (nested too deeply|not valid Python)"),
    ],
)
def test_hostile_or_broken_declarations_are_refused_in_one_line(tmp_path: Path, files: dict[str, str],
                                                                message: str) -> None:
    write(tmp_path, files)
    with pytest.raises(EnvError, match=message) as info:
        read_declared(tmp_path)
    assert "\n" not in str(info.value) and info.value.usage


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-e ../../x\n", r"^requirements.txt not used: requirements.txt:2: editable install of '../../x' is not "
                         "allowed"),
        ("https://10.0.0.1/alpha.whl\n", r"is not a requirement"),
        ("../other/pkg\n", r"is not a requirement"),
        ("-r ../../../etc/passwd\n", r"leaves the repository"),
        ("alpha\n" * 600_000, r"too large"),
    ],
)
def test_a_requirements_file_refused_is_left_out_and_said(tmp_path: Path, text: str, message: str) -> None:
    """A found file is one candidate among others (candidates.py): refused, it is not one; the rest still are."""
    write(tmp_path, {"requirements.txt": "alpha\n" + text, "requirements-test.txt": "gamma\n"})
    declared = read_declared(tmp_path, runner=None)
    (note,) = [n for n in declared.notes if n.startswith("requirements.txt not used")]
    assert re.search(message, note) and "\n" not in note
    assert [r.text for r in declared.requirements] == ["gamma"]
    assert [c.name for c in declared.candidates] == ["requirements-test.txt"]


def test_bad_encoding_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b'[project]\nname = "\xff\xfe"\n')
    with pytest.raises(EnvError, match="not UTF-8"):
        read_declared(tmp_path)


def test_a_symlinked_requirements_file_leaving_the_repo_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("alpha\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements.txt").symlink_to(outside)
    declared = read_declared(repo)
    assert declared.requirements == [] and any("leaves the repository" in n for n in declared.notes)


def test_version_from_the_highest_git_tag_when_dynamic(tmp_path: Path) -> None:
    repo = write(tmp_path, {"pyproject.toml": '[project]\nname = "tagged"\ndynamic = ["version"]\n',
                            ".git/packed-refs": "abc refs/tags/v1.9.0\nabd refs/tags/2.0.0rc1\n",
                            ".git/refs/tags/1.10.0": "abe\n"})
    assert read_declared(repo).project.version == "1.10.0"


# --- setuptools' own list syntax, from the real files' shape -------------------------------------------------

XARRAY_SETUP_CFG = """[metadata]
name = xarray
version = 0.16.3
[options]
packages = find:
zip_safe = False  # https://mypy.readthedocs.io/en/latest/installed_packages.html
python_requires = >=3.7
install_requires =
    numpy >= 1.17
    pandas >= 1.0
    setuptools >= 40.4  # For pkg_resources

[options.extras_require]
io =
    netCDF4
    ## Scitools packages & dependencies (e.g: cartopy, cf-units) can be hard to install
    # scitools-iris
"""

ZIPP_SETUP_CFG = """[metadata]
name = zipp
version = 3.8.0
[options]
py_modules = zipp
install_requires =

[options.extras_require]
testing =
\t# upstream
\tpytest >= 6
\tpytest-black >= 0.3.7; \\
\t\t# workaround for jaraco/skeleton#22
\t\tpython_implementation != "PyPy"
\tpytest-mypy >= 0.9.1; \\
\t\t# workaround for jaraco/skeleton#22
\t\tpython_implementation != "PyPy"

\t# local
\tjaraco.itertools
"""


def test_setup_cfg_inline_comment_is_cut_as_setuptools_does(tmp_path: Path) -> None:
    repo = write(tmp_path, {"setup.cfg": XARRAY_SETUP_CFG, "setup.py": "import setuptools\nsetuptools.setup()\n",
                            "xarray/__init__.py": ""})
    found = {r.text for r in read_declared(repo, runner=None).requirements}
    assert found == {"numpy>=1.17", "pandas>=1.0", "setuptools>=40.4"}


def test_backslash_continuation_across_comment_lines_in_extras(tmp_path: Path) -> None:
    repo = write(tmp_path, {"setup.cfg": ZIPP_SETUP_CFG, "zipp.py": ""})
    found = {r.text for r in read_declared(repo, runner=None).requirements}
    assert found == {"pytest>=6", 'pytest-black>=0.3.7; platform_python_implementation != "PyPy"',
                     'pytest-mypy>=0.9.1; platform_python_implementation != "PyPy"', "jaraco.itertools"}


def test_setup_py_lists_follow_the_same_rules(tmp_path: Path) -> None:
    repo = write(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='x', version='1', "
                                        "install_requires=['six  # py2 and 3', 'attrs; \\\\', "
                                        "'python_version > \"3\"'])\n", "x.py": ""})
    found = {r.text for r in read_declared(repo, runner=None).requirements}
    assert found == {"six", 'attrs; python_version > "3"'}
