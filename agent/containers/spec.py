"""What a sandbox container looks like: its command, its mounts, its labels and every hardening
option, in one place, made from a SandboxConfig (agent.sandboxes.config).

No pydantic here (nor in agent.containers.engine_api and agent.containers.launch): `codebox run`
creates its container from these before pydantic is imported.
"""

from __future__ import annotations

import math
import os
import re
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent.containers.leftovers import owner_labels
from agent.containers.runtime import RUNTIME_MOUNT, Runtime
from agent.defaults import REPO_MOUNT
from agent.errors import CodeboxError
from agent.sandboxes.config import SandboxConfig, size_bytes
from sandbox import wire
from sandbox.tools.catalog import WRITE_TOOLS

ROLE_TOOLS = "tools"
ROLE_WRITE = "write"

CODE_ROOT = "/opt/codebox"
# The only folder mounted into a container: the in-container package, read-only.
SANDBOX_PACKAGE_DIR = Path(wire.__file__).resolve().parent

def precompile_package() -> None:
    """Write the in-container package's bytecode next to its sources, where it is missing or stale.

    The package is mounted read-only, so a container cannot cache what it compiles: without
    this, every container start compiles the server from source (a third of its boot). The
    server runs on the injected runtime's Python (agent.containers.runtime): a host of the same
    minor compiles it itself; another host has the runtime compile it (it runs on the host too).
    Skipped when the folder is not writable (an install made by pip, which compiled it already).
    """
    if not os.access(SANDBOX_PACKAGE_DIR, os.W_OK):
        return
    from agent.containers.runtime import ensure_runtime

    runtime = ensure_runtime()
    if runtime.version.startswith(f"{sys.version_info[0]}.{sys.version_info[1]}."):
        import compileall  # only here: a process that starts no container never needs it

        compileall.compile_dir(str(SANDBOX_PACKAGE_DIR), quiet=2)
    else:
        runtime.compile_on_host(SANDBOX_PACKAGE_DIR)


# The container's init ends it this long after the lifetime (the server exits at the lifetime).
ALARM_MARGIN_S = 30
# After the host hung up, init waits this long for the server to exit by itself.
HUP_GRACE_S = 2.0


def _safe_name(text: str, limit: int = 40) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "task"
    return cleaned[:limit]


# The tool container runs repository code: never as uid 0. For a root-owned repository it runs as
# nobody:nogroup (the write container, which runs only the patch engine, stays the owner).
UNPRIVILEGED_USER = "65534:65534"


class RepoAccessError(CodeboxError):
    """The repository cannot be served to an unprivileged tool container."""


def _repo_owner(repo: Path) -> str:
    st = repo.stat()
    return f"{st.st_uid}:{st.st_gid}"


def _is_root(user: str) -> bool:
    return user.split(":", 1)[0].strip() in ("0", "root")


def container_user(config: SandboxConfig, repo: Path, role: str) -> str:
    """uid:gid of a container: the repository's owner (or --user), except that the tool
    container never runs as root: then UNPRIVILEGED_USER, which must be able to read the repo."""
    user = config.user or _repo_owner(repo)
    if role == ROLE_WRITE or not _is_root(user):
        return user
    mode = repo.stat().st_mode
    if mode & (stat.S_IROTH | stat.S_IXOTH) != stat.S_IROTH | stat.S_IXOTH:
        raise RepoAccessError(
            f"the repository {repo} is owned by root and not world-readable (mode {stat.S_IMODE(mode):o}); "
            "the sandbox never runs repository code as root and its unprivileged user "
            f"({UNPRIVILEGED_USER}) cannot read it: chmod o+rx it, or own it as a normal user"
        )
    return UNPRIVILEGED_USER


def uses_gvisor(config: SandboxConfig) -> bool:
    """Does the container run under gVisor (runsc, or a runtime registered as runsc-<platform>)?"""
    return config.runtime == "runsc" or config.runtime.startswith("runsc-")


def _command(config: SandboxConfig, role: str, runtime: Runtime | None) -> list[str]:
    """init, then the server it runs in-process: on the injected runtime, started through its own
    loader; ``runtime=None``: on the image's own python3 (bench/ measures the two)."""
    cfg = config
    python = [runtime.inside(runtime.python), "-I", "-S"] if runtime is not None else ["python3"]
    server = [
        *python,
        "-m",
        "sandbox.server",
        "--root",
        REPO_MOUNT,
        "--lifetime-s",
        str(max(1, math.ceil(cfg.lifetime_s))),
        "--output-limit",
        str(cfg.output_limit),
        "--reap-all",
        "--wipe-tmp",
    ]
    if runtime is not None:
        server += ["--runtime", RUNTIME_MOUNT]
    if role == ROLE_WRITE:  # the write container runs nothing but the tools that write
        server += ["--tools", ",".join(sorted(WRITE_TOOLS))]
    if cfg.allow_shell:
        server.append("--allow-shell")
    if uses_gvisor(cfg):
        # Under gVisor a process start is dear (tens of ms on its ptrace platform): a literal
        # search walks the tree in the server's own Python instead; a regex one still starts rg.
        server += ["--search-engine", "literal"]
    alarm_s = max(1, math.ceil(cfg.lifetime_s)) + ALARM_MARGIN_S
    # -S: no site hooks (the image's .pth files, sitecustomize): the stdlib-only init and server
    # do not need them, and they were the larger part of the boot. init runs the server in its
    # forked child, in-process (sandbox/container_init.py), so one interpreter starts, not two.
    starter = runtime.python_argv() if runtime is not None else ["python3", "-S"]
    init = [*starter, "-m", "sandbox.container_init", "--alarm-s", str(alarm_s)]
    return [*init, "--hup-grace-s", f"{HUP_GRACE_S:g}", "--", *server]


def _bind(source: Path | str, target: str, read_only: bool) -> dict[str, Any]:
    return {"Type": "bind", "Source": str(source), "Target": target, "ReadOnly": read_only}


def _mounts(repo: Path, role: str, runtime: Runtime | None) -> list[dict[str, Any]]:
    """HostConfig.Mounts: the runtime and in it the server package, read-only, the repository
    (read-only for the tools; read-write for the write container, with its .git re-mounted
    read-only on top). Without a runtime the package goes to CODE_ROOT, for the image's python3.

    Mounts, not Binds: for a source that is not there (a workspace removed while its warm
    container was still starting), Binds makes the daemon create an empty root-owned folder on
    the host; a bind mount is refused instead. A ':' in a path is not a separator here either."""
    if runtime is not None:
        mounts = [_bind(runtime.folder, RUNTIME_MOUNT, True),
                  _bind(SANDBOX_PACKAGE_DIR, runtime.inside(runtime.package), True)]
    else:
        mounts = [_bind(SANDBOX_PACKAGE_DIR, f"{CODE_ROOT}/sandbox", True)]
    if role == ROLE_WRITE:
        mounts.append(_bind(repo, REPO_MOUNT, False))
        git = repo / ".git"
        if git.exists():
            mounts.append(_bind(git.resolve(), f"{REPO_MOUNT}/.git", True))
    else:
        mounts.append(_bind(repo, REPO_MOUNT, True))
    return mounts


def container_options(
    config: SandboxConfig,
    repo: Path,
    role: str,
    task_id: str,
    now: float,
    extra_labels: dict[str, str] | None = None,
    host_extra: Mapping[str, Any] | None = None,
    runtime: Runtime | None = None,
) -> tuple[str, dict[str, Any]]:
    """The container's name and the body of the Engine API's ``POST /containers/create``.

    ``runtime``: the injected runtime the server runs on (agent.containers.runtime), which every
    sandbox has; None runs it on the image's own python3 (the old way, kept for bench/).

    ``host_extra``: what this engine's containers need in HostConfig beyond the common options
    (agent.containers.engine.Engine.host_config); it never replaces a hardening option."""
    name = f"codebox-{_safe_name(task_id)}-{role}-{os.urandom(3).hex()}"
    # The extra labels first: they never override the labels the reaper relies on.
    labels = {**(extra_labels or {}), **owner_labels(task_id, role, now + config.lifetime_s)}
    memory = size_bytes(config.memory, "memory limit")
    host_config: dict[str, Any] = {
        "Mounts": _mounts(repo, role, runtime),
        # Our own init is PID 1 (agent/containers/sandbox.py says why): not docker's --init.
        "Init": False,
        "AutoRemove": True,
        "NetworkMode": "none",
        "CapDrop": ["ALL"],
        "SecurityOpt": ["no-new-privileges"],
        "ReadonlyRootfs": True,
        "Tmpfs": {"/tmp": f"rw,exec,nosuid,size={config.tmpfs_size}"},
        "PidsLimit": config.pids_limit,
        "Memory": memory,
        "MemorySwap": memory,  # = Memory: no swap
        "NanoCpus": int(config.cpus * 1e9),
        # The responses go to us over the attach stream; the daemon need not keep a copy.
        "LogConfig": {"Type": "none", "Config": {}},
        # The OCI runtime: runc, or runsc (gVisor: a user-space kernel between the code and the host).
        "Runtime": config.runtime,
    }
    host_config = {**(host_extra or {}), **host_config}
    body: dict[str, Any] = {
        "Image": config.image,
        "Cmd": _command(config, role, runtime),
        # Not the image's: a brought image's entrypoint (a docker-entrypoint.sh, tini) would get the
        # server's command as its arguments. An empty list, not null, resets it.
        "Entrypoint": [] if runtime is not None else None,
        "Labels": labels,
        # stdin open, attached, and closed by docker when its one attached client goes (StdinOnce):
        # the host's end of the attach socket is the container's lifeline (sandbox.py).
        "OpenStdin": True,
        "StdinOnce": True,
        "AttachStdin": True,
        "AttachStdout": True,
        "AttachStderr": True,
        "Tty": False,
        "User": container_user(config, repo, role),
        # container=: the systemd convention that says "in a container" (the server's --wipe-tmp checks it).
        # safe.directory: a root-owned repository is used as UNPRIVILEGED_USER, and git calls a repository
        # another user owns "dubious" and stops: a test running git on /repo failed where it passes on the host.
        # No PYTHONPATH nor LD_* for the injected runtime (-I, --library-path): what the tools start
        # inherits this environment and the image's, nothing of codebox's runtime.
        "Env": ["HOME=/tmp", "PYTHONDONTWRITEBYTECODE=1", "container=codebox",
                "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*",
                *([] if runtime is not None else [f"PYTHONPATH={CODE_ROOT}"])],
        # NOT the repo: `python3 -m` puts the working directory first on sys.path, and a
        # repository with its own `sandbox/` package would replace the server (and the init).
        # The injected runtime's -I puts none there; "/" is in every image.
        "WorkingDir": "/" if runtime is not None else CODE_ROOT,
        "Hostname": "codebox",
        "NetworkDisabled": False,
        "HostConfig": host_config,
    }
    return name, body
