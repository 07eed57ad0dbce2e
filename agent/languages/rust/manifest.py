"""A Rust repository's manifests, read on the host and never run: is it a crate or a workspace, and does any
Cargo.toml name a dependency codebox will not fetch (a git repository, a path outside the repository, another
registry). cargo never runs here: it would read the repository's .cargo/config.toml (a rustc-wrapper runs on
the host) and fetch git dependencies from anywhere.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent.env.errors import EnvError
from agent.env.read.safe_read import inside, read_toml

MANIFEST = "Cargo.toml"
LOCK = "Cargo.lock"
_DEPENDENCY_TABLES = ("dependencies", "dev-dependencies", "build-dependencies")
_SKIPPED = {".git", "target", "node_modules", "vendor"}
MAX_MANIFESTS = 500


def root_kind(repo: Path) -> str | None:
    """"[workspace]" or "[package]" as the root Cargo.toml declares it, or None (no manifest, or not Rust's)."""
    try:
        data = read_toml(repo, MANIFEST)
    except EnvError:
        return "[package]" if (repo / MANIFEST).is_file() else None  # cargo will say what is wrong with it
    if data is None:
        return None
    if isinstance(data.get("workspace"), dict):
        return "[workspace]"
    return "[package]" if isinstance(data.get("package"), dict) else None


def manifests(repo: Path) -> list[str]:
    """The repository's Cargo.toml files (relative, sorted), skipping build output, git's and vendored trees."""
    found: list[str] = []
    root = repo.resolve()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED and not d.startswith("."))
        if MANIFEST in files:
            found.append(os.path.relpath(os.path.join(folder, MANIFEST), root))
            if len(found) >= MAX_MANIFESTS:
                break
    return sorted(found)


def refusal(repo: Path) -> str | None:
    """Why codebox will not fetch this repository's crates (one line naming the manifest and the dependency),
    or None: every dependency comes from crates.io or from a path inside the repository."""
    for relative in manifests(repo):
        try:
            data = read_toml(repo, relative)
        except EnvError as exc:
            return str(exc)
        for where, name, spec in _dependencies(data or {}):
            why = _refused_dependency(repo, relative, spec)
            if why:
                return f"{relative}: {where} {name!r} {why}"
    return None


def _dependencies(data: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(table, name, spec) of every dependency a manifest names, in every table cargo reads them from."""
    tables: list[tuple[str, Any]] = [(t, data.get(t)) for t in _DEPENDENCY_TABLES]
    workspace = data.get("workspace")
    if isinstance(workspace, dict):
        tables.append(("[workspace.dependencies]", workspace.get("dependencies")))
    target = data.get("target")
    if isinstance(target, dict):
        for cfg, section in target.items():
            if isinstance(section, dict):
                tables += [(f"[target.{cfg}.{t}]", section.get(t)) for t in _DEPENDENCY_TABLES]
    for key in ("patch", "replace"):
        section = data.get(key)
        if isinstance(section, dict) and key == "patch":
            tables += [(f"[patch.{source}]", patches) for source, patches in section.items()]
        elif isinstance(section, dict):
            tables.append(("[replace]", section))
    found: list[tuple[str, str, dict[str, Any]]] = []
    for where, table in tables:
        if isinstance(table, dict):
            found += [(where if where.startswith("[") else f"[{where}]", str(name), spec)
                      for name, spec in table.items() if isinstance(spec, dict)]
    return found


def _refused_dependency(repo: Path, manifest: str, spec: dict[str, Any]) -> str | None:
    if "git" in spec:
        return f"comes from git ({str(spec['git'])[:80]}): codebox fetches crates from crates.io only"
    if "registry" in spec or "registry-index" in spec:
        return "comes from another registry than crates.io: codebox fetches crates from crates.io only"
    path = spec.get("path")
    if isinstance(path, str):
        folder = os.path.dirname(manifest)
        try:
            inside(repo, os.path.normpath(os.path.join(folder, path)))
        except EnvError:
            return f"is a path outside the repository ({path[:80]}): the sandbox holds the repository only"
    return None
