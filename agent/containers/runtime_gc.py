"""Old runtime folders: `codebox gc` removes the runtimes of other codebox versions that no container uses.

A runtime folder (agent/containers/runtime.py) is made once per codebox version and its build files, and
the old one stays when codebox changes: a codebox of that version may still run, and its boxes have the
folder mounted at /.codebox. So a folder goes only when it is not this codebox's and no container of the
engine asked (running or stopped: a stopped box may be started again) has it as a mount's source.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from agent.containers.engine_api import EngineClient, EngineError
from agent.containers.runtime import MANIFEST, runtime_folder
from agent.errors import SandboxError


def mounted_sources(client: EngineClient) -> set[Path]:
    """Every host folder a container of this engine mounts (all containers, not only codebox's)."""
    try:
        containers = client.containers(all=True)
    except EngineError as exc:
        raise SandboxError(f"cannot list containers to see which runtimes are in use: {exc}") from exc
    return {Path(mount["Source"]) for info in containers for mount in info.get("Mounts") or []
            if isinstance(mount, dict) and mount.get("Source")}


def old_runtimes(current: Path, in_use: set[Path]) -> tuple[list[Path], list[Path]]:
    """The folders beside ``current`` that are runtimes of another codebox: (unused, in use)."""
    unused: list[Path] = []
    used: list[Path] = []
    if not current.parent.is_dir():
        return unused, used
    for folder in sorted(current.parent.iterdir()):
        if folder == current or not folder.is_dir() or folder.name.startswith("."):
            continue
        if not (folder / MANIFEST).is_file():
            continue  # not a runtime (or one being made: those are dot-folders until complete)
        in_it = any(source == folder or folder in source.parents for source in in_use)
        (used if in_it else unused).append(folder)
    return unused, used


def folder_size(folder: Path) -> int:
    return sum(path.lstat().st_size for path in folder.rglob("*") if not path.is_dir())


def remove_old_runtimes(client: EngineClient, log: Callable[[str], None], dry_run: bool = False) -> list[Path]:
    """Remove (or, ``dry_run``, name) the old runtime folders no container mounts; return them."""
    unused, used = old_runtimes(runtime_folder(), mounted_sources(client))
    for folder in used:
        log(f"{'would keep' if dry_run else 'keeping'} old runtime {folder}: a container mounts it")
    for folder in unused:
        size = folder_size(folder) / 1e6
        if dry_run:
            log(f"would remove old runtime {folder} ({size:.0f} MB): no container mounts it")
            continue
        log(f"removing old runtime {folder} ({size:.0f} MB): no container mounts it")
        shutil.rmtree(folder, ignore_errors=True)
        folder.with_name(f"{folder.name}.lock").unlink(missing_ok=True)
    return unused
