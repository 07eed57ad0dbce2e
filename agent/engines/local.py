"""The local engine: a thread pool on this machine, each job in its own workspace and sandbox."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from agent.backends.pool import PlannedTask, WarmPool
from agent.cancel import CancelToken
from agent.engines.base import AdmitFn, OutcomeFn, PreparedJob, StartFn, TaskJob, TaskOutcome, execute_job
from agent.task.events import EventSink
from agent.task.workspace import create_workspace

_log = logging.getLogger("codebox.batch")

SinkFactory = Callable[[TaskJob], EventSink | None]


class LocalEngine:
    """``jobs`` tasks at once in threads; ``live_sink`` may give each job a sink that sees its
    events as they happen (the driver writes events.jsonl live with it; the sink is closed
    when the job ends).

    With ``warm`` (the default), while tasks run the next ``jobs`` queued ones are prepared:
    workspace made, environment chosen, sandbox started in a WarmPool. A task that starts
    finds them ready, and its first tool call does not wait for a container start.
    """

    def __init__(self, jobs: int = 2, live_sink: SinkFactory | None = None, warm: bool = True,
                 env_log: Callable[[str], None] | None = None) -> None:
        self.jobs = max(1, jobs)
        self.live_sink = live_sink
        self.warm = warm
        self.env_log = env_log  # where environment builds say what they do (default: stderr)

    def run(
        self,
        jobs: Sequence[TaskJob],
        on_outcome: OutcomeFn,
        cancel: CancelToken,
        on_start: StartFn | None = None,
        admit: AdmitFn | None = None,
    ) -> None:
        lock = threading.Lock()  # on_outcome is called by one thread at a time
        ahead = _Ahead(jobs, self.jobs, cancel, self.env_log) if self.warm else None

        def one(index: int, job: TaskJob) -> None:
            if cancel.cancelled or (admit is not None and not admit(job)):
                return  # never started: a later run picks it up
            if on_start is not None:
                on_start(job)
            prepared = None
            if ahead is not None:
                prepared = ahead.take(index)
                ahead.prepare(index + self.jobs)  # the job that starts when a slot frees up
            try:
                outcome = self._execute(job, cancel, prepared)
            finally:
                if prepared is not None and prepared.warm is not None:
                    prepared.warm.discard(job.task.id)  # a task that ended before its claim
            with lock:
                on_outcome(outcome)

        try:
            with ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="codebox-task") as pool:
                futures = [pool.submit(one, index, job) for index, job in enumerate(jobs)]
                for future in futures:
                    while not future.done():
                        time.sleep(0.05)  # keeps the main thread free for signal handlers
                    future.result()  # an on_outcome failure is the driver's bug: let it show
        finally:
            if ahead is not None:
                ahead.close()

    def _execute(self, job: TaskJob, cancel: CancelToken, prepared: PreparedJob | None = None) -> TaskOutcome:
        sink: EventSink | None = None
        try:
            sink = self.live_sink(job) if self.live_sink else None
            return execute_job(job, Path(job.task.repo), cancel, sink, prepared, env_log=self.env_log)
        except Exception as exc:  # execute_job returns outcomes; this is a sink that failed
            from agent.task.runner import failed_report

            if prepared is not None and not job.keep_workspace:
                prepared.workspace.remove()  # execute_job may never have been given it
            report = failed_report(job.task, job.model, "internal_error", f"{type(exc).__name__}: {exc}", _NullSink())
            return TaskOutcome(task_id=job.task.id, report=report, attempt=job.attempt)
        finally:
            if sink is not None:
                sink.close()


class _Ahead:
    """Prepares queued jobs, one at a time in a background thread, while earlier jobs run.

    ``prepare(i)`` queues job i; ``take(i)`` (job i starts) waits for its preparation and
    hands it over (None: never prepared, or its workspace could not be made: the job does
    everything itself, and reports the problem itself). A step that fails only stops the
    preparation there: a job whose environment could not be chosen gets its workspace and
    no sandbox. ``close()`` removes whatever no job took: workspaces and warm containers.
    """

    def __init__(self, jobs: Sequence[TaskJob], depth: int, cancel: CancelToken,
                 env_log: Callable[[str], None] | None = None) -> None:
        self.jobs = jobs
        self.cancel = cancel
        self.env_log = env_log
        # Room for `depth` prepared jobs plus `depth` started ones that have not claimed yet.
        self.pool = WarmPool(2 * depth)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="codebox-prepare")
        self._queued: dict[int, Future[PreparedJob | None]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def prepare(self, index: int) -> None:
        with self._lock:
            if self._closed or self.cancel.cancelled or index >= len(self.jobs) or index in self._queued:
                return
            self._queued[index] = self._worker.submit(self._prepare, self.jobs[index])

    def take(self, index: int) -> PreparedJob | None:
        with self._lock:
            future = self._queued.pop(index, None)
        # Waiting for a preparation under way is shorter than making a second workspace and sandbox.
        return future.result() if future is not None else None

    def close(self) -> None:
        """Stop preparing; remove every workspace and warm container no job took. Idempotent."""
        with self._lock:
            self._closed = True
            left = list(self._queued.values())
            self._queued.clear()
        self._worker.shutdown(wait=True, cancel_futures=True)  # a preparation under way finishes first
        for future in left:
            prepared = None if future.cancelled() else future.result()
            if prepared is not None:
                prepared.workspace.remove()
        self.pool.close()

    def _prepare(self, job: TaskJob) -> PreparedJob | None:
        if self.cancel.cancelled:
            return None
        task = job.task
        root = Path(job.workspace_root) if job.workspace_root else None
        try:
            workspace = create_workspace(Path(task.repo), task.base_commit, root)
        except Exception as exc:  # WorkspaceError, OSError: the job tries again and reports it
            _log.info("task %s: no workspace ahead of time (%s)", task.id, exc)
            return None
        from agent.task.runner import choose_task_env, env_progress, task_sandbox_config

        try:  # as run_task does it: the task's image, then its environment on the workspace
            repo = workspace.path.resolve()
            config = task_sandbox_config(task, job.sandbox)
            env = choose_task_env(task, repo, config, self.env_log or env_progress, self.cancel)
            if env is not None:
                config = config.replace(image=env.run_image)
            self.pool.prestart(PlannedTask(task.id, repo, config))
        except Exception as exc:  # CodeboxError and the rest: the task chooses its env itself and reports it
            _log.info("task %s: no sandbox ahead of time (%s)", task.id, exc)
            return PreparedJob(workspace)
        return PreparedJob(workspace, env, self.pool, env_chosen=True)


class _NullSink:
    def emit(self, event: object) -> None:
        pass

    def close(self) -> None:
        pass
