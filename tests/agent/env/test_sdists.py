"""Sdist-only dependencies resolved on the host without running them: metadata read from the sdist."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.env.read.reqlines import parse_requirement
from agent.env.resolve.resolve import IndexConfig, Target
from agent.env.resolve.sdists import build_requirements, resolve_with_sdists
from tests.agent.env.wheels import make_sdist, setuptools_pyproject

TARGET = Target(python="3.11.2", platform="x86_64-manylinux_2_36")
RAN = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\n"


def test_an_sdist_only_dependency_is_locked_as_its_sdist_with_what_it_declares(
    wheelhouse: Path, tmp_path: Path
) -> None:
    sdists = tmp_path / "sdists"
    marker = tmp_path / "ran"
    pyproject = setuptools_pyproject("tinysd", "0.1", ["beta>=2"])
    make_sdist(sdists, "tinysd", "0.1", {"pyproject.toml": pyproject, "setup.py": RAN.format(marker=str(marker)),
                                         "tinysd/__init__.py": "VALUE = 'sd'\n"})
    index = IndexConfig(find_links=[str(wheelhouse), str(sdists)], no_index=True)
    lock = resolve_with_sdists([parse_requirement("tinysd", "requirements.txt:1")], TARGET, index)
    assert lock.installed() == ["beta==2.0", "tinysd==0.1"]  # beta: declared by the sdist, read statically
    (sdist,) = lock.sdists()
    assert sdist.filename == "tinysd-0.1.tar.gz" and sdist.build_requires == ["setuptools>=61"]
    assert [r.text for r in build_requirements(lock)] == ["setuptools>=61"]
    assert not marker.exists()  # nothing of the sdist ran on the host


def test_wheels_are_still_preferred_where_there_are_wheels(wheelhouse: Path, tmp_path: Path) -> None:
    sdists = tmp_path / "sdists"
    make_sdist(sdists, "gamma", "9.0", {"pyproject.toml": setuptools_pyproject("gamma", "9.0", [])})
    index = IndexConfig(find_links=[str(wheelhouse), str(sdists)], no_index=True)
    lock = resolve_with_sdists([parse_requirement("gamma", "x")], TARGET, index)
    assert lock.installed() == ["gamma==3.0"] and lock.sdists() == []


def test_an_sdist_with_dynamic_dependencies_is_refused_without_running_it(wheelhouse: Path, tmp_path: Path) -> None:
    sdists = tmp_path / "sdists"
    marker = tmp_path / "ran"
    make_sdist(sdists, "dyn", "0.1", {
        "setup.py": RAN.format(marker=str(marker)) + "from setuptools import setup\nsetup(name='dyn', version='0.1')\n",
    })
    index = IndexConfig(find_links=[str(wheelhouse), str(sdists)], no_index=True)
    with pytest.raises(EnvError, match=r"dyn 0.1 has no wheel .* dynamically") as info:
        resolve_with_sdists([parse_requirement("dyn", "x")], TARGET, index)
    assert info.value.usage and not marker.exists()


def test_an_sdist_requiring_a_url_is_refused(wheelhouse: Path, tmp_path: Path) -> None:
    sdists = tmp_path / "sdists"
    pyproject = setuptools_pyproject("urly", "1.0", ["evil @ https://10.0.0.1/evil.whl"])
    make_sdist(sdists, "urly", "1.0", {"pyproject.toml": pyproject})
    index = IndexConfig(find_links=[str(wheelhouse), str(sdists)], no_index=True)
    with pytest.raises(EnvError, match="by URL; refused"):
        resolve_with_sdists([parse_requirement("urly", "x")], TARGET, index)


def test_a_development_only_sdist_with_dynamic_dependencies_is_left_out_with_a_note(
    wheelhouse: Path, tmp_path: Path
) -> None:
    # rich 5ba9cb5: poetry's dev-dependencies name asv ^0.5.1, an sdist with a setup.py; the whole environment
    # was refused for a benchmarking tool its tests never import
    sdists = tmp_path / "sdists"
    marker = tmp_path / "ran"
    make_sdist(sdists, "dyn", "0.1", {
        "setup.py": RAN.format(marker=str(marker)) + "from setuptools import setup\nsetup(name='dyn', version='0.1')\n",
    })
    index = IndexConfig(find_links=[str(wheelhouse), str(sdists)], no_index=True)
    dev = [parse_requirement("gamma", "pyproject.toml [tool.poetry.dependencies]"),
           parse_requirement("dyn>=0.1", "pyproject.toml [tool.poetry.dev-dependencies]"),
           parse_requirement("dyn", "requirements-dev.txt:3")]
    notes: list[str] = []
    lock = resolve_with_sdists(dev, TARGET, index, notes=notes)
    assert lock.installed() == ["gamma==3.0"] and not marker.exists()
    assert notes == ["dyn 0.1 (declared for development only: pyproject.toml [tool.poetry.dev-dependencies], "
                     "requirements-dev.txt:3) left out: it has no wheel for the sandbox and its sdist declares its "
                     "dependencies dynamically (codebox does not run package code on the host)"]
    # declared anywhere else too (a runtime dependency, a test extra): still refused
    with pytest.raises(EnvError, match=r"dyn 0.1 has no wheel .* dynamically"):
        resolve_with_sdists([*dev, parse_requirement("dyn", "pyproject.toml [project.optional-dependencies] test")],
                            TARGET, index, notes=notes)


def test_a_wheel_built_for_another_python_is_refused_by_its_tag() -> None:
    """pytest 2.6.0's sdist, built on 3.11, makes a wheel tagged py2: the installer would refuse it (pip too)."""
    from agent.env.install.sdist_wheel import check_python_tag
    from agent.env.resolve.resolve import Pin

    pin = Pin(name="pytest", version="2.6.0", url="file:///x", sha256="0" * 64)
    check_python_tag("x-1.0-py2.py3-none-any.whl", TARGET, pin)
    check_python_tag("x-1.0-cp311-cp311-linux_x86_64.whl", TARGET, pin)
    with pytest.raises(EnvError, match=r"is for Python py2, not 3.11") as info:
        check_python_tag("pytest-2.6.0-py2-none-any.whl", TARGET, pin)
    assert info.value.usage


def test_a_dynamic_sdist_s_setup_requires_are_part_of_what_builds_it(tmp_path: Path) -> None:
    """iniconfig 1.0.0's shape: no pyproject, setup() inside main() with setup_requires=['setuptools-scm'] (what
    setuptools' get_requires_for_build_wheel returns): the box's wheelhouse must hold it."""
    from agent.env.resolve.resolve import Pin
    from agent.env.resolve.sdists import DynamicSdist, read_sdist

    setup_py = ("from setuptools import setup\n\n\ndef main():\n    setup(name='iniconfig', use_scm_version=True,\n"
                "          setup_requires=['setuptools-scm'])\n\n\nif __name__ == '__main__':\n    main()\n")
    path = make_sdist(tmp_path, "iniconfig", "1.0.0", {"setup.py": setup_py})
    pin = Pin(name="iniconfig", version="1.0.0", url=path.as_uri(), sha256="0" * 64, sdist=True)
    with pytest.raises(DynamicSdist) as info:
        read_sdist(path, pin)
    assert info.value.build_requires == ["setuptools>=40.8.0", "wheel", "setuptools-scm"]


def test_a_universal_wheel_is_named_by_all_its_tags(tmp_path: Path) -> None:
    """docopt 0.6.2 and atomicwrites 1.4.1, built in the box: their WHEEL lists py2-none-any and py3-none-any; named
    from the first alone, uv refused them on cp39 (10 of the development set's rows)."""
    import zipfile

    from agent.env.install.sdist_wheel import _wheel_name, check_python_tag, compressed_tag
    from agent.env.resolve.resolve import Pin

    built = tmp_path / "built.whl"
    with zipfile.ZipFile(built, "w") as archive:
        archive.writestr("docopt-0.6.2.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                         "Tag: py2-none-any\nTag: py3-none-any\n\n")
    pin = Pin(name="docopt", version="0.6.2", url="file:///x", sha256="0" * 64)
    name = _wheel_name(built, pin)
    assert name == "docopt-0.6.2-py2.py3-none-any.whl"
    check_python_tag(name, TARGET, pin)  # a Python 3 may install it
    assert compressed_tag(["cp39-cp39-manylinux_2_17_x86_64", "cp39-cp39-manylinux2014_x86_64"]) == (
        "cp39-cp39-manylinux_2_17_x86_64.manylinux2014_x86_64")


def test_sdists_that_do_not_settle_drop_the_candidate_instead_of_ending_the_build(
        wheelhouse: Path, tmp_path: Path) -> None:
    """requests 2.3's requirements.txt of 2012 (pytest-cov 1.6 -> cov-core -> ...: sdists all the way down) as a
    chain of sdist-only packages longer than the rounds allow: the error is the candidate's, so the next is tried."""
    from agent.env.install.box import Deadline
    from agent.env.install.candidate_loop import _drops_candidate
    from agent.env.resolve.sdists import MAX_ROUNDS

    sdists = tmp_path / "sdists"
    length = MAX_ROUNDS // 2 + 2  # each sdist-only package takes up to two rounds
    for n in range(length):
        needs = [f"link{n + 1}"] if n + 1 < length else []
        make_sdist(sdists, f"link{n}", "1.0", {"pyproject.toml": setuptools_pyproject(f"link{n}", "1.0", needs),
                                               f"link{n}/__init__.py": ""})
    index = IndexConfig(find_links=[str(wheelhouse), str(sdists)], no_index=True)
    with pytest.raises(EnvError, match=f"did not settle in {MAX_ROUNDS} rounds") as caught:
        resolve_with_sdists([parse_requirement("link0", "requirements.txt:1")], TARGET, index)
    assert caught.value.usage and _drops_candidate(caught.value, Deadline(60))
