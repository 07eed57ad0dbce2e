"""Helpers for the docker tests of tests/agent/containers: a task's containers, by its label."""

from __future__ import annotations

import time
from typing import Any

from agent.containers.engine_api import EngineClient
from agent.containers.leftovers import LABEL_TASK


def task_containers(client: EngineClient, task_id: str) -> list[dict[str, Any]]:
    """Every container (running or not) that carries ``task_id``'s label."""
    return client.containers(all=True, filters={"label": [f"{LABEL_TASK}={task_id}"]})


def wait_no_containers(client: EngineClient, task_id: str, timeout_s: float = 10) -> bool:
    """True once ``task_id`` has no container left (False if some are still there at the deadline)."""
    deadline = time.monotonic() + timeout_s
    while task_containers(client, task_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not task_containers(client, task_id)
