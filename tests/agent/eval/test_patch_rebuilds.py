"""Which paths of a model patch make eval choose the environment again (a build may read them)."""

from __future__ import annotations

from agent.eval.env import patch_rebuilds


def test_python_modules_and_prose_are_served_from_the_workspace_as_they_are() -> None:
    assert patch_rebuilds(["src/pkg/mod.py", "pkg/types.pyi", "CHANGES.md", "docs/index.rst"]) == []


def test_compiled_sources_build_files_and_requirements_are_a_build_s_inputs() -> None:
    paths = ["pkg/_fast.pyx", "pkg/_fast.pxd", "src/unpack.h", "src/x.c", "setup.py", "sub/setup.py",
             "pyproject.toml", "setup.cfg", "requirements.txt", "pkg/mod.py"]
    assert patch_rebuilds(paths) == paths[:-1]
