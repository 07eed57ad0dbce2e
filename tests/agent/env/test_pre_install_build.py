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
