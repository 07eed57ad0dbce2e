"""ToolResult: what a tool call gives back, from the sandbox's server to the model and the report.

One type on the host, for every source of a result: the in-container server's answer (its
``outcome`` one of ``sandbox.wire.OUTCOMES``), and what the host decides itself (a dead container,
a policy's refusal, an interrupted call). Stdlib only: the container driver, the tools and the
loop all use it, and the early start of `codebox run` imports no pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from agent.defaults import REPO_MOUNT

Outcome = Literal[
    # The in-container server's (sandbox.wire.OUTCOMES):
    "ok",  # the tool did its job (run_test: the command exited 0)
    "error",  # bad arguments, path refused, patch rejected, file missing ...
    "failed",  # run_test: the command ran and exited non-zero
    "timeout",  # run_test: killed at its deadline (data.killed lists what)
    "oom",  # run_test: killed by the kernel for memory (the host asks the daemon too)
    # The host's:
    "container_died",  # the container stopped answering or is gone; the next call gets a fresh one
    "sandbox_error",  # no sandbox could be started: the run ends
    "denied",  # the policy refused the call: it did not run
    "refused",  # the host refused the arguments before the sandbox saw them (run_test's args)
    "interrupted",  # the run stopped while the call ran (data.stop_reason says why)
]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)


@dataclass
class ToolResult:
    """One call's result. ``output`` is what the model reads; ``error`` a one-line summary when
    ``ok`` is false; ``data`` the structured fields (exit_code, duration_s, bytes_cut, ...)."""

    output: str
    ok: bool = True
    outcome: Outcome = "ok"
    error: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0  # the call's round trip, as the host measured it

    def shown(self) -> str:
        """The text the model reads: a failed call's one-line error first, unless the output says it."""
        if self.ok or not self.error or self.error in self.output:
            return self.output
        return f"{self.error}\n{self.output}" if self.output else self.error


def failure(output: str, outcome: Outcome, **data: Any) -> ToolResult:
    """A result the host makes itself for a call that did not (or could not) do its job."""
    return ToolResult(output=output, ok=False, outcome=outcome, error=output.splitlines()[0] if output else None,
                      data=dict(data))


def wrote_into_repo(output: str) -> bool:
    """Whether a test run's output shows a write into the read-only repository failing (the tool's
    note names --test-in-copy; eval runs the tests again in a copy)."""
    return f"Read-only file system: '{REPO_MOUNT}/" in output or f"Read-only file system: '{REPO_MOUNT}'" in output
