"""A recipe's pre_install that edits ``[build-system] requires``: pip reads them after it, so codebox does too.

The shape is SWE-bench 4.1.0's spec for astropy 4.1-5.2 on astropy 4.3's own pyproject.toml: its sed pins
``setuptools==68.0.0``, since today's setuptools has no ``setuptools.dep_util`` (astropy's wcs setup_package).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.env.install.plan import requires_after_pre_install
from agent.env.read.backend import build_requires
from agent.env.read.safe_read import parse_toml

ASTROPY_43 = """[build-system]
requires = ["setuptools",
            "setuptools_scm>=6.2",
            "wheel",
            "cython==0.29.22",
            "oldest-supported-numpy",
            "extension-helpers"]
build-backend = 'setuptools.build_meta'

[tool.setuptools_scm]
write_to = "astropy/_version.py"
"""
SPEC_SED = 'sed -i \'s/requires = \\["setuptools",/requires = \\["setuptools==68.0.0",/\' pyproject.toml'


def _after_sed(tmp_path: Path) -> str:
    (tmp_path / "pyproject.toml").write_text(ASTROPY_43, encoding="utf-8")
    subprocess.run(["sh", "-c", SPEC_SED], cwd=tmp_path, check=True)
    return (tmp_path / "pyproject.toml").read_text(encoding="utf-8")


def test_the_spec_s_sed_pins_setuptools_for_the_build(tmp_path: Path) -> None:
    before = build_requires(parse_toml(ASTROPY_43, "pyproject.toml"))
    after = requires_after_pre_install(_after_sed(tmp_path), before)
    assert after is not None
    assert [r.text for r in after] == ["setuptools==68.0.0", "setuptools_scm>=6.2", "wheel", "cython==0.29.22",
                                       "oldest-supported-numpy", "extension-helpers"]
    assert "as pre_install left it" in after[0].source


def test_an_untouched_pyproject_or_none_changes_nothing() -> None:
    before = build_requires(parse_toml(ASTROPY_43, "pyproject.toml"))
    assert requires_after_pre_install(ASTROPY_43, before) is None
    assert requires_after_pre_install(None, before) is None


def test_a_pre_install_that_breaks_the_file_is_one_line(tmp_path: Path) -> None:
    before = build_requires(parse_toml(ASTROPY_43, "pyproject.toml"))
    with pytest.raises(EnvError, match=r"pyproject.toml \(after pre_install\)") as info:
        requires_after_pre_install(ASTROPY_43.replace("]\nbuild-backend", "\nbuild-backend"), before)
    assert "\n" not in str(info.value)


# The end of astropy 1.3's failed build log in codebox's box (PEP 517's fallback, no [build-system]), as it came.
ASTROPY_13_LOG = """the project's own build failed offline (get_requires_for_build_*, exit 1); the end of its log:
Initializing astropy_helpers submodule with: `git submodule update --init -- astropy_helpers`
error: could not lock config file .git/config: Read-only file system
Traceback (most recent call last):
  File "/tmp/codebox-buildenv/lib/python3.9/site-packages/setuptools/_vendor/packaging/version.py", line 1, in <module>
  File "/tmp/codebox-buildenv/lib/python3.9/site-packages/setuptools/build_meta.py", line 145, in run_setup
    exec(compile(code, __file__, 'exec'), locals())
  File "setup.py", line 17, in <module>
    import astropy
  File "/repo/astropy/__init__.py", line 110, in _check_numpy
    raise ImportError(msg)
ImportError: Numpy version 1.10.0 or later must be installed to use Astropy
"""
SPEC_13 = ["attrs==17.3.0", "cython==0.27.3", "numpy==1.16.0", "packaging==16.8", "pytest==3.3.1", "PyYAML==3.12"]


def test_a_legacy_build_s_error_names_the_spec_pins_pip_would_have_given_it(tmp_path: Path) -> None:
    from agent.env.install.plan import pins_a_legacy_build_names
    from agent.env.read.reqlines import parse_requirement
    from agent.env.resolve.resolve import PREFERRED

    pins = [parse_requirement(text, PREFERRED) for text in SPEC_13]
    (tmp_path / "setup.py").write_text("import ah_bootstrap\n")
    named = pins_a_legacy_build_names(ASTROPY_13_LOG, pins, tmp_path)
    assert [r.text for r in named] == ["numpy==1.16.0"]  # not packaging, whose name is only in a path
    (tmp_path / "pyproject.toml").write_text(ASTROPY_43)  # a [build-system]: pip isolates the build, as codebox
    assert pins_a_legacy_build_names(ASTROPY_13_LOG, pins, tmp_path) == []


def test_each_failed_legacy_build_adds_the_pins_it_names_for_a_few_rounds(tmp_path: Path) -> None:
    """astropy 3.0.dev's in-place build needs jinja2 (erfa's generator), then numpy: two rounds, then no more."""
    from agent.env.cancel import NEVER
    from agent.env.errors import ProjectBuildFailed
    from agent.env.install.box import Deadline
    from agent.env.install.env_build import EnvBuild
    from agent.env.install.inputs import EnvInputs
    from agent.env.install.plan import Backend
    from agent.env.install.project import Project
    from agent.env.install.request import EnvRequest
    from agent.env.read.declared import Declared
    from agent.env.read.reqlines import parse_requirement
    from agent.env.resolve.resolve import PREFERRED, IndexConfig, Target
    from tests.agent.env.wheels import make_wheel

    wheels = tmp_path / "wheels"
    for name, version in (("jinja2", "2.10"), ("numpy", "1.16.0")):
        make_wheel(wheels, name, version, {f"{name}/__init__.py": ""})
    repo = tmp_path / "astropy"
    repo.mkdir()
    (repo / "setup.py").write_text("import ah_bootstrap\n")
    build = EnvBuild.__new__(EnvBuild)  # the retry's decision alone: no engine, no box
    build.request = EnvRequest(repo=repo, python="3.9", index=IndexConfig(find_links=[str(wheels)], no_index=True))
    prefer = [parse_requirement(t, PREFERRED) for t in ("jinja2==2.10", "numpy==1.16.0", "pytest==3.3.1")]
    build.inputs = EnvInputs(declared=Declared(project=Project()), recipe=build.request.recipe, pip=[],
                             prefer=prefer, backend=Backend(), build_requires=[], build=True)
    build.target = Target(python="3.9.2", platform="x86_64-manylinux_2_31")
    build.deadline = Deadline(600)
    build.cancel = NEVER
    build.log = lambda _: None
    build.build_pins, build.pin_rounds = [], 0

    def failed(error: str) -> ProjectBuildFailed:
        return ProjectBuildFailed(f"the project's own build failed offline; the end of its log:\n{error}\n", 1)

    assert build._build_with_spec_pins(failed("ModuleNotFoundError: No module named 'jinja2'"))
    assert build._build_with_spec_pins(failed("ImportError: Numpy version 1.10.0 or later must be installed"))
    assert [r.text for r in build.build_pins] == ["jinja2==2.10", "numpy==1.16.0"]
    assert not build._build_with_spec_pins(failed("ModuleNotFoundError: No module named 'jinja2'"))  # nothing new
    assert not build._build_with_spec_pins(failed("error: command 'gcc' failed"))  # names no pin
    assert not build._build_with_spec_pins(ProjectBuildFailed("killed; pytest", 137))  # a signal
    assert any("failed naming numpy==1.16.0" in note for note in build.inputs.declared.notes)
