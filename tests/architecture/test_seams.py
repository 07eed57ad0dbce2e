"""The claims ARCHITECTURE.md makes about the seams, checked on the source: no import circle (even
counting imports made for type checking only), between modules nor between the folders of agent/ (its
layers), the protocol imports no console, the code that runs tasks and builds environments reaches the
container engines only through agent.backends.registry, and one client speaks to them (no docker-py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.architecture import test_boundary as boundary

ROOT = Path(__file__).resolve().parents[2]
# They ask the registry for a backend; Docker (agent/containers, docker-py) is the backends' business.
TASK_PATH = ["agent/task/runner.py", "agent/backends/pool.py", "agent/engines/base.py",
             "agent/engines/local.py", "agent/engines/ray.py", "agent/batch.py",
             *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "agent" / "eval").glob("*.py"))]
# Environments are built, kept and found through the seam too (Backend.builder()), as is a Ray node's image shipping.
BUILD_PATH = [*sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "agent" / "env").rglob("*.py")),
              "agent/engines/node.py", "agent/cli/commands/env.py"]
# The seam itself: what every backend implements and returns, engine-neutral.
SEAM = ["agent/sandboxes/base.py", "agent/backends/registry.py", "agent/sandboxes/config.py",
        "agent/sandboxes/result.py", "agent/sandboxes/__init__.py", "agent/sandboxes/build.py",
        "agent/sandboxes/owner.py"]


def _source(path: Path) -> str:
    """A module's source with its type-checking-only imports made plain ones (they count here)."""
    return path.read_text(encoding="utf-8").replace("if TYPE_CHECKING:", "if True:")


def _imports(relative: str) -> set[str]:
    path = ROOT / relative
    return boundary.imported_modules(_source(path), boundary._module_name(path))


def _engine_modules(found: set[str]) -> list[str]:
    return sorted(m for m in found if m.startswith(("agent.containers", "docker")) or m == "agent.backends.docker"
                  or m.startswith("agent.backends.podman"))


def _module_graph() -> dict[str, set[str]]:
    """Every first-party module and the first-party modules it imports (anywhere in it, type checking included)."""
    modules = {boundary._module_name(p): p for package in boundary.FIRST_PARTY for p in (ROOT / package).rglob("*.py")
               if "demo_data/repo" not in p.as_posix()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in boundary.imported_modules(_source(path), name):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def test_no_import_circle_even_for_type_checking() -> None:
    assert boundary.find_cycle(_module_graph()) is None


def _layer(module: str) -> str:
    """The layer of agent/ a module belongs to: its first-level folder, or the module itself at the top."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or (ROOT / Path(*parts[:2])).is_dir() else module


def test_the_folders_of_agent_are_layers_no_two_import_each_other() -> None:
    layers: dict[str, set[str]] = {}
    for name, targets in _module_graph().items():
        if name.startswith("agent."):
            source = _layer(name)
            layers.setdefault(source, set()).update(
                t for t in (_layer(t) for t in targets if t.startswith("agent.")) if t not in (source, "agent"))
    assert boundary.find_cycle(layers) is None


def test_the_protocol_imports_no_console() -> None:
    assert [m for m in _imports("agent/protocol.py") if m.startswith("agent.console")] == []


@pytest.mark.parametrize("relative", TASK_PATH)
def test_the_task_path_reaches_engines_only_through_the_registry(relative: str) -> None:
    assert _engine_modules(_imports(relative)) == []


@pytest.mark.parametrize("relative", BUILD_PATH)
def test_environments_and_node_images_reach_engines_only_through_the_registry(relative: str) -> None:
    assert _engine_modules(_imports(relative)) == []


def test_one_client_speaks_to_the_engines_and_it_is_codebox_own() -> None:
    """agent/containers/engine_api.py, stdlib only: no module of codebox, its tests or its benches imports
    docker-py (it would load requests and urllib3 on a task's path; two clients would drift apart)."""
    users = [p.relative_to(ROOT).as_posix() for package in ("agent", "sandbox", "tests", "bench")
             for p in (ROOT / package).rglob("*.py") if "demo_data/repo" not in p.as_posix()
             and any(m == "docker" or m.startswith("docker.") for m in _imports(p.relative_to(ROOT).as_posix()))]
    assert users == []


@pytest.mark.parametrize("relative", SEAM)
def test_the_seam_names_no_engine(relative: str) -> None:
    found = _imports(relative)
    assert _engine_modules(found) == []


def test_gc_asks_the_registry() -> None:
    tree = ast.parse((ROOT / "agent/cli/commands/maintenance.py").read_text(encoding="utf-8"))
    gc = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "cmd_gc")
    names = {n.module for n in ast.walk(gc) if isinstance(n, ast.ImportFrom)}
    assert "agent.backends.registry" in names and not any((m or "").startswith("agent.containers") for m in names)
