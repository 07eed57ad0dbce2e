"""The projects the user trusts: a folder and the digest of its codebox settings, in the user's config folder.

`codebox trust PATH` records (resolved folder, digest of its settings as written); a project
counts as trusted only while both match, so an edit to its settings needs trusting again (as
direnv's `allow`). The record is trusted.json next to the user's codebox.toml, written whole
(a temporary file renamed over it) and readable by the user alone.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, NamedTuple

from agent.errors import CodeboxError
from agent.settings.environment import config_dir


class TrustError(CodeboxError):
    """The record of trusted projects cannot be read; the message names the file."""


class TrustEntry(NamedTuple):
    path: str  # the folder, resolved
    digest: str  # agent.settings.sources.project_digest of its settings when trusted
    trusted_at: float  # seconds since the epoch
    keys: list[str]  # the keys it set then (for `codebox trust --list`)


def trust_file() -> Path:
    return config_dir() / "trusted.json"


def entries() -> list[TrustEntry]:
    """Every trusted project; TrustError naming the file when it is not codebox's."""
    path = trust_file()
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise TrustError(f"{path}: cannot read the trusted projects: {exc}") from None
    items = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise TrustError(f"{path}: not a list of trusted projects (a 'projects' list)")
    found = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("path"), str) and isinstance(item.get("digest"), str):
            keys = item.get("keys")
            found.append(TrustEntry(item["path"], item["digest"], float(item.get("trusted_at") or 0),
                                    [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []))
    return found


def trusted_digests() -> dict[str, str]:
    """Folder -> the digest of its settings when the user trusted them."""
    return {entry.path: entry.digest for entry in entries()}


def _write(items: list[TrustEntry]) -> None:
    import tempfile  # here: reading the record (every run in a project) does without it

    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"projects": [entry._asdict() for entry in items]}
    fd, tmp = tempfile.mkstemp(prefix=".trusted-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(body, f, indent=2)
            f.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def record(root: Path, digest: str, keys: list[str]) -> None:
    """Trust the folder's settings as they are now (replacing an earlier record of it)."""
    items = [entry for entry in entries() if entry.path != str(root)]
    items.append(TrustEntry(str(root), digest, time.time(), keys))
    _write(items)


def revoke(root: Path) -> bool:
    """Stop trusting the folder; False when it was not trusted."""
    items = entries()
    kept = [entry for entry in items if entry.path != str(root)]
    if len(kept) == len(items):
        return False
    _write(kept)
    return True
