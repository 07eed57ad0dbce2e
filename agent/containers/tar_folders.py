"""The folders of a tar archive codebox writes for an image layer (a toolchain or a Python copied in).

Each folder once, its parents first, root's 0755 with no time: the archive's bytes depend on its files only.
"""

from __future__ import annotations

import tarfile


def add_folders(tar: tarfile.TarFile, name: str, made: set[str]) -> None:
    """``name`` and its parents, each the first time it is asked for (``made`` keeps what was added)."""
    if not name or name in made:
        return
    if "/" in name:
        add_folders(tar, name.rsplit("/", 1)[0], made)
    made.add(name)
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
    tar.addfile(info)
