"""A spec's pin made for another Python, moved to its series' nearest release with a wheel for this one.

The index is shaped as PyPI has these packages: numpy 1.23.0 and 1.23.1 ship wheels up to CPython 3.10 (and an
sdist), 1.23.2 is the first with 3.11 wheels; pandas 1.5.3 has 3.11 wheels and asks numpy>=1.23.2 on 3.11 (so
SWE-bench's xarray 0.12 pins, numpy==1.23.0 with pandas==1.5.3, conflict there); docopt 0.6.2 is an sdist only;
pyyaml 5.3 and 5.3.1 have no Linux wheel, 5.4 has.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from agent.env.read.reqlines import parse_requirement
from agent.env.resolve.nearest import exact_version, moved_pins, nearest_release, without_wheels
from agent.env.resolve.resolve import PREFERRED, IndexConfig, Target, resolve
from tests.agent.env.wheels import make_wheel

PY311 = Target(python="3.11.2", platform="x86_64-manylinux_2_36")
PY310 = Target(python="3.10.12", platform="x86_64-manylinux_2_36")
SPEC = ["numpy==1.23.0", "pandas==1.5.3", "docopt==0.6.2", "pyyaml==5.3"]


def _binary(folder: Path, name: str, version: str, pythons: list[str], requires: tuple[str, ...] = ()) -> None:
    """A wheel per CPython in ``pythons``, named as a compiled one (uv reads the tags from the file name)."""
    pure = make_wheel(folder / "pure", name, version, {f"{name}/__init__.py": f"VERSION = {version!r}\n"}, requires)
    for py in pythons:
        tag = f"cp{py.replace('.', '')}"
        (folder / f"{name}-{version}-{tag}-{tag}-manylinux_2_17_x86_64.manylinux2014_x86_64.whl").write_bytes(
            pure.read_bytes())
    pure.unlink()


def _sdist(folder: Path, name: str, version: str) -> None:
    body = f"from setuptools import setup\nsetup(name={name!r}, version={version!r})\n".encode()
    with tarfile.open(folder / f"{name}-{version}.tar.gz", "w:gz") as archive:
        info = tarfile.TarInfo(f"{name}-{version}/setup.py")
        info.size = len(body)
        archive.addfile(info, io.BytesIO(body))


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> IndexConfig:
    folder = tmp_path_factory.mktemp("pypi-shape")
    for version in ("1.23.0", "1.23.1"):
        _binary(folder, "numpy", version, ["3.8", "3.9", "3.10"])
        _sdist(folder, "numpy", version)
    _binary(folder, "numpy", "1.23.2", ["3.8", "3.9", "3.10", "3.11"])
    _binary(folder, "numpy", "1.23.5", ["3.8", "3.9", "3.10", "3.11"])
    _binary(folder, "pandas", "1.5.3", ["3.8", "3.9", "3.10", "3.11"],
            ('numpy>=1.21.0; python_version < "3.11"', 'numpy>=1.23.2; python_version >= "3.11"'))
    _sdist(folder, "docopt", "0.6.2")
    _sdist(folder, "pyyaml", "5.3")
    _sdist(folder, "pyyaml", "5.3.1")
    _binary(folder, "pyyaml", "5.4", ["3.8", "3.9", "3.10", "3.11"])
    _binary(folder, "hdf", "1.0", ["3.8", "3.9", "3.10"])
    _binary(folder, "hdf", "2.0", ["3.10", "3.11"])
    return IndexConfig(find_links=[str(folder)], no_index=True)


def _spec() -> list:
    return [parse_requirement(text, PREFERRED) for text in SPEC]


def test_only_exact_pins_are_moved() -> None:
    assert [exact_version(parse_requirement(t, "x")) for t in
            ("numpy==1.23.0", "numpy>=1.23", "numpy==1.23.*", "numpy[extra]==1.0", "numpy==1.0; python_version<'3'")
            ] == ["1.23.0", None, None, None, None]


def test_the_pins_without_a_wheel_for_the_stand_in_are_named(index: IndexConfig) -> None:
    assert sorted(without_wheels(_spec(), PY311, index)) == ["docopt", "numpy", "pyyaml"]
    assert sorted(without_wheels(_spec(), PY310, index)) == ["docopt", "pyyaml"]


def test_the_nearest_release_of_the_series_with_a_wheel_is_taken(index: IndexConfig) -> None:
    spec = {r.name: r for r in _spec()}
    assert nearest_release(spec["numpy"], PY311, index) == "1.23.2"  # not 1.23.5, the newest
    assert nearest_release(spec["pyyaml"], PY311, index) is None  # 5.4 is another series: built from 5.3's sdist
    assert nearest_release(spec["docopt"], PY311, index) is None


def test_xarray_012_spec_pins_resolve_on_311_after_the_move(index: IndexConfig) -> None:
    spec = [r for r in _spec() if r.name in ("numpy", "pandas")]
    with pytest.raises(Exception, match="numpy"):
        resolve(spec, PY311, index)  # as shipped: no numpy 1.23.0 wheel for 3.11, and pandas wants >=1.23.2
    moved, notes = moved_pins(_spec(), PY311, index)
    assert {old: new.text for old, new in moved.items()} == {"numpy==1.23.0": "numpy==1.23.2"}
    assert moved["numpy==1.23.0"].source == PREFERRED
    assert notes == ["preferred numpy==1.23.0, ran numpy==1.23.2 on Python 3.11: the nearest release with a wheel "
                     "for it"]
    lock = resolve([moved.get(r.text, r) for r in spec], PY311, index)
    assert sorted(lock.installed()) == ["numpy==1.23.2", "pandas==1.5.3"]


def test_for_a_stand_in_a_compiled_pin_whose_series_has_no_wheel_takes_the_next_that_has(index: IndexConfig) -> None:
    """astropy 1.3's spec (made for 3.6) pins numpy 1.16.0, which has 3.6 wheels and none for 3.9 in its series; its
    pytest-astropy 0.2.1 is an sdist only, for any Python, and stays. Here: hdf 1.0 (wheels to 3.10) and pyyaml 5.3."""
    spec = {r.name: r for r in _spec()}
    assert nearest_release(spec["pyyaml"], PY311, index, across_series=True) == "5.4"
    assert nearest_release(spec["docopt"], PY311, index, across_series=True) is None  # no wheel of any release
    pins = [*_spec(), parse_requirement("hdf==1.0", PREFERRED)]
    moved, notes = moved_pins(pins, PY311, index, made_for="3.10")
    assert {old: new.text for old, new in moved.items()} == {"numpy==1.23.0": "numpy==1.23.2", "hdf==1.0": "hdf==2.0"}
    assert "preferred hdf==1.0, ran hdf==2.0 on Python 3.11: the nearest release with a wheel for it" in notes
    assert moved_pins(pins, PY311, index)[0].keys() == {"numpy==1.23.0"}  # no stand-in: its series only


def test_on_the_spec_s_own_python_nothing_moves(index: IndexConfig) -> None:
    assert moved_pins(_spec(), PY310, index) == ({}, [])
