"""The summary's lines are built without rich (a quiet run never loads it) and become the same rich
Text as before when a terminal shows them."""

from __future__ import annotations

import io

from rich.text import Text

from agent.console.render import print_summary, summary_lines
from agent.console.terminal import Styled, safe_styled
from agent.protocol import Report, TestRun


def _report() -> Report:
    return Report(task_id="t1", goal="g", repo="/r", model="m", status="error", stop_reason="model_error",
                  error="boom \x1b[31m", final_message="done", started_at=0.0, duration_s=1.5,
                  last_test=TestRun(command=["pytest"], outcome="failed", exit_code=1, failed_tests=["test_a"]))


def test_styled_becomes_the_rich_text_rich_itself_would_build() -> None:
    styled = Styled("error: ", "bold red") + safe_styled("it \x1b[2J broke", "red") + Styled(" -> ")
    styled.append("failed", style="red").append(" (exit 1)")
    expected = Text("error: ", style="bold red") + Text("it \\x1b[2J broke", style="red") + Text(" -> ")
    expected.append("failed", style="red")
    expected.append(" (exit 1)")
    made = styled.to_rich()
    assert (made.plain, str(made.style), made.spans) == (expected.plain, str(expected.style), expected.spans)
    assert styled.plain == expected.plain


def test_the_summary_is_plain_text_off_a_terminal_and_styled_on_one() -> None:
    plain, styled = io.StringIO(), io.StringIO()
    print_summary(_report(), plain, styled=False)
    print_summary(_report(), styled, styled=True)
    assert "\x1b" not in plain.getvalue() and "error: boom \\x1b[31m" in plain.getvalue()
    assert "\x1b[" in styled.getvalue() and "test_a" in styled.getvalue()
    assert summary_lines(_report())[0].plain.startswith("■ error (model_error) task t1")


def test_the_summary_names_the_sandbox_only_when_it_is_not_docker_and_runc() -> None:
    def sandbox_line(backend: str | None, runtime: str | None) -> list[str]:
        report = _report().model_copy(update={"backend": backend, "runtime": runtime})
        return [line.plain for line in summary_lines(report) if line.plain.startswith("sandbox: ")]

    assert sandbox_line("docker", "runc") == [] and sandbox_line(None, None) == []
    assert sandbox_line("docker", "runsc") == ["sandbox: docker · runsc (gVisor)"]
    assert sandbox_line("podman", "runc") == ["sandbox: podman · runc"]
