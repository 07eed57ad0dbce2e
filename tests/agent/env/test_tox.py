"""tox read statically in tox's own order: tox.ini, setup.cfg, pyproject legacy_tox_ini, tox 4 TOML, tox.toml."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.env.read.declared import read_declared
from tests.agent.env.projects import write

PROJECT = '[project]\nname = "toxed"\nversion = "1.0"\n[project.optional-dependencies]\nextra-tests = ["gamma"]\n'


def texts(repo: Path) -> dict[str, str]:
    return {r.text: r.source for r in read_declared(repo, runner=None).requirements}


def test_legacy_tox_ini_in_pyproject_reads_r_files_deps_and_extras(tmp_path: Path) -> None:
    repo = write(tmp_path, {
        "pyproject.toml": PROJECT + '[tool.tox]\nlegacy_tox_ini = """\n[tox]\nenvlist = py311\n[testenv]\n'
                                    'deps =\n    -r{toxinidir}/tests/requirements.txt\n    delta\n'
                                    '    py38: old-thing\nextras = extra-tests\ncommands = pytest {posargs}\n"""\n',
        "tests/requirements.txt": "beta>=1\n-r ../requirements-lint.txt\n",
        "requirements-lint.txt": "flake8\n",
        "toxed.py": "",
    })
    declared = read_declared(repo, runner=None)
    found = {r.text: r.source for r in declared.requirements}
    assert found["beta>=1"] == "tests/requirements.txt:1"
    assert found["flake8"] == "requirements-lint.txt:1"
    assert found["delta"] == "pyproject.toml [tool.tox] legacy_tox_ini [testenv] deps"
    assert found["gamma"].startswith("pyproject.toml [project.optional-dependencies]")
    assert "old-thing" not in found and any("py38: old-thing" in n for n in declared.notes)
    assert "tests/requirements.txt" in declared.files


@pytest.mark.parametrize("form", ["-r{toxinidir}/tests/requirements.txt", "-r {toxinidir}/tests/requirements.txt",
                                  "-rtests/requirements.txt", "--requirement=tests/requirements.txt",
                                  "-r{tox_root}/tests/requirements.txt", "-r tests/requirements.txt"])
def test_every_r_form_in_tox_ini(tmp_path: Path, form: str) -> None:
    repo = write(tmp_path, {"tox.ini": f"[testenv]\ndeps =\n    {form}\n", "tests/requirements.txt": "beta\n"})
    assert texts(repo) == {"beta": "tests/requirements.txt:1"}


def test_section_references_are_expanded_and_other_substitutions_noted(tmp_path: Path) -> None:
    repo = write(tmp_path, {"tox.ini": "[base]\ndeps =\n    beta\n    gamma\n"
                                       "[testenv]\ndeps =\n    {[base]deps}\n    {env:EXTRA_DEPS}\n    .[x]\n"
                                       "    -c constraints.txt\n",
                            "pyproject.toml": '[project]\nname = "toxed"\nversion = "1.0"\n'
                                              '[project.optional-dependencies]\nx = ["delta"]\n',
                            "constraints.txt": "beta<3\n"})
    declared = read_declared(repo, runner=None)
    assert {r.text for r in declared.requirements} == {"beta", "gamma", "delta"}
    assert any("{env:EXTRA_DEPS}" in n and "substituted by tox" in n for n in declared.notes)
    assert any("constraints file constraints.txt not applied" in n for n in declared.notes)


def test_tox_ini_wins_over_pyproject_as_tox_reads_it(tmp_path: Path) -> None:
    repo = write(tmp_path, {"tox.ini": "[testenv]\ndeps = beta\n",
                            "pyproject.toml": '[tool.tox]\nlegacy_tox_ini = "[testenv]\\ndeps = gamma\\n"\n'})
    assert set(texts(repo)) == {"beta"}


def test_setup_cfg_tox_section(tmp_path: Path) -> None:
    repo = write(tmp_path, {"setup.cfg": "[tox:tox]\nenvlist = py\n[testenv]\ndeps =\n    beta\n    gamma\n"})
    assert set(texts(repo)) == {"beta", "gamma"}


def test_tox4_native_toml_in_pyproject_and_tox_toml(tmp_path: Path) -> None:
    repo = write(tmp_path / "a", {
        "pyproject.toml": PROJECT + '[tool.tox.env_run_base]\ndeps = ["beta", "-r tests/req.txt", '
                                    '{ replace = "ref", of = ["x"] }]\nextras = ["extra-tests"]\n',
        "tests/req.txt": "delta\n", "toxed.py": ""})
    declared = read_declared(repo, runner=None)
    assert {r.text for r in declared.requirements} == {"beta", "delta", "gamma"}
    assert any("a tox reference" in n for n in declared.notes)
    other = write(tmp_path / "b", {"tox.toml": '[env_run_base]\ndeps = ["beta>=2"]\n'})
    assert texts(other) == {"beta>=2": "tox.toml [env_run_base] deps"}


def test_an_index_in_setenv_is_a_named_source_serving_the_tox_deps(tmp_path: Path) -> None:
    repo = write(tmp_path, {"tox.ini": "[testenv]\nsetenv =\n    PIP_INDEX_URL = https://pkgs.corp.example/simple\n"
                                       "deps =\n    beta\n    gamma\n"})
    declared = read_declared(repo, runner=None)
    [source] = declared.sources
    assert source.location == "https://pkgs.corp.example/simple" and source.packages == ["beta", "gamma"]
    assert source.declared_in == "tox.ini [testenv] setenv PIP_INDEX_URL" and not source.public


def test_the_public_default_of_a_setenv_index_is_public(tmp_path: Path) -> None:
    setenv = "    PIP_INDEX_URL = {env:PIP_INDEX_URL:https://pypi.org/simple/}\n"
    repo = write(tmp_path, {"tox.ini": f"[testenv]\nsetenv =\n{setenv}deps = beta\n"})
    [source] = read_declared(repo, runner=None).sources
    assert source.public


@pytest.mark.parametrize(("files", "message"), [
    ({"tox.ini": "[testenv\ndeps = x\n"}, r"^tox.ini: not a valid INI file"),
    ({"pyproject.toml": '[tool.tox]\nlegacy_tox_ini = "[testenv\\n"\n'},
     r"^pyproject.toml \[tool.tox\] legacy_tox_ini: not a valid INI file"),
    ({"tox.toml": "[env_run_base\n"}, r"^tox.toml: not valid TOML"),
])
def test_broken_tox_files_are_refused_in_one_line(tmp_path: Path, files: dict[str, str], message: str) -> None:
    write(tmp_path, files)
    with pytest.raises(EnvError, match=message) as info:
        read_declared(tmp_path)
    assert "\n" not in str(info.value) and info.value.usage


@pytest.mark.parametrize(("deps", "message"), [
    ("-r ../../etc/passwd", r"leaves the repository"),
    ("-r missing.txt", r"missing.txt: no such requirements file"),
    ("examples/tutorial[test]", r"'examples/tutorial\[test\]' is not a requirement"),  # flask 2.0's tox.ini
])
def test_tox_deps_refused_leave_the_tox_env_out_and_say_so(tmp_path: Path, deps: str, message: str) -> None:
    write(tmp_path, {"tox.ini": f"[testenv]\ndeps =\n    gamma\n    {deps}\n", "requirements-test.txt": "beta\n"})
    declared = read_declared(tmp_path, runner=None)
    (note,) = [n for n in declared.notes if n.startswith("tox.ini [testenv] not used: ")]
    assert re.search(message, note)
    assert [r.text for r in declared.requirements] == ["beta"]
    assert [c.name for c in declared.candidates] == ["requirements-test.txt"]


def test_the_python_named_test_envs_are_read_too(tmp_path: Path) -> None:
    """mdformat's shape (2024): the deps sit in [testenv:py{39,310,...}], not in [testenv]."""
    repo = write(tmp_path, {
        "pyproject.toml": '[tool.tox]\nlegacy_tox_ini = """\n[tox]\nenvlist = py{39,310,311}\n'
                          '[testenv:py{39,310,311}]\ndeps =\n    -r tests/requirements.txt\n'
                          '[testenv:profile]\ndeps =\n    pytest-profiling\n[testenv:docs]\ndeps = sphinx\n"""\n',
        "tests/requirements.txt": "pytest\npytest-randomly\n"})
    assert set(texts(repo)) == {"pytest", "pytest-randomly"}
    native = write(tmp_path / "native", {
        "tox.toml": '[env_run_base]\ndeps = ["beta"]\n[env."3.12"]\ndeps = ["gamma"]\n[env.docs]\ndeps = ["sphinx"]\n'})
    # the base has deps of its own: the Python-named environment is tox's choice on that Python only
    assert set(texts(native)) == {"beta", 'gamma; python_version == "3.12"'}


def test_a_python_named_env_beside_a_base_with_deps_applies_to_its_python_only(tmp_path: Path) -> None:
    """dateutil's shape (2026): [testenv] reads requirements-dev.txt, [testenv:py33] a file pinning
    pytest<3.3 for Python 3.3. Read unconditionally, that pin gave a 3.11 sandbox pytest 3.2."""
    repo = write(tmp_path, {
        "tox.ini": "[tox]\nenvlist = py33,py311\n[testenv]\ndeps = -rrequirements-dev.txt\n"
                   "[testenv:py33]\ndeps =\n    -rrequirements/3.3/dev.txt\n    extra-three\n"
                   "[testenv:py{27,34}]\ndeps = legacy; sys_platform == 'linux'\n[testenv:py3]\ndeps = any-three\n",
        "requirements-dev.txt": "pytest>=3.0\n",
        "requirements/3.3/dev.txt": "pytest<3.3\n-r ../../requirements-dev.txt\n"})
    assert texts(repo) == {
        "pytest>=3.0": "requirements-dev.txt:1",  # read once, for every Python
        'pytest<3.3; python_version == "3.3"': "requirements/3.3/dev.txt:1",
        'extra-three; python_version == "3.3"': "tox.ini [testenv:py33] deps",
        'legacy; sys_platform == "linux" and (python_version == "2.7" or python_version == "3.4")':
            "tox.ini [testenv:py{27,34}] deps",
        "any-three": "tox.ini [testenv:py3] deps",  # py3 names no one Python
    }
