"""The end of a run on the console: the summary (status, files, last test with the failing tests
by name, totals, the final message once) and the diff of what the run changed.

Its lines are Styled (agent.console.terminal), not rich Text: rich is loaded only when they are
shown on a terminal, never for a summary written to a file or a pipe.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from agent.console.net_diff import NetDiff
from agent.console.terminal import Styled, Writer
from agent.console.terminal import safe_styled as safe
from agent.escape import printable

if TYPE_CHECKING:  # protocol imports this module (Report.render): no import back at run time
    from agent.protocol import AgentEvent, Report, TestRun

STATUS_STYLE = {"completed": "bold green", "stopped": "bold yellow", "cancelled": "bold yellow", "error": "bold red"}
OUTCOME_STYLE = {"ok": "green", "failed": "red", "error": "red", "timeout": "yellow"}
MAX_FAILED_SHOWN = 10


class ChangeLog:
    """An event sink that keeps what the run changed, once per file (agent.console.net_diff).

    Each file's diff goes from its content before the run's first patch to it to its content
    at the end, as the sandbox computed it: nothing the repository had changed before the run
    shows up, and a file patched three times appears once.
    """

    def __init__(self) -> None:
        self.net = NetDiff()

    def emit(self, event: AgentEvent) -> None:
        self.net.add_event(event.type, event.data)

    def close(self) -> None:
        pass


def tests_passed_or_none(report: Report) -> bool:
    """The last test run passed, or the run ran none: what a green mark may promise."""
    return report.last_test is None or report.last_test.outcome == "ok"


def test_reason(test: TestRun) -> str | None:
    """Why the last test run did not pass, in one unescaped line: its failing tests, else the tool's error
    (no test command, a timeout, a test program that is missing). None when it passed."""
    if test.outcome == "ok":
        return None
    if test.failed_tests:
        names = ", ".join(test.failed_tests[:3]) + (", …" if len(test.failed_tests) > 3 else "")
        return f"{len(test.failed_tests)} failing: {names}"
    return test.error


def summary_lines(report: Report) -> list[Styled]:
    """The summary as styled lines; every value that came from outside is escaped."""
    r = report
    tests_failed = r.status == "completed" and not tests_passed_or_none(r)
    style = "bold yellow" if tests_failed else STATUS_STYLE.get(r.status, "bold")
    status = Styled(f"■ {r.status} ({r.stop_reason})", style=style)
    status.append(
        f" task {printable(r.task_id)} · {r.steps} steps · {len(r.tool_calls)} tool calls · {r.duration_s:.1f}s",
        style="",
    )
    if tests_failed:
        status.append(" · the last test run did not pass", style="yellow")
    lines = [status]
    if r.error:
        lines.append(Styled("error: ", style="bold red") + safe(r.error, "red"))
    if r.files_changed:
        lines.append(Styled("files changed: ", style="bold") + safe(", ".join(r.files_changed)))
    if r.last_test:
        lines.extend(_test_lines(r))
    if r.env and r.env.image != r.env.base_image:
        how = "built" if r.env.built else "reused"
        lines.append(Styled("env: ", style="bold") + safe(f"{r.env.image} ({len(r.env.installed)} packages, {how})"))
    if (r.backend, r.runtime) not in ((None, None), ("docker", "runc")):  # say it when it is not the default
        runtime = "runsc (gVisor)" if r.runtime == "runsc" else (r.runtime or "its default runtime")
        lines.append(Styled("sandbox: ", style="bold") + safe(f"{r.backend or 'docker'} · {runtime}"))
    if r.patch is not None:
        lines.append(Styled(f"patch: {len(r.patch.files)} files, +{r.patch.added} -{r.patch.removed}", style="dim"))
    if r.usage:
        lines.append(Styled(f"tokens: {r.usage.input_tokens} in, {r.usage.output_tokens} out", style="dim"))
    if r.cost is not None:
        lines.append(Styled(f"cost: {r.cost:.4f}", style="dim"))
    denied = sum(1 for c in r.tool_calls if c.decision == "deny")
    failed = sum(1 for c in r.tool_calls if not c.ok)
    if failed:
        lines.append(Styled(f"failed calls: {failed} (denied by policy: {denied})", style="yellow"))
    if r.final_message:
        lines.append(Styled("final message:", style="bold"))
        lines.extend(safe("  " + line) for line in printable(r.final_message, multiline=True).split("\n"))
    return lines


def _test_lines(report: Report) -> list[Styled]:
    t = report.last_test
    assert t is not None
    line = Styled("last test: ", style="bold") + safe(" ".join(t.command)) + Styled(" -> ")
    line.append(printable(t.outcome), style=OUTCOME_STYLE.get(t.outcome, "yellow"))
    line.append(f" (exit {t.exit_code})")
    if t.error and not t.failed_tests:
        line += safe(f" — {t.error}", OUTCOME_STYLE.get(t.outcome, "yellow"))
    lines = [line]
    if t.failed_tests:
        lines.append(Styled(f"failing tests ({len(t.failed_tests)}):", style="red"))
        lines.extend(safe(f"  {name}", "red") for name in t.failed_tests[:MAX_FAILED_SHOWN])
        if len(t.failed_tests) > MAX_FAILED_SHOWN:
            lines.append(Styled(f"  … and {len(t.failed_tests) - MAX_FAILED_SHOWN} more", style="red"))
    return lines


def summary_text(report: Report) -> str:
    """The summary as plain text (escaped)."""
    return "\n".join(line.plain for line in summary_lines(report))


def diff_lines(changes: ChangeLog) -> list[Styled]:
    """The run's diff, escaped, coloured line by line (+ green, - red, @@ cyan, headers bold)."""
    net = changes.net
    text = net.text()
    if not text and not net.unknown:
        return [Styled("diff: no file changed", style="dim")]
    head = "diff of what the run changed, patch by patch:" if net.by_patch else "diff of what the run changed:"
    lines = [Styled(head, style="bold")]
    for raw in printable(text.rstrip("\n"), multiline=True).split("\n") if text else []:
        lines.append(Styled(raw, style=_diff_style(raw)))
    if net.unknown:
        lines.append(Styled("not shown (too large to keep): " + printable(", ".join(net.unknown)), style="yellow"))
    if net.truncated:
        lines.append(Styled("(the diff of at least one file was cut: see the files themselves)", style="yellow"))
    return lines


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---", "diff ", "new file", "deleted file", "rename ")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("@@"):
        return "cyan"
    return ""


def print_summary(report: Report, stream: TextIO, changes: ChangeLog | None = None, styled: bool | None = None) -> None:
    """The summary, then (when ``changes`` is given) the diff, on ``stream``."""
    writer = Writer(stream, styled)
    writer.line(Styled(""))
    for line in summary_lines(report):
        writer.line(line)
    if changes is not None:
        writer.line(Styled(""))
        for line in diff_lines(changes):
            writer.line(line)
