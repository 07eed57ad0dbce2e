"""The PEP 517 hook runner makes setup.py ``__main__`` for setuptools' legacy backend, as pip's legacy path does.

astropy 3.0.dev (SWE-bench's astropy 1.3 rows) decides whether it is being set up from ``__main__.__file__``;
run through a hook script it was not, so its import checked numpy and tried to rebuild its own extensions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

# What astropy's _is_astropy_setup() asks, answered by a backend whose hooks report it.
BACKEND = """import os, sys

class _Legacy:
    def get_requires_for_build_wheel(self, config_settings=None):
        main = sys.modules.get('__main__')
        return [os.path.basename(getattr(main, '__file__', '') or '')]

__legacy__ = _Legacy()
build_meta = _Legacy()
"""


@pytest.mark.parametrize(("backend", "seen"), [("fakebackend:__legacy__", "setup.py"),
                                               ("fakebackend:build_meta", "_codebox_pep517.py")])
def test_setup_py_is_main_for_the_legacy_backend_only(tmp_path: Path, backend: str, seen: str) -> None:
    script = tmp_path / "_codebox_pep517.py"
    script.write_text(resources.files("agent.env.install.inside").joinpath("_codebox_pep517.py").read_text("utf-8"))
    project = tmp_path / "project"
    project.mkdir()
    (project / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    (project / "fakebackend.py").write_text(BACKEND)
    env = {**os.environ, "PEP517_BACKEND": backend, "PEP517_BACKEND_PATH": "."}
    subprocess.run([sys.executable, str(script), "requires", str(tmp_path / "out.json")], cwd=project, env=env,
                   check=True, capture_output=True)
    assert json.loads((tmp_path / "out.json").read_text())["requires"] == [seen]
