"""run_test, host side: the task's test command plus the model's arguments, with a bounded timeout;
the run becomes the report's last_test (with the exact argv that ran).

The model's arguments may only choose tests (agent.tools.test_args); anything else is refused
before the sandbox sees it, and a refused call leaves last_test as it was."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from agent.defaults import REPO_MOUNT
from agent.protocol import TestRun
from agent.sandboxes.result import ToolResult, failure
from agent.tools.base import RunEffects, ToolArgs, ToolContext, ToolHandler
from agent.tools.test_args import TestArgsError, check_test_args
from agent.tools.test_names import failing_tests

READ_ONLY_NOTE = (f"note: the tests tried to write into {REPO_MOUNT}, which is read-only in the sandbox; "
                  "the user can run them in a throwaway copy (codebox run --test-in-copy, or test_in_copy in a task)")


def _wrote_into_the_repo(output: str) -> bool:
    """A test failed writing into the read-only repository (tomlkit's TOMLFile test writes its example)."""
    return f"Read-only file system: '{REPO_MOUNT}/" in output or f"Read-only file system: '{REPO_MOUNT}'" in output


class RunTestArgs(ToolArgs):
    args: list[str] = Field(
        default_factory=list,
        description=(
            "Extra arguments appended to the task's test command, to choose tests only: test paths or "
            "node ids in the repository, and for pytest -k EXPR, -m EXPR, -x, --maxfail N, -q, -v, "
            "--tb STYLE. e.g. ['tests/test_x.py', '-k', 'foo']."
        ),
    )
    timeout_s: float | None = Field(default=None, gt=0, description="Time limit for this run in seconds.")


class RunTestTool(ToolHandler):
    name = "run_test"
    description = (
        "Run the task's test command in the sandbox (no network, read-only repository). "
        "args are appended to the command. Returns the exit code and the (capped) output."
    )
    args_model = RunTestArgs

    def execute(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, RunTestArgs)
        if not ctx.test_cmd:
            return failure("No test command is configured for this task (codebox run --test-cmd ...).", "error")
        try:
            check_test_args(ctx.test_cmd, args.args, ctx.repo)
        except TestArgsError as exc:
            return failure(str(exc), "refused")
        timeout = min(args.timeout_s or ctx.default_test_timeout_s, ctx.max_test_timeout_s)
        argv = [*ctx.test_cmd, *args.args]
        request: dict[str, Any] = {"argv": argv, "timeout_s": timeout}
        if ctx.test_in_copy:
            request["copy_repo"] = True
        result = ctx.sandbox.call("run_test", request, timeout_s=timeout)
        result.data["argv"] = argv  # what ran, as sent: not whatever the sandbox's reply says
        if not ctx.test_in_copy and not result.ok and _wrote_into_the_repo(result.output):
            result.output += f"\n{READ_ONLY_NOTE}"
        return result

    def summary(self, arguments: dict[str, Any]) -> str:
        return " ".join(str(a) for a in arguments.get("args", []))

    def note_effects(self, write_paths: list[str], result: ToolResult, effects: RunEffects) -> None:
        if result.outcome == "refused":  # the arguments never reached the sandbox: no test ran
            return
        effects.last_test = TestRun(
            command=[str(a) for a in result.data.get("argv", [])],
            outcome=result.outcome,
            exit_code=result.data.get("exit_code"),
            duration_s=float(result.data.get("duration_s") or 0.0),
            failed_tests=failing_tests(result.output),
        )
