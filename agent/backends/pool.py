"""A warm pool for batch runs (any backend): each queued task's sandbox is started while earlier tasks run.

A sandbox container mounts its task's repository at /repo when it is created; a bind mount
cannot be added to a running container. So the pool keeps no anonymous spare containers: it
knows the batch's queue (``plan``); each ``claim`` (a task begins) starts the tool containers
of the next tasks in it, at most ``size`` started and unclaimed at a time, and a task that
begins claims its own. A task whose sandbox is
not ready yet waits for the start already under way (never starts a second one); a task the
pool does not know, or whose repository or limits differ from the plan, gets None and starts
its sandbox the usual way. Nothing a claim returns was ever used by another task.

``launch`` is `codebox run`'s early start: only the task's container is launched (the backend's
``prestart``: create, attach, start, no pydantic), and the session made at its claim adopts it
and sends the first ping. Each planned task's backend is the one its config names (the registry).

Pool containers are ordinary sandbox containers (owner labels, lifetime, auto-remove, the
same reaping) with one more label, ``codebox.pool``. ``close()`` removes every unclaimed one;
an ``atexit`` hook and the containers' own owner watch cover a process that dies first.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import NamedTuple

from agent.backends.registry import backend_for
from agent.errors import SandboxError
from agent.sandboxes.base import Prestarted, Session
from agent.sandboxes.config import SandboxConfig
from agent.sandboxes.logs import log as _log

LABEL_POOL = "codebox.pool"  # set on containers a WarmPool started ahead of their task
_LABELS = {LABEL_POOL: "warm"}


class PlannedTask(NamedTuple):
    """A queued task, as the pool starts its sandbox: its id, the folder mounted, its settings."""

    task_id: str
    repo: Path
    config: SandboxConfig


class _Warm:
    """One pre-started sandbox and the thread that starts it."""

    def __init__(self, planned: PlannedTask) -> None:
        self.planned = planned
        self.sandbox = backend_for(planned.config).session(planned.repo, planned.config, planned.task_id, _LABELS)
        self.error: str | None = None
        self.thread = threading.Thread(target=self._start, name=f"codebox-warm-{planned.task_id}", daemon=True)

    def begin(self) -> None:
        self.thread.start()

    @property
    def failed(self) -> str | None:
        """Why the start failed, once it is over; None if it did not (or is still under way)."""
        return None if self.thread.is_alive() else self.error

    @property
    def closed(self) -> bool:
        return self.sandbox.closed

    def wait(self, timeout_s: float | None) -> bool:
        self.thread.join(timeout_s)
        return not self.thread.is_alive()

    def close(self) -> None:
        self.sandbox.close()  # a start under way sees the sandbox closed and removes its container

    def hand_over(self, config: SandboxConfig) -> Session:
        return self.sandbox

    def _start(self) -> None:
        try:
            self.sandbox.start()
        except SandboxError as exc:
            self.error = str(exc)
        except Exception as exc:  # never a traceback in a thread: the task starts its own instead
            self.error = f"{type(exc).__name__}: {exc}"
        if self.error is not None and not self.sandbox.closed:
            _log.warning("warm sandbox of %s did not start: %s", self.planned.task_id, self.error)


class _Launched:
    """One task's container launched ahead (no session yet: no pydantic); its claim adopts it."""

    def __init__(self, planned: PlannedTask) -> None:
        self.planned = planned
        self.pending: Prestarted | None = None

    def begin(self) -> None:
        p = self.planned
        self.pending = backend_for(p.config).prestart(p.repo, p.config, p.task_id, _LABELS)

    @property
    def failed(self) -> str | None:
        error = self.pending.error if self.pending is not None else None
        return None if error is None else str(error)

    @property
    def closed(self) -> bool:
        return self.pending is None or self.pending.closed

    def wait(self, timeout_s: float | None) -> bool:
        return self.pending is None or self.pending.wait(timeout_s)

    def close(self) -> None:
        if self.pending is not None:
            self.pending.close()

    def hand_over(self, config: SandboxConfig) -> Session:
        p = self.planned
        return backend_for(config).session(p.repo, config, p.task_id, _LABELS, prestarted=self.pending)


class WarmPool:
    """Start the sandboxes of queued tasks ahead of them; at most ``size`` started and unclaimed."""

    def __init__(self, size: int, plan: Iterable[PlannedTask] = ()) -> None:
        self.size = max(0, size)
        self._queue: list[PlannedTask] = list(plan)
        self._warm: dict[str, _Warm | _Launched] = {}
        self._lock = threading.Lock()
        self._closed = False
        self.hits = 0  # claims answered with a started sandbox
        # Nothing starts before the first claim: the first tasks start their own sandboxes at
        # once, and a batch that runs nothing (cancelled, all resumed) starts no container.

    def prestart(self, planned: PlannedTask) -> None:
        """Start this task's sandbox now (ahead of the queue), if the pool has room."""
        with self._lock:
            self._queue.insert(0, planned)
        self._top_up()

    def launch(self, planned: PlannedTask, sent_timeout_s: float = 0.0) -> bool:
        """Launch this task's container now, without a Sandbox (no pydantic: `codebox run`'s early
        start); its claim makes the Sandbox, which adopts it. Waits up to ``sent_timeout_s`` for
        the create request to leave the process. False: no room (nothing launched)."""
        with self._lock:
            if self._closed or len(self._warm) >= self.size or planned.task_id in self._warm:
                return False
            launched = _Launched(planned)
            self._warm[planned.task_id] = launched
        launched.begin()
        if sent_timeout_s > 0 and launched.pending is not None:
            launched.pending.wait_sent(sent_timeout_s)
        return True

    def claim(self, task_id: str, repo: Path, config: SandboxConfig) -> Session | None:
        """This task's sandbox, started or starting (the caller owns and closes it); None: start one.

        A start still under way is not waited for here: the sandbox's first call waits for it
        (calls and starts share one lock), so the task's first model request overlaps the rest
        of the start. ``sandbox.container_ids`` is empty until its container exists.
        """
        with self._lock:
            warm = self._warm.pop(task_id, None)
            self._queue = [p for p in self._queue if p.task_id != task_id]
        self._top_up()
        if warm is None:
            return None
        matches = warm.planned.repo == Path(repo) and warm.planned.config == config
        failed = warm.failed
        if failed is not None or not matches or warm.closed:
            if failed is not None:
                _log.info("warm sandbox of %s did not start (%s): the task starts its own", task_id, failed)
            warm.close()
            return None
        self.hits += 1
        return warm.hand_over(config)

    def discard(self, task_id: str) -> None:
        """Remove this task's warm sandbox if it was never claimed (the task ended before its claim)."""
        with self._lock:
            warm = self._warm.pop(task_id, None)
            self._queue = [p for p in self._queue if p.task_id != task_id]
        if warm is not None:
            warm.close()
        self._top_up()

    def wait_started(self, task_id: str, timeout_s: float | None = None) -> bool:
        """Wait until this task's sandbox start is over (ready or failed); False when the pool has none."""
        with self._lock:
            warm = self._warm.get(task_id)
        if warm is None:
            return False
        return warm.wait(timeout_s)

    def close(self) -> None:
        """Remove every unclaimed container and start no more. Idempotent."""
        with self._lock:
            self._closed = True
            warm = list(self._warm.values())
            self._warm.clear()
            self._queue.clear()
        for w in warm:
            w.close()  # a start under way sees it closed and removes its container

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _top_up(self) -> None:
        """Start the next queued tasks' sandboxes until ``size`` are started and unclaimed."""
        started: list[_Warm] = []
        with self._lock:
            while not self._closed and self._queue and len(self._warm) < self.size:
                planned = self._queue.pop(0)
                if not planned.repo.is_dir():
                    continue  # the task reports it itself
                warm = _Warm(planned)
                self._warm[planned.task_id] = warm
                started.append(warm)
        for warm in started:
            warm.begin()
