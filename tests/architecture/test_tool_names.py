"""A tool is named in two places only (its host module, its container module, and the catalog that
lists it): the container driver, the server, the loop and the runner route by the catalog's
properties (WRITE_TOOLS, CODE_TOOLS), never by a tool's name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sandbox.tools import catalog

ROOT = Path(__file__).resolve().parents[2]
# Code that handles every tool alike: a tool's name in a string here would be routing by name.
GENERIC = sorted(
    [
        *(ROOT / "agent" / "containers").rglob("*.py"),
        *(ROOT / "agent" / "sandboxes").rglob("*.py"),
        ROOT / "sandbox" / "server.py",
        ROOT / "sandbox" / "container_init.py",
        ROOT / "agent" / "task" / "loop.py",
        ROOT / "agent" / "task" / "runner.py",
        ROOT / "agent" / "task" / "policy.py",
    ]
)


def tool_names_in(source: str) -> list[str]:
    """The string constants of a module that name a tool (docstrings do not count)."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    return sorted(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in catalog.NAMES and id(node) not in docstrings
    )


def test_the_check_finds_a_name() -> None:
    assert tool_names_in('"""run_test is named here."""\nif tool == "run_test": pass\n') == ["run_test"]


@pytest.mark.parametrize("path", GENERIC, ids=lambda p: str(p.relative_to(ROOT)))
def test_generic_code_names_no_tool(path: Path) -> None:
    assert tool_names_in(path.read_text(encoding="utf-8")) == []
