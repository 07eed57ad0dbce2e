"""A resolution kept by its inputs, so that the next environment with the same requirements skips uv.

The rows of one SWE-bench version share their dependencies (read at the environment_setup_commit, as of
its day) but not their project layer when the project builds itself (a version tool, compiled code):
each row's environment is keyed by its own tree, and its dependencies were resolved again, the same
lock each time. A lock is a function of its inputs when the date is fixed (uv's ``--exclude-newer``:
the files uploaded before it), so it is kept under the hash of the requirements (with where each was
declared: a development-only one is treated apart), the preferred versions, the target Python and
platform, the index configuration and the date. Resolving as of now is never kept. A kept lock that
names a local file no longer there (a wheel built from an sdist, since removed) is not reused.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from agent.env.read.reqlines import Requirement
from agent.env.resolve.resolve import IndexConfig, Lock, Target

FORMAT = "lock-1"


def memo_key(requirements: list[Requirement], prefer: list[Requirement], target: Target, index: IndexConfig,
             exclude_newer: str | None) -> str | None:
    """The key of a resolution, or None when it is not kept (no date)."""
    if exclude_newer is None:
        return None
    material = {
        "format": FORMAT, "requirements": [[r.text, r.source] for r in requirements],
        "prefer": [[r.text, r.source] for r in prefer], "python": target.python, "platform": target.platform,
        "index": index.model_dump(mode="json"), "uv_index": sorted(IndexConfig.user_indexes()),
        "exclude_newer": exclude_newer,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:32]


def _path(key: str) -> Path:
    from agent.env.resolve.fetch import cache_dir

    return cache_dir() / "locks" / f"{key}.json"


def recall(key: str) -> tuple[Lock, list[str]] | None:
    """The lock kept under ``key`` and the notes its resolution wrote; None when none (or it cannot be used)."""
    try:
        data = json.loads(_path(key).read_text(encoding="utf-8"))
        lock = Lock.model_validate(data["lock"])
        notes = [str(n) for n in data["notes"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for pin in lock.pins:
        url = urlparse(pin.url)
        if url.scheme == "file" and not Path(unquote(url.path)).is_file():
            return None
    return lock, notes


def keep(key: str, lock: Lock, notes: list[str]) -> None:
    path = _path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.stem}.{os.getpid()}.part")
        partial.write_text(json.dumps({"lock": lock.model_dump(mode="json"), "notes": notes}), encoding="utf-8")
        partial.replace(path)
    except OSError:
        pass  # a cache: resolved again next time
