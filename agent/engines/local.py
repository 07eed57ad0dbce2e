"""The local engine: a thread pool on this machine, each job in its own workspace and sandbox."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agent.engines.base import AdmitFn, OutcomeFn, StartFn, TaskJob, TaskOutcome, execute_job
from agent.events import EventSink
from agent.loop import CancelToken
from agent.runner import failed_report

SinkFactory = Callable[[TaskJob], EventSink | None]


class LocalEngine:
    """``jobs`` tasks at once in threads; ``live_sink`` may give each job a sink that sees its
    events as they happen (the driver writes events.jsonl live with it; the sink is closed
    when the job ends)."""

    def __init__(self, jobs: int = 2, live_sink: SinkFactory | None = None) -> None:
        self.jobs = max(1, jobs)
        self.live_sink = live_sink

    def run(
        self,
        jobs: Sequence[TaskJob],
        on_outcome: OutcomeFn,
        cancel: CancelToken,
        on_start: StartFn | None = None,
        admit: AdmitFn | None = None,
    ) -> None:
        lock = threading.Lock()  # on_outcome is called by one thread at a time

        def one(job: TaskJob) -> None:
            if cancel.cancelled or (admit is not None and not admit(job)):
                return  # never started: a later run picks it up
            if on_start is not None:
                on_start(job)
            outcome = self._execute(job, cancel)
            with lock:
                on_outcome(outcome)

        with ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="codebox-task") as pool:
            futures = [pool.submit(one, job) for job in jobs]
            for future in futures:
                while not future.done():
                    time.sleep(0.05)  # keeps the main thread free for signal handlers
                future.result()  # an on_outcome failure is the driver's bug: let it show

    def _execute(self, job: TaskJob, cancel: CancelToken) -> TaskOutcome:
        sink: EventSink | None = None
        try:
            sink = self.live_sink(job) if self.live_sink else None
            return execute_job(job, Path(job.task.repo), cancel, sink)
        except Exception as exc:  # execute_job returns outcomes; this is a sink that failed
            report = failed_report(job.task, job.model, "internal_error", f"{type(exc).__name__}: {exc}", _NullSink())
            return TaskOutcome(task_id=job.task.id, report=report, attempt=job.attempt)
        finally:
            if sink is not None:
                sink.close()


class _NullSink:
    def emit(self, event: object) -> None:
        pass

    def close(self) -> None:
        pass
