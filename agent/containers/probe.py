"""Does the test command's program exist in the sandbox image? One short network-less container
answers, the first time an image is used with a program; the answer is cached per image id."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from agent.containers.engine_api import EngineError, connect_engine
from agent.containers.leftovers import owner_labels

PROBE_TIMEOUT_S = 30.0

# Exit 0: found; 3: not found; anything else: the probe itself could not tell.
_PROBE = (
    "import os, shutil, sys\n"
    "p = sys.argv[1]\n"
    "found = os.access(p, os.X_OK) and os.path.isfile(p) if '/' in p else shutil.which(p)\n"
    "sys.exit(0 if found else 3)\n"
)


def _cache_file() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "codebox" / "programs.json"


def _cached() -> dict[str, bool]:
    try:
        data = json.loads(_cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): bool(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _remember(key: str) -> None:
    cache = _cached()
    cache[key] = True
    path = _cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a cache that cannot be written only costs the next run a probe


def program_in_image(image: str, program: str) -> bool | None:
    """True: the image has it (on PATH, or at that absolute path); False: it has not;
    None: cannot tell (no Docker, no such image, no python3 in it): the run goes on and
    the sandbox reports what it finds."""
    try:
        client = connect_engine()
    except Exception:  # Docker down: the runner says so, with its own message
        return None
    try:
        image_id = str(client.inspect_image(image)["Id"])
        key = f"{image_id} {program}"
        if _cached().get(key):
            return True
        body = {
            "Image": image,
            "Cmd": ["python3", "-I", "-c", _PROBE, program],
            "Entrypoint": [],  # not the image's: an empty list, not null, resets it
            "User": "65534:65534",
            # A probe whose process was killed mid-way is a leftover like any other: reaped.
            "Labels": owner_labels("probe", "probe", time.time() + PROBE_TIMEOUT_S),
            "HostConfig": {
                "NetworkMode": "none",
                "CapDrop": ["ALL"],
                "SecurityOpt": ["no-new-privileges"],
                "ReadonlyRootfs": True,
                "Memory": 64 * 2**20,
            },
        }
        container_id = client.create_container(body)
        try:
            client.start(container_id)
            code = client.wait(container_id, timeout_s=PROBE_TIMEOUT_S)
        finally:
            with contextlib.suppress(EngineError):
                client.remove(container_id, force=True)
    except (EngineError, OSError, ValueError, KeyError):
        return None
    if code == 0:
        _remember(key)
        return True
    return False if code == 3 else None
