"""The project layer's collector (it runs in the build box on a bare python3; here its pure parts)."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from agent.env.install.inside import _codebox_collect as collect

# What setuptools 52 (2021, pytest 6.3's day) wrote from prepare_metadata_for_build_wheel: egg_info's folder
# renamed, no version in its name.
PYTEST_2021 = {"dist_info": "pytest.dist-info",
               "metadata": "Metadata-Version: 2.1\nName: pytest\nVersion: 6.3.0.dev69+g4964b468c\n"
                           "Requires-Dist: attrs>=19.2.0\n",
               "entry_points": "[console_scripts]\npy.test = pytest:console_main\n"}


def test_an_unversioned_dist_info_is_installed_under_its_metadata_version(tmp_path: Path) -> None:
    name = collect.write_dist_info(str(tmp_path), PYTEST_2021)
    assert name == "pytest-6.3.0.dev69+g4964b468c.dist-info"
    found = {d.metadata["Name"]: d.version for d in importlib.metadata.distributions(path=[str(tmp_path)])}
    assert found == {"pytest": "6.3.0.dev69+g4964b468c"}


@pytest.mark.parametrize("name", ["../x.dist-info", "x-1.0.egg-info", "x y.dist-info"])
def test_other_metadata_folder_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(SystemExit, match="refused"):
        collect.write_dist_info(str(tmp_path), {**PYTEST_2021, "dist_info": name})


def test_an_unversioned_name_with_a_bad_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="refused"):
        collect.write_dist_info(str(tmp_path), {**PYTEST_2021, "metadata": "Name: pytest\nVersion: ../x\n"})
