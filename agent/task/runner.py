"""One task from start to report: sandbox up, agent loop, sandbox down (always)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.backends.registry import backend_for
from agent.cancel import CancelToken
from agent.env.cancel import EnvCancelled
from agent.errors import CodeboxError, SandboxError
from agent.model.base import ModelClient, ModelError
from agent.model.factory import build_model
from agent.protocol import STATUS_FOR_REASON, AgentEvent, EnvInfo, Report, StopReason, TaskSpec
from agent.sandboxes.base import Session
from agent.sandboxes.config import SandboxConfig
from agent.sandboxes.result import ToolResult
from agent.task.events import EventSink
from agent.task.found_tests import ChosenTests, find_tests, given
from agent.task.host_run import host_run_globs
from agent.task.loop import CodingAgent, Limits
from agent.task.policy import ApproveOncePolicy, AskFn, Policy, ReadOnlyPolicy, WorkspaceWritePolicy
from agent.task.task_env import choose_task_env, env_progress, task_sandbox_config
from agent.task.workspace import Workspace, WorkspaceError, create_workspace, with_patch
from agent.tools import ToolContext, ToolRegistry

if TYPE_CHECKING:
    from agent.backends.pool import WarmPool


def build_policy(task: TaskSpec, ask: AskFn | None = None) -> Policy:
    if task.policy == "read-only":
        return ReadOnlyPolicy()
    rules = WorkspaceWritePolicy(allow=task.allow or ["**"], deny=task.deny, protected=host_run_globs(Path(task.repo)))
    if task.policy == "workspace-write":
        return rules
    if ask is None:
        raise ValueError("the 'ask' policy needs a terminal to ask on (or use --policy workspace-write)")
    return ApproveOncePolicy(ask, rules)


def failed_report(task: TaskSpec, model_name: str, reason: StopReason, error: str, sink: EventSink) -> Report:
    """A run that could not start: still a report, and still a turn.start / turn.end pair."""
    now = time.time()
    report = Report(
        task_id=task.id,
        goal=task.goal,
        repo=task.repo,
        model=model_name,
        status=STATUS_FOR_REASON[reason],
        stop_reason=reason,
        error=error,
        started_at=now,
        duration_s=0.0,
    )
    start = {"goal": task.goal, "repo": task.repo, "model": model_name, "policy": task.policy}
    end = {"reason": reason, "status": report.status, "report": report.model_dump(mode="json")}
    sink.emit(AgentEvent(type="turn.start", task_id=task.id, seq=1, step=0, data=start))
    sink.emit(AgentEvent(type="turn.end", task_id=task.id, seq=2, step=0, data=end))
    return report


def run_spec(
    task: TaskSpec,
    model_spec: str | None,
    model_options: dict[str, Any],
    sink: EventSink,
    **options: Any,
) -> Report:
    """The one entry point of `codebox run` and of every batch task: build the model, run the
    task, and always return a report (a model that cannot be built is a model_error, a bug in
    codebox an internal_error). ``options`` are run_task's keyword arguments."""
    if not model_spec:
        error = "no model given: pass --model NAME (or scripted:FILE), or set CODEBOX_MODEL"
        return failed_report(task, "?", "model_error", error, sink)
    try:
        model = build_model(model_spec, **model_options)
    except ModelError as exc:
        return failed_report(task, model_spec, "model_error", str(exc), sink)
    try:
        return run_task(task, model, sink, **options)
    except Exception as exc:  # one task's crash is its own report, never a traceback
        return failed_report(task, model.name, "internal_error", f"{type(exc).__name__}: {exc}", sink)


class ChooseEnv:
    """run_task's ``prepared_env`` when the caller chose nothing: the environment is chosen there.
    (None is a choice: no environment, the image as it is.)"""


CHOOSE_ENV = ChooseEnv()


def run_task(
    task: TaskSpec,
    model: ModelClient,
    sink: EventSink,
    *,
    sandbox_config: SandboxConfig | None = None,
    cancel: CancelToken | None = None,
    limits: Limits | None = None,
    ask: AskFn | None = None,
    env_log: Callable[[str], None] | None = None,
    prepared_env: EnvInfo | ChooseEnv | None = CHOOSE_ENV,
    warm: WarmPool | None = None,
    repo_name: str | None = None,
    look_for_tests: Callable[[ChosenTests], None] | None = None,
) -> Report:
    """Run one task and always return a report; the sandbox is removed whatever happens.

    ``prepared_env``: the environment the caller already chose, None included (by default ``task.env``
    is chosen here). ``repo_name``: the repository as the user named it, when ``task.repo`` is a
    workspace made from it (what an environment built here is logged and labelled with).
    ``warm``: a pool (batch, or `codebox run`'s early start) that may hold this task's sandbox.
    ``look_for_tests``: a task that names no test command gets the one its repository shows (once the
    environment is chosen: its lock says whether the runner is installed); this is told what was found.
    """
    cancel = cancel or CancelToken()
    try:
        policy = build_policy(task, ask)
    except ValueError as exc:
        return failed_report(task, model.name, "invalid_task", str(exc), sink)
    repo = Path(task.repo).expanduser().resolve()
    if not repo.is_dir():
        return failed_report(task, model.name, "invalid_task", f"the repository {task.repo} is not a directory", sink)
    config = task_sandbox_config(task, sandbox_config)
    if isinstance(prepared_env, EnvInfo) and prepared_env.base_image != config.image:
        # A language's own toolchain image (Rust's, Go's, Node's), not one made on the sandbox image: the
        # preflight checks the image that will run.
        config = config.replace(image=prepared_env.run_image)
    if cancel.cancelled:
        return failed_report(task, model.name, "cancelled", cancel.reason or "cancelled before start", sink)
    backend = backend_for(config)
    try:  # fail fast, before any model token is spent: the engine, the runtime, the image
        backend.preflight(config)
    except SandboxError as exc:
        return _with_sandbox(failed_report(task, model.name, "sandbox_error", str(exc), sink), config)
    try:  # the dependency environment, built or reused before the first tool call
        env = (choose_task_env(task, repo, config, env_log or env_progress, cancel, repo_name)
               if isinstance(prepared_env, ChooseEnv) else prepared_env)
    except EnvCancelled as exc:  # nothing of the build is left; the task runs again next time
        return failed_report(task, model.name, "cancelled", cancel.reason or str(exc), sink)
    except CodeboxError as exc:
        return failed_report(task, model.name, "sandbox_error", f"environment: {exc}", sink)
    if env is not None:
        config = config.replace(image=env.run_image)
    # A warm sandbox fits only if it has this repo and this config (the env's image included).
    claimed = warm.claim(task.id, repo, config) if warm is not None else None
    sandbox = claimed or backend.session(repo, config, task_id=task.id)
    # The container starts (~0.35 s) while the model thinks about its first reply.
    early = _EarlyStart(sandbox)
    try:
        tests = given(task.test_cmd)
        if look_for_tests is not None and not task.test_cmd:
            tests = find_tests(repo, env)
            look_for_tests(tests)
        limits = limits or Limits()
        ctx = ToolContext(sandbox=early, repo=repo, test_cmd=tests.command, test_source=tests.source,
                          no_tests_message=tests.no_tests_message(), test_in_copy=task.test_in_copy,
                          default_test_timeout_s=limits.test_timeout_s, max_test_timeout_s=limits.max_test_timeout_s)
        agent = CodingAgent(model, ToolRegistry(), policy, sink, ctx, limits=limits)
        return _with_sandbox(_with_env(agent.run(task, cancel), env, task), config)
    finally:
        # Closing first is safe: a start still under way sees the sandbox closed and removes
        # its container itself; so a slow start never holds up a finished or cancelled run.
        sandbox.close()
        early.thread.join(timeout=10)


def _with_sandbox(report: Report, config: SandboxConfig) -> Report:
    report.backend, report.runtime = config.backend, config.runtime
    return report


def _with_env(report: Report, env: EnvInfo | None, task: TaskSpec | None = None) -> Report:
    if env is not None:
        report.env = env
    if task is not None:
        report.python = task.python_choice
    return report


def run_task_isolated(
    task: TaskSpec,
    model_spec: str | None,
    model_options: dict[str, Any],
    sink: EventSink,
    *,
    source: Path | None = None,
    keep_workspace: bool = False,
    workspace_root: Path | None = None,
    workspace: Workspace | None = None,
    **options: Any,
) -> tuple[Report, str, Path | None]:
    """run_spec on a private working copy of ``source`` (default task.repo) at task.base_commit.

    Returns the report (with base commit and patch summary), the patch, and the workspace's
    path when it is kept. The user's repository is never written. ``workspace``: one made
    for this task ahead of time (batch); it is used instead of a new one, and removed alike.
    """
    if workspace is None:
        try:
            workspace = create_workspace(source or Path(task.repo), task.base_commit, workspace_root)
        except (WorkspaceError, OSError) as exc:
            return failed_report(task, model_spec or "?", "invalid_task", f"no workspace: {exc}", sink), "", None
    try:
        local = task.model_copy(update={"repo": str(workspace.path)})
        report = run_spec(local, model_spec, model_options, sink, repo_name=task.repo, **options)
        report, patch = with_patch(report, workspace, task.repo)
    finally:
        warm: WarmPool | None = options.get("warm")
        if warm is not None:
            warm.discard(task.id)  # a task that ended before its claim: its container goes before its workspace
        if not keep_workspace:
            workspace.remove()
    return report, patch, workspace.path if keep_workspace else None


class _EarlyStart:
    """The sandbox, started in the background; the first call waits for the start.

    If the start failed, every call raises SandboxError with the start's own message (the
    run ends with sandbox_error): no second start, no retries the model would see.
    """

    def __init__(self, sandbox: Session) -> None:
        self.sandbox = sandbox
        self.error: str | None = None
        self.thread = threading.Thread(target=self._start, name="codebox-sandbox-start", daemon=True)
        self.thread.start()

    def _start(self) -> None:
        try:
            self.sandbox.start()
        except Exception as exc:  # SandboxError, or anything else: never a traceback in a thread
            self.error = str(exc) if isinstance(exc, SandboxError) else f"{type(exc).__name__}: {exc}"

    def _ready(self) -> Session:
        self.thread.join()
        if self.error is not None:
            raise SandboxError(f"the sandbox could not start: {self.error}")
        return self.sandbox

    def call(self, tool: str, args: dict[str, Any], timeout_s: float | None = None) -> ToolResult:
        return self._ready().call(tool, args, timeout_s)

    def close(self) -> None:
        self.sandbox.close()
