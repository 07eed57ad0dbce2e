"""Test infrastructure a model_patch touches: listed under `flagged`, resolved or not.

A patch that rewrites how tests run (a conftest.py, pytest's configuration, the named tests'
own files) can make failing tests pass without fixing anything; SWE-bench's harness does not
look. Flagged paths: any conftest.py, pytest.ini / pytest.toml (dotted too), sitecustomize /
usercustomize modules, the pytest sections of tox.ini, setup.cfg and pyproject.toml (only when
the patch changes that section), the files the test_patch touches and the files of the
FAIL_TO_PASS tests. Read on the host from the workspace (base: HEAD; patched: the files), parsed, never run.
"""

from __future__ import annotations

import configparser
import tomllib
from pathlib import Path
from typing import Any

from agent.eval.diffs import touched_paths
from agent.task.workspace import git

ALWAYS = {"conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "sitecustomize.py",
          "usercustomize.py"}
INI_SECTIONS = {"tox.ini": ("pytest",), "setup.cfg": ("tool:pytest",)}


def flagged_paths(workspace: Path, model_patch: str, test_patch: str | None, test_files: list[str]) -> list[str]:
    """The paths of ``model_patch`` that are test infrastructure, given the workspace after the patch
    went in (its HEAD is the base). ``test_files``: the files of the FAIL_TO_PASS tests."""
    protected = set(touched_paths(test_patch or "")) | set(test_files)
    flagged = []
    for path in touched_paths(model_patch):
        name = path.rsplit("/", 1)[-1]
        if name in ALWAYS or path in protected:
            flagged.append(path)
        elif name in INI_SECTIONS and _ini_section_changed(workspace, path, INI_SECTIONS[name]):
            flagged.append(f"{path} [{INI_SECTIONS[name][0]}]")
        elif name == "pyproject.toml" and _pyproject_pytest_changed(workspace, path):
            flagged.append(f"{path} [tool.pytest]")
    return flagged


def _base_text(workspace: Path, path: str) -> str:
    proc = git("show", f"HEAD:{path}", cwd=workspace, check=False)
    return proc.stdout.decode(errors="replace") if proc.returncode == 0 else ""


def _new_text(workspace: Path, path: str) -> str:
    target = workspace / path
    if target.is_symlink() or not target.is_file():
        return ""
    return target.read_bytes().decode(errors="replace")


def _ini_section_changed(workspace: Path, path: str, sections: tuple[str, ...]) -> bool:
    before = _ini_sections(_base_text(workspace, path), sections)
    return before != _ini_sections(_new_text(workspace, path), sections)


def _ini_sections(text: str, sections: tuple[str, ...]) -> Any:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return ("unreadable", text)  # a file pytest cannot read either: any change counts
    return {s: dict(parser.items(s)) for s in sections if parser.has_section(s)}


def _pyproject_pytest_changed(workspace: Path, path: str) -> bool:
    return _pytest_table(_base_text(workspace, path)) != _pytest_table(_new_text(workspace, path))


def _pytest_table(text: str) -> Any:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return ("unreadable", text)
    tool = data.get("tool")
    return tool.get("pytest") if isinstance(tool, dict) else None
