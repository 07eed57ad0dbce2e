"""Leftover sandbox containers: the reaper that removes containers whose owner process is dead or whose
lifetime has passed (their owner labels: agent.sandboxes.owner), and the removal that waits until one is gone."""

from __future__ import annotations

import math
import os
import socket
import threading
import time
from collections.abc import Callable

from agent.containers.engine_api import Conflict, EngineClient, EngineError, NotFound, connect_engine
from agent.errors import CodeboxError, SandboxError
from agent.sandboxes.logs import log as _log
from agent.sandboxes.owner import (  # the labels' one home; named here too, for this driver's modules
    LABEL_EXPIRES,
    LABEL_HOST,
    LABEL_OWNER,
    LABEL_OWNER_START,
    LABEL_ROLE,
    LABEL_TASK,
    owner_labels,
    process_start_ticks,
)

__all__ = ["LABEL_EXPIRES", "LABEL_OWNER", "LABEL_ROLE", "LABEL_TASK", "owner_labels", "reap_leftovers",
           "remove_container"]

# reap_leftovers leaves an expired container alone for this long (its server exits by itself first).
EXPIRY_GRACE_S = 5.0
# A long-lived process (a batch server) reaps again after this long; a short one reaps once.
REAP_INTERVAL_S = 600.0

_REAP_LOCK = threading.Lock()
_next_reap_at: dict[str, float] = {}  # per engine: time.monotonic() of its next background reap


def _pid_alive(pid: int, start_ticks: str | None) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    except OSError:
        return False
    if start_ticks:
        now = process_start_ticks(pid)
        if now is not None and now != start_ticks:
            return False  # the pid was reused by another process
    return True


def remove_container(client: EngineClient, container_id: str) -> None:
    """Kill and remove a container (returns when it is gone); one already gone (or going) is fine."""
    try:
        client.remove(container_id, force=True)
    except NotFound:
        pass
    except Conflict:  # 409: "removal of container ... is already in progress" (auto_remove raced us)
        _wait_gone(client, container_id)
    except EngineError as exc:
        if "state improper" in str(exc):  # Podman: it stopped meanwhile, and auto-remove takes it
            _wait_gone(client, container_id)
            return
        # Docker leaves a removal that failed midway ("device or resource busy" unmounting, seen on
        # fuse-overlayfs under load) as a container stuck in "Removal In Progress"; a second try removes it.
        time.sleep(REMOVAL_RETRY_PAUSE_S)
        try:
            client.remove(container_id, force=True)
        except NotFound:
            pass
        except EngineError as again:
            _log.warning("could not remove sandbox container %s: %s", container_id[:12], again)


REMOVAL_WAIT_S = 30.0
REMOVAL_RETRY_PAUSE_S = 0.5


def _wait_gone(client: EngineClient, container_id: str, timeout_s: float = REMOVAL_WAIT_S) -> None:
    """Until the removal someone else started is done: the caller was promised the container is
    gone when remove_container returns (a run on a loaded machine returned while its container
    was still being removed). An answer other than "no such container" ends the wait."""
    deadline = time.monotonic() + timeout_s
    pause = 0.005
    while time.monotonic() < deadline:
        try:
            client.inspect_container(container_id)
        except NotFound:
            return
        except EngineError:
            return
        time.sleep(pause)
        pause = min(pause * 2, 0.2)
    _log.warning("sandbox container %s is still being removed after %.0f s", container_id[:12], timeout_s)


def reap_leftovers(
    client: EngineClient | None = None,
    log: Callable[[str], None] = _log.info,
    *,
    dry_run: bool = False,
    owner: int | None = None,
) -> list[str]:
    """Remove codebox containers left by dead runs; return their ids.

    A container is removed when its owner process (labels codebox.owner,
    codebox.owner_start, codebox.host) is dead on this host, or when its
    lifetime (label codebox.expires) has passed, whoever owns it.
    ``dry_run``: remove nothing; say what would be removed and what is kept, and why (the ids
    returned are those that would go). ``owner``: only the containers of that process on this host.
    """
    client = client or connect_engine(SandboxError)  # `codebox gc` says it in one line
    hostname = socket.gethostname()
    now = time.time()
    removed: list[str] = []
    try:
        containers = client.containers(all=True, filters={"label": [LABEL_TASK]})
    except EngineError as exc:
        log(f"cannot list sandbox containers to reap: {exc}")
        return removed
    for info in containers:
        labels: dict[str, str] = info.get("Labels") or {}
        if owner is not None and (labels.get(LABEL_OWNER) != str(owner) or labels.get(LABEL_HOST) != hostname):
            continue
        cid: str = info["Id"]
        name = (info.get("Names") or [cid[:12]])[0].lstrip("/")
        reason, kept = _why_leftover(labels, hostname, now)
        if reason is None:
            if dry_run:
                log(f"would keep sandbox container {name}: {kept}")
            continue
        if dry_run:
            log(f"would remove leftover sandbox container {name}: {reason}")
        else:
            log(f"removing leftover sandbox container {name}: {reason}")
            remove_container(client, cid)
        removed.append(cid)
    return removed


def _why_leftover(labels: dict[str, str], hostname: str, now: float) -> tuple[str | None, str]:
    """Why a container is a leftover (None: it is not), and else why it is kept."""
    try:
        expires = float(labels.get(LABEL_EXPIRES, "inf"))
    except ValueError:
        expires = math.inf
    if now > expires + EXPIRY_GRACE_S:
        return "its lifetime has passed", ""
    until = "" if math.isinf(expires) else f"; its lifetime ends in {max(0, int(expires - now))} s"
    owner = labels.get(LABEL_OWNER)
    if labels.get(LABEL_HOST) != hostname:
        return None, f"its owner {owner} runs on another host ({labels.get(LABEL_HOST)}){until}"
    try:
        pid = int(labels.get(LABEL_OWNER, ""))
    except ValueError:
        pid = -1
    if pid <= 0 or not _pid_alive(pid, labels.get(LABEL_OWNER_START)):
        return f"its owner process {owner} is gone", ""
    return None, f"its owner process {owner} is running{until}"


def reap_in_background(
    engine: str,
    connect: Callable[[type[CodeboxError]], EngineClient],
    log: Callable[[str], None] = _log.info,
    also: Callable[[], None] | None = None,
) -> threading.Thread | None:
    """Reap an engine's leftovers in a daemon thread, at most once per REAP_INTERVAL_S in this process.

    No container start waits for it: reaping is housekeeping (a leftover holds memory, not a
    lock), so the first start of a process runs it alongside, and later starts skip it.
    ``also`` runs in the same thread, once per process (other housekeeping). Returns the
    thread, or None when a reap of this ``engine`` already ran (or runs) recently.
    """
    with _REAP_LOCK:
        now = time.monotonic()
        if engine in _next_reap_at and now < _next_reap_at[engine]:
            return None
        first = not _next_reap_at
        _next_reap_at[engine] = now + REAP_INTERVAL_S
    args = (connect, log, also if first else None)
    thread = threading.Thread(target=_housekeeping, args=args, name="codebox-reap", daemon=True)
    thread.start()
    return thread


def _housekeeping(
    connect: Callable[[type[CodeboxError]], EngineClient], log: Callable[[str], None], also: Callable[[], None] | None
) -> None:
    if also is not None:
        try:
            also()
        except Exception as exc:  # housekeeping never fails a run
            log(f"background housekeeping failed: {type(exc).__name__}: {exc}")
    try:
        client = connect(CodeboxError)
    except CodeboxError:
        return  # the start itself reports a daemon that does not answer
    try:
        reap_leftovers(client, log=log)
    except Exception as exc:
        log(f"reaping leftover containers failed: {type(exc).__name__}: {exc}")
