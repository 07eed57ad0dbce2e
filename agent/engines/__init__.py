"""Where batch tasks run: the job/outcome contract (base) and the local thread-pool engine."""

from agent.engines.base import Engine, JobLimits, OutcomeFn, StartFn, TaskJob, TaskOutcome, execute_job
from agent.engines.local import LocalEngine

__all__ = ["Engine", "JobLimits", "LocalEngine", "OutcomeFn", "StartFn", "TaskJob", "TaskOutcome", "execute_job"]
