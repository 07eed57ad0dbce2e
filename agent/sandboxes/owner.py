"""Who owns a codebox container, as labels on it: this process (pid, its start time, the host), its task and
role, and when it expires. Every container codebox makes, on any backend, carries them; a backend's reaper
(``Backend.reap``, `codebox gc`) reads them back."""

from __future__ import annotations

import os
import socket
from pathlib import Path

LABEL_TASK = "codebox.task"
LABEL_OWNER = "codebox.owner"
LABEL_OWNER_START = "codebox.owner_start"
LABEL_HOST = "codebox.host"
LABEL_ROLE = "codebox.role"
LABEL_EXPIRES = "codebox.expires"


def process_start_ticks(pid: int) -> str | None:
    """The start time of a process (clock ticks since boot), to tell a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def owner_labels(task: str, role: str, expires_at: float) -> dict[str, str]:
    """The labels the reaper reads: this process owns the container, which ends by ``expires_at``."""
    return {
        LABEL_TASK: task,
        LABEL_OWNER: str(os.getpid()),
        LABEL_OWNER_START: process_start_ticks(os.getpid()) or "",
        LABEL_HOST: socket.gethostname(),
        LABEL_ROLE: role,
        LABEL_EXPIRES: str(int(expires_at)),
    }
