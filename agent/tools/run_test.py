"""run_test, host side: the task's test command plus the model's arguments, with a bounded timeout;
the run becomes the report's last_test (with the exact argv that ran).

The model's arguments may only choose tests (the command's language says which: agent.languages);
anything else is refused before the sandbox sees it, and a refused call leaves last_test as it was."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from agent.defaults import REPO_MOUNT
from agent.languages.base import TestArgsError
from agent.languages.registry import argv_for, check_test_args, error_line, failing_tests
from agent.protocol import TestRun
from agent.sandboxes.result import ToolResult, failure, wrote_into_repo
from agent.tools.base import RunEffects, ToolArgs, ToolContext, ToolHandler

NO_TEST_COMMAND = ("No test command is configured for this task (codebox run --test-cmd ..., or test_cmd in a "
                   "batch task's line).")
_IN_A_COPY = "the user can run them in a throwaway copy (codebox run --test-in-copy, or test_in_copy in a task)"
READ_ONLY_NOTE = f"note: the tests tried to write into {REPO_MOUNT}, which is read-only in the sandbox; {_IN_A_COPY}"
MAYBE_READ_ONLY_NOTE = (f"note: a test hit a read-only file system (the error names no path); {REPO_MOUNT} is "
                        f"read-only in the sandbox: if the tests write into it, {_IN_A_COPY}")
# os.utime and os.chmod name no path: jinja's mtime test touches its template under /repo/tests.
_NAMELESS = re.compile(r"\[Errno 30\] Read-only file system$", re.M)


def _read_only_note(output: str) -> str | None:
    """The note for a test that failed writing into the read-only repository (tomlkit's TOMLFile test
    writes its example), or None."""
    if wrote_into_repo(output):
        return READ_ONLY_NOTE
    return MAYBE_READ_ONLY_NOTE if _NAMELESS.search(output) else None


def _why(result: ToolResult, failed: list[str]) -> str | None:
    """Why a run did not pass: the tool's one line ("command failed with exit code 4"), or, when the output names
    no failing test but says why, that ("exit code 4: ModuleNotFoundError: No module named 'flask'")."""
    line = None if failed or result.outcome not in ("failed", "error") else error_line(result.output)
    if not line or (result.error and line in result.error):
        return result.error or line
    code = result.data.get("exit_code")
    said = f"exit code {code}" if result.outcome == "failed" and isinstance(code, int) else result.error
    return f"{said}: {line}" if said else line


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
            return failure(ctx.no_tests_message or NO_TEST_COMMAND, "error")
        try:
            check_test_args(ctx.test_cmd, args.args, ctx.repo)
        except TestArgsError as exc:
            return failure(str(exc), "refused")
        timeout = min(args.timeout_s or ctx.default_test_timeout_s, ctx.max_test_timeout_s)
        argv = argv_for(ctx.test_cmd, args.args)
        request: dict[str, Any] = {"argv": argv, "timeout_s": timeout}
        if ctx.test_in_copy:
            request["copy_repo"] = True
        result = ctx.sandbox.call("run_test", request, timeout_s=timeout)
        result.data["argv"] = argv  # what ran, as sent: not whatever the sandbox's reply says
        note = None if ctx.test_in_copy or result.ok else _read_only_note(result.output)
        if note:
            result.output += f"\n{note}"
        return result

    def summary(self, arguments: dict[str, Any]) -> str:
        return " ".join(str(a) for a in arguments.get("args", []))

    def note_effects(self, write_paths: list[str], result: ToolResult, effects: RunEffects) -> None:
        if result.outcome == "refused":  # the arguments never reached the sandbox: no test ran
            return
        argv = [str(a) for a in result.data.get("argv", [])]
        failed = failing_tests(result.output, argv or None)
        effects.last_test = TestRun(
            command=argv,
            outcome=result.outcome,
            exit_code=result.data.get("exit_code"),
            duration_s=float(result.data.get("duration_s") or 0.0),
            failed_tests=failed,
            error=None if result.ok else _why(result, failed),
        )
