"""The agent loop: model -> registry -> policy -> sandbox -> history, until a stop condition."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from agent.cancel import CancelToken
from agent.defaults import SETTINGS
from agent.errors import SandboxError  # the sandbox itself cannot go on: ends the run
from agent.model.base import ModelClient, ModelError
from agent.model.usage import request_chars, settle
from agent.protocol import (
    STATUS_FOR_REASON,
    AgentEvent,
    AssistantMessage,
    ModelOutput,
    Report,
    StopReason,
    TaskSpec,
    ToolCall,
    ToolCallRecord,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agent.sandboxes.result import ToolResult, failure
from agent.task.budget import Prices, TaskBudget, round_cost
from agent.task.context import ContextStore
from agent.task.events import EventSink
from agent.task.policy import Policy, Verdict
from agent.tools import PreparedCall, RunEffects, ToolContext, ToolInputError, ToolRegistry

DEFAULT_INSTRUCTIONS = """\
You are codebox, a coding agent working on a repository you did not write.
Use the tools to read, search, patch and test the code. The repository is at the root of every
path; paths are relative to it. Tests run in a sandbox with no network. Edits go through
apply_patch and may be refused by the user's policy: when a call is refused or fails, read the
message and adapt. When you are done, answer with a short message saying what you changed and
how you checked it, and call no tool in that reply."""

T = TypeVar("T")
N = TypeVar("N", int, float)


@dataclass
class Limits:
    """Caps on a run; a task's own max_steps / timeout_s apply too (the smaller wins)."""

    max_steps: int = TaskSpec.model_fields["max_steps"].default
    timeout_s: float = TaskSpec.model_fields["timeout_s"].default
    loop_guard_repeats: int = 3  # identical failing calls before the run is stopped
    max_empty_replies: int = 3
    context_budget_chars: int = 200_000
    interrupt_grace_s: float = 10.0
    # Token and cost budgets (agent/task/budget.py): the task's own values apply too, the smaller wins.
    max_total_tokens: int | None = None
    max_cost: float | None = None
    prices: Prices | None = None
    on_usage: Callable[[Usage], None] | None = None  # each reply's usage as it comes (a batch's budget)
    # run_test: its timeout when the model names none, and the most the model may ask for (the settings).
    test_timeout_s: float = SETTINGS["test_timeout"].default
    max_test_timeout_s: float = SETTINGS["max_test_timeout"].default


class _Stop(Exception):
    def __init__(self, reason: StopReason, error: str | None = None) -> None:
        super().__init__(error or reason)
        self.reason = reason
        self.error = error


class CodingAgent:
    def __init__(
        self,
        model: ModelClient,
        registry: ToolRegistry,
        policy: Policy,
        sink: EventSink,
        ctx: ToolContext,
        *,
        limits: Limits | None = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
    ) -> None:
        self.model = model
        self.registry = registry
        self.policy = policy
        self.sink = sink
        self.ctx = ctx
        self.limits = limits or Limits()
        self.instructions = instructions

    # --- the run ---------------------------------------------------------------------------------

    def run(self, task: TaskSpec, cancel: CancelToken | None = None) -> Report:
        run = _Run(self, task, cancel or CancelToken())
        return run.execute()


class _Run:
    """The state of one run; CodingAgent stays reusable."""

    def __init__(self, agent: CodingAgent, task: TaskSpec, cancel: CancelToken) -> None:
        self.agent = agent
        self.task = task
        self.cancel = cancel
        self.limits = agent.limits
        self.context = ContextStore(task.goal, agent.limits.context_budget_chars)
        self.seq = 0
        self.step = 0
        self.started = time.time()
        self.deadline = time.monotonic() + min(task.timeout_s, agent.limits.timeout_s)
        self.records: list[ToolCallRecord] = []
        self.effects = RunEffects()
        self.usage: Usage | None = None
        self.failing_calls: Counter[str] = Counter()
        self.empty_replies = 0
        self.ended = False  # set before turn.end: a model still talking in its thread emits no more
        self.budget = TaskBudget(
            _smaller(task.max_total_tokens, self.limits.max_total_tokens),
            _smaller(task.max_cost, self.limits.max_cost),
            self.limits.prices,
            getattr(agent.model, "max_output_tokens", None),
        )

    def emit(self, type_: str, **data: Any) -> None:
        self.seq += 1
        event = AgentEvent(type=type_, task_id=self.task.id, seq=self.seq, step=self.step, data=data)
        self.agent.sink.emit(event)

    @property
    def max_steps(self) -> int:
        """The steps this run may take: the task's own, or the run's cap when that is smaller."""
        return min(self.task.max_steps, self.limits.max_steps)

    def execute(self) -> Report:
        self.emit(
            "turn.start",
            goal=self.task.goal,
            repo=self.task.repo,
            model=self.agent.model.name,
            policy=self.agent.policy.name,
            max_steps=self.max_steps,  # the one that stops this run (a batch's cap is "none" until given)
            timeout_s=min(self.task.timeout_s, self.limits.timeout_s),
            test_cmd=self.agent.ctx.test_cmd,
            tests=self.agent.ctx.test_source,  # how the test command was chosen (agent.task.found_tests)
            instructions=self.agent.instructions,
        )
        final: str | None = None
        try:
            final = self._loop()
            reason: StopReason = "final_message"
            error = None
        except _Stop as stop:
            reason, error = stop.reason, stop.error
        except Exception as exc:  # a bug in codebox still ends in a report that names it
            reason, error = "internal_error", f"{type(exc).__name__}: {exc}"
        self.ended = True
        report = self._report(reason, final, error)
        self.emit("turn.end", reason=reason, status=report.status, report=report.model_dump(mode="json"))
        return report

    def _check_stop(self) -> None:
        if self.cancel.cancelled:
            raise _Stop("cancelled", self.cancel.reason or None)
        if time.monotonic() >= self.deadline:
            raise _Stop("timeout", f"the run's time budget ({self.task.timeout_s:g}s) is spent")

    def _loop(self) -> str:
        while True:
            self._check_stop()
            if self.step >= self.max_steps:
                raise _Stop("max_steps", f"stopped after {self.step} model steps")
            over = self.budget.check(self._request_chars())
            if over is not None:
                raise _Stop("budget", over)
            self.step += 1
            output = self._sample()
            usage_left = output.usage
            calls = output.tool_calls
            if output.message:
                final = not calls and output.finish_reason != "length"
                self.emit(
                    "message",
                    text=output.message,
                    final=final,
                    finish_reason=output.finish_reason,
                    usage=_dump(usage_left),
                )
                usage_left = None
                if final:
                    self.context.append(AssistantMessage(content=output.message))
                    return output.message
            self.context.append(AssistantMessage(content=output.message, tool_calls=calls))
            if not calls:
                self._nudge(output)
                continue
            self.empty_replies = 0
            for call in calls:
                self._check_stop()
                self._handle_call(call, usage_left)
                usage_left = None

    def _nudge(self, output: ModelOutput) -> None:
        """A reply with no tool call that is not a final answer: cut off, or empty."""
        if output.finish_reason == "length":
            why = "cut_off"
            note = (
                "[codebox] Your last reply was cut off by the output token limit, so it was not "
                "taken as your final answer. Continue, more briefly."
            )
        else:
            why = "empty"
            self.empty_replies += 1
            if self.empty_replies >= self.limits.max_empty_replies:
                raise _Stop("model_error", f"the model sent {self.empty_replies} empty replies in a row")
            note = "[codebox] Your reply was empty. Call a tool, or answer with your final message."
        self._note(note, why)

    def _note(self, text: str, why: str) -> None:
        """Everything codebox itself tells the model goes in the events too: the log is the whole history."""
        self.emit("note", text=text, reason=why)
        self.context.append(UserMessage(content=text))

    # --- model -----------------------------------------------------------------------------------

    def _sample(self) -> ModelOutput:
        shortened = self.context.fit()
        if shortened:
            self.emit("context.trimmed", results=shortened, size=self.context.size())
        messages = list(self.context.messages)
        specs = self.agent.registry.specs()
        sent_chars = request_chars(self.agent.instructions, messages, specs)

        def emit_model_event(type_: str, data: dict[str, Any]) -> None:
            if self.ended:  # stopped while a reply was still streaming in: hang up, so the server stops too
                raise ModelError("the run has ended")
            self.emit(type_, **data)

        try:
            output = self._interruptible(
                lambda: self.agent.model.complete(self.agent.instructions, messages, specs, emit_model_event),
                on_interrupt=None,
            )
        except ModelError as exc:
            self.emit("model.error", error=str(exc), **exc.details())
            raise _Stop("model_error", str(exc)) from exc
        except _Stop:
            raise
        except Exception as exc:  # a client bug must still end in a report
            self.emit("model.error", error=f"{type(exc).__name__}: {exc}")
            raise _Stop("model_error", f"model client failed: {type(exc).__name__}: {exc}") from exc
        return self._count(output, sent_chars)

    def _request_chars(self) -> int:
        """The size of the request the history would make now (the budget's estimate of the next one)."""
        return request_chars(self.agent.instructions, self.context.messages, self.agent.registry.specs())

    def _count(self, output: ModelOutput, sent_chars: int) -> ModelOutput:
        """The reply with the usage codebox counts (the server's when plausible: agent.model.usage),
        counted in the report, the task's budget and the batch's, if there is one."""
        counted, why = settle(output, sent_chars)
        if why is not None and output.usage is not None:  # a count refused (none at all says itself: source)
            self.emit("usage.estimated", reason=why, reported=_dump(output.usage), usage=_dump(counted))
        self.usage = counted if self.usage is None else self.usage + counted
        self.budget.record(counted, sent_chars)
        if self.limits.on_usage is not None:
            self.limits.on_usage(counted)
        return output.model_copy(update={"usage": counted})

    def _interruptible(
        self, fn: Callable[[], T], on_interrupt: Callable[[], None] | None, let_finish: bool = False
    ) -> T:
        """Run fn in a worker thread; return its result, or stop on cancel/timeout.

        On a stop, on_interrupt runs (for a tool call: the sandbox is closed, which kills
        the container and so the running command), then the worker gets a grace period.
        With let_finish (a write), fn first gets the grace period to end by itself: a patch
        that lands is returned and reported as landed, and the next stop check ends the run.
        """
        box: dict[str, Any] = {}
        done = threading.Event()

        def worker() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:
                box["error"] = exc
            finally:
                done.set()

        thread = threading.Thread(target=worker, name="codebox-call", daemon=True)
        thread.start()
        while not done.wait(0.05):
            if self.cancel.cancelled or time.monotonic() >= self.deadline:
                if let_finish and done.wait(self.limits.interrupt_grace_s) and "value" in box:
                    return box["value"]
                if on_interrupt is not None:
                    on_interrupt()  # kills what runs; give the worker a moment to return
                    done.wait(self.limits.interrupt_grace_s)
                self._check_stop()
        if "error" in box:
            raise box["error"]
        return box["value"]

    # --- tools -----------------------------------------------------------------------------------

    def _handle_call(self, call: ToolCall, usage: Usage | None) -> None:
        base: dict[str, Any] = {"name": call.name, "call_id": call.id, "arguments": call.arguments}
        if call.raw_arguments is not None:
            base["raw_arguments"] = call.raw_arguments
        if usage is not None:
            base["usage"] = _dump(usage)
        try:
            prepared = self.agent.registry.prepare(call)
        except Exception as exc:  # ToolInputError, or anything a hostile argument provokes
            reason = str(exc) if isinstance(exc, ToolInputError) else f"the call could not be checked: {_exc(exc)}"
            self.emit("tool.start", **base, decision="invalid", reason=reason)
            self._finish(call, "invalid", failure(reason, "error"), 0.0)
            return
        try:
            verdict = self.agent.policy.decide(prepared)
        except Exception as exc:  # a policy that cannot decide (e.g. the terminal went away) denies
            verdict = Verdict("deny", f"the policy could not decide: {_exc(exc)}")
        self.emit(
            "tool.start",
            **base,
            decision=verdict.decision,
            reason=verdict.reason,
            asked=verdict.asked,
            write_paths=prepared.write_paths,
            summary=self.agent.registry.summary(call),
        )
        if not verdict.allowed:
            content = f"Denied by policy ({self.agent.policy.name}): {verdict.reason}. The call was not run."
            self._finish(call, "deny", failure(content, "denied"), 0.0)
            return
        started = time.monotonic()
        try:
            result = self._interruptible(
                lambda: self._execute(prepared),
                on_interrupt=self.agent.ctx.sandbox.close,
                let_finish=prepared.handler.writes,
            )
        except _Stop as stop:
            content = f"The call was interrupted: the run stopped ({stop.reason})."
            result = failure(content, "interrupted", stop_reason=stop.reason)
            with contextlib.suppress(_Stop):  # the loop guard must not replace the reason
                self._finish(call, "allow", result, time.monotonic() - started)
            raise
        except SandboxError as exc:
            result = failure(f"Sandbox failure: {exc}", "sandbox_error")
            self._finish(call, "allow", result, time.monotonic() - started)
            raise _Stop("sandbox_error", str(exc)) from exc
        self._finish(call, "allow", result, time.monotonic() - started, prepared)

    def _execute(self, prepared: PreparedCall) -> ToolResult:
        try:
            return prepared.handler.execute(prepared.args, self.agent.ctx)
        except SandboxError:
            raise
        except Exception as exc:  # a tool's crash is a result the model sees, not the end of the run
            return failure(f"Tool {prepared.handler.name} failed: {type(exc).__name__}: {exc}", "error")

    def _finish(
        self,
        call: ToolCall,
        decision: str,
        result: ToolResult,
        duration: float,
        prepared: PreparedCall | None = None,
    ) -> None:
        content = result.shown()
        self.context.append(ToolResultMessage(call_id=call.id, name=call.name, content=content, is_error=not result.ok))
        self.emit(
            "tool.end",
            name=call.name,
            call_id=call.id,
            decision=decision,
            is_error=not result.ok,
            outcome=result.outcome,
            duration_s=round(duration, 4),
            content=content,
            summary=self.agent.registry.summary(call),
            data=result.data,
        )
        error = content.splitlines()[0][:300] if not result.ok and content else None
        self.records.append(
            ToolCallRecord(
                call_id=call.id,
                name=call.name,
                decision=decision,
                ok=result.ok,
                error=error,
                duration_s=round(duration, 4),
            )
        )
        if prepared is not None:
            prepared.handler.note_effects(prepared.write_paths, result, self.effects)
            if prepared.handler.writes and result.ok:
                # The tree changed: running the same failing test again is a fair retry now.
                self.failing_calls.clear()
        if not result.ok:
            key = call.name + json.dumps(call.arguments, sort_keys=True, default=str) + (call.raw_arguments or "")
            self.failing_calls[key] += 1
            if self.failing_calls[key] >= self.limits.loop_guard_repeats:
                raise _Stop(
                    "loop_guard",
                    f"the same failing {call.name} call was made {self.failing_calls[key]} times",
                )

    # --- report ----------------------------------------------------------------------------------

    def _report(self, reason: StopReason, final: str | None, error: str | None) -> Report:
        return Report(
            task_id=self.task.id,
            goal=self.task.goal,
            repo=self.task.repo,
            model=self.agent.model.name,
            status=STATUS_FOR_REASON[reason],
            stop_reason=reason,
            final_message=final,
            error=error,
            steps=self.step,
            tool_calls=self.records,
            files_changed=self.effects.files_changed,
            last_test=self.effects.last_test,
            usage=self.usage,
            cost=round_cost(self.budget.prices.cost(self.usage)) if self.budget.prices.known else None,
            started_at=self.started,
            duration_s=round(time.time() - self.started, 3),
        )


def _exc(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def _smaller(a: N | None, b: N | None) -> N | None:
    """The stricter of two optional limits."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _dump(usage: Usage | None) -> dict[str, Any] | None:
    return usage.model_dump() if usage else None
