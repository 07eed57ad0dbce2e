"""Can the sandbox image serve this task? Checked before the first model request, in one line:

- its OS and architecture are this machine's (the engine's inspect: no container);
- one short network-less container on codebox's injected runtime (agent.containers.runtime: the image
  needs no python3) mounts an empty folder at /repo as a sandbox mounts the repository, and looks
  for the test command's program (on PATH, or at its absolute path) and, with --allow-shell, /bin/sh.

A good answer is cached per image id, program and shell; "cannot tell" (no Docker, an image the
daemon lacks) lets the run go on, and the sandbox reports what it finds.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path

from agent.containers.engine_api import EngineClient, EngineError, connect_engine
from agent.containers.leftovers import owner_labels
from agent.defaults import REPO_MOUNT
from agent.escape import one_line

PROBE_TIMEOUT_S = 30.0
FOUND, NO_PROGRAM, NO_SHELL, NO_REPO = 0, 3, 4, 5

# Runs on the injected runtime (python -I -S): the image's own python3, if any, is never used.
_PROBE = (
    "import os, sys\n"
    "program, shell, repo = sys.argv[1], sys.argv[2] == '1', sys.argv[3]\n"
    "if not (os.path.isdir(repo) and os.access(repo, os.R_OK | os.X_OK)): sys.exit(5)\n"
    "if shell and not os.access('/bin/sh', os.X_OK): sys.exit(4)\n"
    "def ok(p): return os.path.isfile(p) and os.access(p, os.X_OK)\n"
    "folders = os.environ.get('PATH', '/usr/local/bin:/usr/bin:/bin').split(':')\n"
    "found = not program or (ok(program) if '/' in program else any(ok(os.path.join(d, program)) for d in folders))\n"
    "sys.exit(0 if found else 3)\n"
)
# The engines' names of a machine (uname -m) and of an image's architecture (OCI's GOARCH names).
_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x",
         "i686": "386", "riscv64": "riscv64"}


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


def platform_problem(image: str, info: dict[str, object], machine: str) -> str | None:
    """Why an image of this OS / architecture cannot run on a machine ``machine`` (uname -m), or None."""
    os_name = str(info.get("Os") or "linux")
    arch = str(info.get("Architecture") or "")
    want = _ARCH.get(machine, machine)
    if os_name == "linux" and (not arch or arch == want):
        return None
    return (f"the image {one_line(image)} is built for {os_name}/{arch or '?'}, and this machine runs "
            f"linux/{want}: codebox's sandbox cannot run it (pass --image with one built for linux/{want})")


def _run_probe(client: EngineClient, image: str, program: str, shell: bool) -> tuple[int | None, str]:
    """(exit code, or None when the engine refused the container; the engine's words)."""
    from agent.containers.runtime import RUNTIME_MOUNT, ensure_runtime

    runtime = ensure_runtime(client)
    with tempfile.TemporaryDirectory(prefix="codebox-probe-") as empty:
        os.chmod(empty, 0o755)
        body = {
            "Image": image,
            "Cmd": [*runtime.python_argv(), "-c", _PROBE, program, "1" if shell else "0", REPO_MOUNT],
            "Entrypoint": [],  # not the image's: an empty list, not null, resets it
            "User": "65534:65534",
            "WorkingDir": "/",
            "Env": [],
            # A probe whose process was killed mid-way is a leftover like any other: reaped.
            "Labels": owner_labels("probe", "probe", time.time() + PROBE_TIMEOUT_S),
            "HostConfig": {
                "NetworkMode": "none",
                "CapDrop": ["ALL"],
                "SecurityOpt": ["no-new-privileges"],
                "ReadonlyRootfs": True,
                "Memory": 128 * 2**20,
                "Mounts": [
                    {"Type": "bind", "Source": str(runtime.folder), "Target": RUNTIME_MOUNT, "ReadOnly": True},
                    {"Type": "bind", "Source": empty, "Target": REPO_MOUNT, "ReadOnly": True},
                ],
            },
        }
        container_id = client.create_container(body)
        try:
            try:
                client.start(container_id)
            except EngineError as exc:  # the mounts: a /repo that is a file, a link out ...
                return None, str(exc)
            return client.wait(container_id, timeout_s=PROBE_TIMEOUT_S), ""
        finally:
            with contextlib.suppress(EngineError):
                client.remove(container_id, force=True)


def image_problem(image: str, program: str = "", shell: bool = False, script: str = "") -> str | None:
    """What the image lacks to serve a task whose test command starts ``program`` (none: ""), in one
    line; None when it has it all, or when this cannot be told here. ``script``: the repository's
    script whose ``#!`` line names ``program``."""
    try:
        client = connect_engine()
    except Exception:  # Docker down: the runner says so, with its own message
        return None
    try:
        info = client.inspect_image(image)
        key = f"{info['Id']} {program} {int(shell)}"
        if _cached().get(key):
            return None
        problem = platform_problem(image, info, str(client.info().get("Architecture") or os.uname().machine))
        if problem:
            return problem
        code, refused = _run_probe(client, image, program, shell)
    except Exception:  # the image is not there, the engine failed: the sandbox's start says it
        return None
    if code == FOUND:
        _remember(key)
        return None
    if code is None or code == NO_REPO:
        detail = f" (the engine: {one_line(refused)[-200:]})" if refused else ""
        if "not a directory" in refused:
            detail = " (it is a file in the image)"
        return (f"the image {one_line(image)} cannot hold the repository at {REPO_MOUNT}{detail}: "
                f"{REPO_MOUNT} must be a folder, or absent")
    if code == NO_SHELL:
        return (f"the image {one_line(image)} has no /bin/sh, which --allow-shell needs "
                "(drop the flag, or pass another --image)")
    if code == NO_PROGRAM:
        where = "at that path" if program.startswith("/") else "on PATH"
        if script:
            return (f"--test-cmd: {one_line(repr(script))} starts {one_line(repr(program))} (its #! line), "
                    f"which is not {where} in the image {one_line(image)} (pass --image with one that has it)")
        return (f"--test-cmd: the program {one_line(repr(program))} is not {where} in the image {one_line(image)} "
                "(a typo? or pass --image with one that has it)")
    return None


def program_in_image(image: str, program: str) -> bool | None:
    """True: the image has it (on PATH, or at that absolute path); False: it has not; None: cannot tell."""
    problem = image_problem(image, program)
    if problem is None:
        return True if _known(image, program) else None
    return False if "--test-cmd" in problem else None


def _known(image: str, program: str) -> bool:
    try:
        client = connect_engine()
        return bool(_cached().get(f"{client.inspect_image(image)['Id']} {program} 0"))
    except Exception:
        return False
