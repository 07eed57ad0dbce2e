"""Declared.dynamic_metadata says when (and why) only the project's own build backend knows its metadata;
Declared.build_system says what that backend is, for every project."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.env.read.declared import read_declared
from tests.agent.env.projects import write

SETUPTOOLS = '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'


@pytest.mark.parametrize(("files", "reason"), [
    ({"pyproject.toml": '[project]\nname = "d"\nversion = "1"\ndynamic = ["dependencies"]\n'
                        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'},
     "pyproject.toml [project] dynamic lists 'dependencies' (filled by hatchling.build)"),
    ({"pyproject.toml": '[project]\nname = "d"\nversion = "1"\ndynamic = ["optional-dependencies"]\n' + SETUPTOOLS},
     "pyproject.toml [project] dynamic lists 'optional-dependencies'"),
    ({"setup.py": "from setuptools import setup\nsetup(name='d', install_requires=read_requirements())\n"},
     "setup.py: install_requires= is computed at run time (line 2: a call to read_requirements())"),
    ({"setup.py": "from setuptools import setup\nE = {}\nfor k in 'ab':\n    E[k] = [k]\nsetup(extras_require=E)\n"},
     "setup.py: extras_require= is computed at run time (changed by code not followed: line 3: a for loop)"),
    ({"setup.py": "import setuptools\nsetuptools.setup(name='d')\n", "setup.cfg":
      "[metadata]\nname = d\n[options]\ninstall_requires = attr: d.REQUIRES\n"},
     "setup.cfg [options] install_requires: 'attr: d.REQUIRES' is computed by the build backend"),
    ({"setup.py": "from build_helpers import run\nrun()\n"}, "setup.py: no setup(...) call to read"),
    ({"pyproject.toml": '[build-system]\nrequires = ["mesonpy"]\nbuild-backend = "mesonpy"\n'},
     "pyproject.toml [build-system] build-backend 'mesonpy': no [project] table"),
])
def test_dynamic_metadata_is_named(tmp_path: Path, files: dict[str, str], reason: str) -> None:
    declared = read_declared(write(tmp_path, files), runner=None)
    assert declared.metadata_is_dynamic
    assert any(r.startswith(reason) for r in declared.dynamic_metadata), declared.dynamic_metadata


@pytest.mark.parametrize("files", [
    {"pyproject.toml": '[project]\nname = "s"\nversion = "1"\ndependencies = ["alpha"]\ndynamic = ["version"]\n'},
    {"setup.py": "from setuptools import setup\nR = ['alpha']\nsetup(name='s', install_requires=R)\n"},
    {"setup.cfg": "[metadata]\nname = s\n[options]\ninstall_requires = file: requirements.in\n",
     "setup.py": "import setuptools\nsetuptools.setup()\n", "requirements.in": "alpha\n"},
    {"pyproject.toml": '[project]\nname = "s"\nversion = "1"\ndynamic = ["dependencies", "optional-dependencies"]\n'
                       '[tool.setuptools.dynamic]\ndependencies = {file = ["requirements.in"]}\n'
                       'optional-dependencies.test = {file = ["test.in"]}\n' + SETUPTOOLS,
     "requirements.in": "alpha\n", "test.in": "gamma\n"},
    {"pyproject.toml": '[project]\nname = "s"\nversion = "1"\ndynamic = ["dependencies"]\n'
                       '[tool.hatch.metadata.hooks.requirements_txt]\nfiles = ["requirements.in"]\n',
     "requirements.in": "alpha\n"},
    {"pyproject.toml": '[tool.poetry]\nname = "s"\nversion = "1"\n[tool.poetry.dependencies]\nalpha = "*"\n'
                       '[build-system]\nrequires = ["poetry-core"]\nbuild-backend = "poetry.core.masonry.api"\n'},
    {"pyproject.toml": '[tool.flit.metadata]\nmodule = "s"\nrequires = ["alpha"]\n'
                       '[build-system]\nrequires = ["flit_core"]\nbuild-backend = "flit_core.buildapi"\n'},
])
def test_static_metadata_is_not_dynamic(tmp_path: Path, files: dict[str, str]) -> None:
    declared = read_declared(write(tmp_path, files), runner=None)
    assert declared.dynamic_metadata == [] and not declared.metadata_is_dynamic
    assert "alpha" in {r.text for r in declared.requirements}


def test_files_named_by_setuptools_dynamic_are_read_as_requirements(tmp_path: Path) -> None:
    declared = read_declared(write(tmp_path, {
        "pyproject.toml": '[project]\nname = "s"\nversion = "1"\ndynamic = ["dependencies", "optional-dependencies"]\n'
                          '[tool.setuptools.dynamic]\ndependencies = {file = ["requirements.in"]}\n'
                          'optional-dependencies.test = {file = ["test.in"]}\n' + SETUPTOOLS,
        "requirements.in": "alpha  # runtime\n", "test.in": "gamma>=3\n"}), runner=None)
    assert {r.text: r.source for r in declared.requirements} == {
        "alpha": "requirements.in:1", "gamma>=3": "pyproject.toml [tool.setuptools.dynamic.optional-dependencies] test"}


def test_the_build_system_is_read_for_every_project(tmp_path: Path) -> None:
    declared = read_declared(write(tmp_path / "a", {
        "pyproject.toml": '[project]\nname = "b"\nversion = "1"\n[build-system]\n'
                          'requires = ["hatchling>=1.20", "hatch-vcs"]\nbuild-backend = "hatchling.build"\n'}))
    assert declared.build_system.backend == "hatchling.build" and declared.build_system.declared
    assert [r.text for r in declared.build_system.requires] == ["hatchling>=1.20", "hatch-vcs"]
    assert declared.build_requires == []  # kept for compiled projects only
    legacy = read_declared(write(tmp_path / "b", {"setup.py": "from setuptools import setup\nsetup(name='l')\n"}))
    assert legacy.build_system.backend == "setuptools.build_meta:__legacy__" and not legacy.build_system.declared
    assert [r.text for r in legacy.build_system.requires] == ["setuptools>=40.8.0", "wheel"]


def test_a_compiling_backend_means_compiled_extensions(tmp_path: Path) -> None:
    declared = read_declared(write(tmp_path, {
        "pyproject.toml": '[project]\nname = "rs"\nversion = "1"\n[build-system]\nrequires = ["maturin>=1"]\n'
                          'build-backend = "maturin"\n'}))
    assert declared.project.extension_modules and "builds compiled code" in declared.extensions[0]


@pytest.mark.parametrize(("build_system", "message"), [
    ('requires = ["x"]\nbuild-backend = "os:system(1)"', r"build-backend: 'os:system\(1\)' is not a build backend"),
    ('requires = ["x"]\nbuild-backend = "b"\nbackend-path = ["/etc"]', r"backend-path: '/etc' is absolute"),
    ('requires = ["x"]\nbuild-backend = "b"\nbackend-path = ["../.."]', r"backend-path: '../..' leaves the repository"),
    ('requires = ["x @ https://10.0.0.1/x.whl"]', r"\[build-system\] requires: x @ https://10.0.0.1/x.whl: URL"),
])
def test_a_hostile_build_system_is_refused(tmp_path: Path, build_system: str, message: str) -> None:
    write(tmp_path / "repo", {"pyproject.toml": f"[build-system]\n{build_system}\n"})
    with pytest.raises(EnvError, match=message) as info:
        read_declared(tmp_path / "repo")
    assert "\n" not in str(info.value) and info.value.usage
