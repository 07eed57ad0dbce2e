"""Each piece of the screen on a real pseudo-terminal, and what is left on it afterwards (read back
through a terminal emulator): the status line's whole-run time and Ctrl-C hint, the live line of an
environment build, the net diff at the end, green marks only for passing tests, and a batch board
that leaves nothing behind after Ctrl-C."""

from __future__ import annotations

import re
import time

import pytest

from agent.console.batch_view import BatchView, print_table
from agent.console.live import RunConsole, clock
from agent.console.progress import StepProgress
from agent.console.render import ChangeLog, print_summary
from agent.protocol import AgentEvent, Report, TestRun, Usage
from tests.pty_screen import final_screen, terminal

NET = "--- a/backoff.py\n+++ b/backoff.py\n@@ -6,3 +6,3 @@\n     out = []\n-    for n in range(1, attempts):\n" \
      "+    for n in range(attempts):\n         out.append(min(cap, base * 2**n))\n"
STEP_1 = "--- a/backoff.py\n+++ b/backoff.py\n@@ -6,1 +6,1 @@\n-    for n in range(1, attempts):\n" \
         "+    for n in range(1, attempts + 1):\n"


@pytest.fixture(autouse=True)
def _a_colour_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "400")  # rich sizes a console on a stream that is not fd 0-2 from COLUMNS


def event(type_: str, step: int, **data: object) -> AgentEvent:
    return AgentEvent(type=type_, task_id="t1", seq=step, step=step, data=data)


def report(task_id: str, status: str = "completed", outcome: str | None = None, **more: object) -> Report:
    reason = {"completed": "final_message", "cancelled": "cancelled", "stopped": "max_steps"}[status]
    test = TestRun(command=["pytest"], outcome=outcome, exit_code=0 if outcome == "ok" else 1) if outcome else None
    return Report(task_id=task_id, goal="g", repo="/r", model="m", status=status, stop_reason=reason,
                  last_test=test, started_at=time.time(), duration_s=1.0, **more)  # type: ignore[arg-type]


def test_the_status_line_shows_the_whole_run_s_time_and_how_to_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    with terminal() as (stream, written):
        console = RunConsole(stream)
        console.emit(event("turn.start", 0, goal="g", model="m", policy="read-only", repo="/r"))
        console.emit(event("tool.start", 1, name="run_test", decision="allow", summary="-x"))
        time.sleep(1.3)  # past a whole second of the run: the clock shows it
        live = final_screen(written())[-1]  # the status line, as the screen shows it now
        console.emit(event("tool.end", 1, name="run_test", decision="allow", outcome="ok", duration_s=1.2))
        console.emit(event("turn.end", 2, reason="final_message", status="completed"))
        console.close()
        screen = final_screen(written())
    assert re.fullmatch(r". \[1\] run_test -x running \d+\.\ds · run [1-9]\d*s · Ctrl-C to stop", live), live
    assert not any("Ctrl-C to stop" in line for line in screen)  # the status line left nothing behind
    assert any(line.startswith("  [1] run_test ✓ ok") for line in screen)


def test_on_a_narrow_terminal_the_goal_is_cut_before_the_times_and_the_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    with terminal(columns=60) as (stream, written):
        console = RunConsole(stream)
        console.emit(event("turn.start", 0, goal="g", model="m", policy="read-only", repo="/r"))
        console.emit(event("tool.start", 1, name="search", decision="allow", summary="a very long query " * 5))
        time.sleep(0.5)
        live = final_screen(written())[-1]
        console.close()
    assert live.endswith("· Ctrl-C to stop") and "…" in live and len(live) <= 60


def test_the_clock_reads_well() -> None:
    assert [clock(s) for s in (0.4, 42, 187, 3725)] == ["0s", "42s", "3m 07s", "1h 02m"]


def test_an_environment_build_has_a_live_line_with_its_step_and_seconds() -> None:
    with terminal() as (stream, written):
        with StepProgress(stream) as progress:
            progress.log("resolving 7 requirements for Python 3.11 (x86_64)")
            time.sleep(1.2)
            resolving = final_screen(written())[-1]
            progress.log("installing into /opt/codebox-env (network none)")
            time.sleep(0.5)
            installing = final_screen(written())[-1]
        screen = final_screen(written())
    times = r" \d+\.\ds · env [1-9]\d*s · Ctrl-C to stop"
    assert re.fullmatch(r". env: resolving 7 requirements for Python 3\.11 \(x86_64\)" + times, resolving), resolving
    assert re.fullmatch(r". env: installing into /opt/codebox-env \(network none\)" + times, installing), installing
    assert screen == [
        "codebox: env: resolving 7 requirements for Python 3.11 (x86_64)",
        "codebox: env: installing into /opt/codebox-env (network none)",
    ]  # the steps stay; the live line is gone


def test_the_end_shows_the_net_diff_not_each_patch(monkeypatch: pytest.MonkeyPatch) -> None:
    changes = ChangeLog()
    for net in (STEP_1, NET):  # two patches to one file: the second result carries the whole change
        changes.emit(event("tool.end", 1, name="apply_patch", decision="allow", is_error=False,
                           data={"diff": "(this patch's own diff)", "net_diffs": {"backoff.py": net}}))
    with terminal() as (stream, written):
        print_summary(report("t1", files_changed=["backoff.py"]), stream, changes)
        screen = final_screen(written())
    at = screen.index("diff of what the run changed:")
    assert screen[at + 1:] == NET.rstrip("\n").split("\n")
    assert not any("attempts + 1" in line or "this patch's own" in line for line in screen)


def test_a_green_check_only_when_the_last_test_passed_or_none_ran() -> None:
    with terminal() as (stream, written):
        view = BatchView(4, stream)
        for task_id in ("passed", "failed", "none", "stopped"):
            view.started(task_id)
        view.finished(report("passed", outcome="ok"))
        view.finished(report("failed", outcome="failed"))
        view.finished(report("none"))
        view.finished(report("stopped", status="stopped", outcome="ok"))
        view.close()
        print_summary(report("failed", outcome="failed"), stream)
        screen = final_screen(written())
    marks = {line.split()[1]: line for line in screen if line and line[0] in "✓✗"}
    assert marks["passed"].startswith("✓") and marks["none"].startswith("✓")
    assert marks["failed"].startswith("✗") and "completed (final_message)" in marks["failed"]
    assert "last test failed" in marks["failed"]
    assert marks["stopped"].startswith("✗")
    summary = next(line for line in screen if line.startswith("■"))
    assert summary.startswith("■ completed (final_message)") and "the last test run did not pass" in summary


def test_a_cancelled_batch_leaves_no_board_behind() -> None:
    with terminal() as (stream, written):
        view = BatchView(3, stream)
        view.started("alpha")
        view.started("beta")
        view.sink("alpha").emit(AgentEvent(type="tool.start", task_id="alpha", seq=1, step=2,
                                           data={"name": "run_test", "decision": "allow", "summary": "-x"}))
        time.sleep(0.6)
        board = final_screen(written())
        view.write("\ncodebox: SIGINT received: stopping (the sandbox is being removed)\n")  # the signal handler
        time.sleep(0.3)
        for task_id in ("alpha", "beta"):
            view.finished(report(task_id, status="cancelled", error="SIGINT received"))
        time.sleep(0.3)  # the board redraws with no task running
        view.close()
        screen = final_screen(written())
    assert board[0] == "0/3 done · 0 failed · 2 running" and board[1].split() == ["task", "step", "now", "elapsed"]
    assert board[2].split()[:4] == ["alpha", "2", "run_test", "-x"]  # the board, while tasks ran
    assert screen[0] == "codebox: SIGINT received: stopping (the sandbox is being removed)"
    assert [line.split()[:3] for line in screen[1:]] == [["✗", "alpha", "cancelled"], ["✗", "beta", "cancelled"]]
    assert not any("elapsed" in line or "done ·" in line for line in screen)  # no header, no counts left


def test_the_batch_table_fits_a_100_column_terminal_and_shows_the_error_in_red(monkeypatch: pytest.MonkeyPatch) -> None:
    # Found on a 6-task batch on a 100-column terminal: 13.6s showed as '13.…', the cost header as 'co…',
    # an error not at all (its column had no room left), and the tokens were the red column.
    monkeypatch.setenv("COLUMNS", "100")
    error = "environment: the project's own build failed offline (get_requires_for_build_*, exit 1)"
    done = report("more-itertools", usage=Usage(total_tokens=6710)).model_copy(update={"duration_s": 13.6})
    failed = report("pluggy", status="stopped", error=error, usage=Usage(total_tokens=4031))
    screens = {}
    for rows in ([done], [done, failed]):
        with terminal(columns=100) as (stream, written):
            print_table(rows, stream)
            raw = written()
        screens[len(rows)] = [line for line in final_screen(raw) if line.strip()]
        assert screens[len(rows)][2].split() == ["more-itertools", "completed", "final_message", "0", "0", "0", "-",
                                                 "13.6s", "6710", "-"]
    header = ["task", "status", "reason", "steps", "calls", "files", "test", "time", "tokens", "cost"]
    assert screens[1][0].split() == header and screens[2][0].split() == [*header, "error"]
    assert "environment: the project's own build failed offline" in " ".join(" ".join(line.split()[-3:]) for line in
                                                                          screens[2][3:])
    assert b"\x1b[31m6710" not in raw and b"\x1b[31menvironment:" in raw
