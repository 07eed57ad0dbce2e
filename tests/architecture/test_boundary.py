"""The boundary in the tree: sandbox/ runs inside the container on a bare python3, so it imports
only the standard library and itself; and no package of codebox imports in a circle."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = ROOT / "sandbox"
FIRST_PARTY = ("agent", "sandbox")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_modules(source: str, module: str) -> set[str]:
    """Every module a source imports (function-local imports included, TYPE_CHECKING blocks not)."""
    found: set[str] = set()
    package = module if module.count(".") == 0 else module.rsplit(".", 1)[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                name = f"{base}.{node.module}" if node.module else base
            else:
                name = node.module or ""
            found.add(name)
            found.update(f"{name}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def boundary_violations(source: str, module: str) -> list[str]:
    """Imports of an in-container module that are neither the standard library nor sandbox.*."""
    bad = []
    for name in sorted(imported_modules(source, module)):
        top = name.split(".")[0]
        if top == "sandbox" or top in sys.stdlib_module_names or top == "__future__":
            continue
        bad.append(name)
    # "from sandbox.x import y" also yields "sandbox.x.y": fine. "from typing import Any" yields
    # "typing.Any": its top is stdlib. Only third-party and agent.* are left.
    return bad


def _sandbox_modules() -> list[Path]:
    return sorted(SANDBOX.rglob("*.py"))


def test_the_check_catches_a_host_import() -> None:
    assert boundary_violations("import pydantic\n", "sandbox.x") == ["pydantic"]
    assert boundary_violations("def f():\n    from agent.protocol import Report\n", "sandbox.x") == [
        "agent.protocol",
        "agent.protocol.Report",
    ]
    assert boundary_violations("import json\nfrom sandbox import wire\n", "sandbox.x") == []


@pytest.mark.parametrize("path", _sandbox_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_sandbox_imports_only_the_standard_library(path: Path) -> None:
    module = _module_name(path)
    assert boundary_violations(path.read_text(encoding="utf-8"), module) == []


def _first_party_graph() -> dict[str, set[str]]:
    modules = {
        _module_name(p): p
        for package in FIRST_PARTY
        for p in (ROOT / package).rglob("*.py")
        if "demo_data/repo" not in p.as_posix()
    }
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in imported_modules(path.read_text(encoding="utf-8"), name):
            # "from agent.tools import base" names a module; "from agent.tools import X" a name in one.
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as a list of modules, or None. A package's __init__ re-exporting its own
    submodules is not a cycle with them (the submodules import their siblings, not the package)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if node.startswith(target + "."):
                continue  # a module importing its own package's __init__
            if state.get(target) == 1:
                return [*stack[stack.index(target):], target]
            if state.get(target) is None:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if state.get(node) is None:
            found = visit(node)
            if found:
                return found
    return None


def test_the_cycle_check_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles() -> None:
    assert find_cycle(_first_party_graph()) is None


@pytest.mark.docker
def test_every_in_container_entry_point_imports_under_a_bare_interpreter(sandbox_image: str) -> None:
    """`python3 -I` in the sandbox image (no site dirs of the user, no PYTHONPATH): if a module
    under sandbox/ imported pydantic or agent.*, this import would fail."""
    modules = sorted(
        _module_name(p) for p in _sandbox_modules() if not p.name.startswith("__main__")
    )
    script = "import sys; sys.path.insert(0, '/opt/codebox')\n" + "".join(f"import {m}\n" for m in modules)
    result = subprocess.run(
        [
            "docker", "run", "--rm", "--network", "none", "--read-only",
            "-v", f"{SANDBOX}:/opt/codebox/sandbox:ro", "-w", "/",
            sandbox_image, "python3", "-I", "-c", script,
        ],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_no_two_test_modules_share_a_name() -> None:
    """tests/ has no __init__.py: pytest imports each module by its basename, and a second file of the same name
    in another folder stops the whole collection ("import file mismatch"), which no partial run shows."""
    from collections import Counter

    names = Counter(path.name for path in (ROOT / "tests").rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
