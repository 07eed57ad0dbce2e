"""Which paths of a model patch make eval choose the environment again (a build may read them)."""

from __future__ import annotations

from agent.eval.env import patch_rebuilds


def test_python_modules_and_prose_are_served_from_the_workspace_as_they_are() -> None:
    assert patch_rebuilds(["src/pkg/mod.py", "pkg/types.pyi", "CHANGES.md", "docs/index.rst"]) == []


def test_compiled_sources_build_files_and_requirements_are_a_build_s_inputs() -> None:
    paths = ["pkg/_fast.pyx", "pkg/_fast.pxd", "src/unpack.h", "src/x.c", "setup.py", "sub/setup.py",
             "pyproject.toml", "setup.cfg", "requirements.txt", "pkg/mod.py"]
    assert patch_rebuilds(paths) == paths[:-1]


def test_notes_and_docs_folders_no_build_reads() -> None:
    """tenacity c650fb4's gold patch carries a YAML release note: it rebuilt the project for nothing."""
    notes = ["releasenotes/notes/fix-retry-3f2a.yaml", "docs/conf.toml", "changelog.d/123.bugfix.txt",
             ".github/workflows/ci.yml", "newsfragments/9.feature"]
    assert patch_rebuilds([*notes, "pkg/data/table.yaml", "docs.c"]) == ["pkg/data/table.yaml", "docs.c"]
