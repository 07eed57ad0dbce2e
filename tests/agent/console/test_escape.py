"""Issue 13, item 1: no control character from a model, a repository or a tool reaches the terminal
raw. Every console path is fed the same hostile text: the live lines, the summary (files changed,
last test, failing tests, final message, error), the batch lines and table, usage errors."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agent.console.batch_view import BatchView, table_text
from agent.console.live import RunConsole
from agent.console.render import ChangeLog, print_summary, summary_text
from agent.escape import one_line, printable
from tests.hostile_text import BIDI, CLEAR, OSC52, TITLE, hostile_events, hostile_report


def test_printable_shows_control_characters_as_escapes() -> None:
    assert printable(OSC52) == "\\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\\x07"
    assert printable(TITLE + CLEAR) == "\\x1b]0;pwned\\x07\\x1bc\\x1b[2J\\x1b[H"
    assert printable(BIDI + "\x9b\x7f\u200b") == "\\u202e\\x9b\\x7f\\u200b"
    assert printable("tab\there, ünïcode, 日本, a\u00a0b") == "tab\there, ünïcode, 日本, a\u00a0b"
    assert printable("line 1\r\nline 2\rx\n", multiline=True) == "line 1\nline 2\\rx\n"
    assert printable("a\nb") == "a\\nb"
    assert one_line("a\n  b\x1b", 4) == "a b…"


def no_control(text: str) -> None:
    bad = [c for c in text if not (c.isprintable() or c in "\n\t" or c == "\u00a0")]
    assert not bad, f"raw control characters reached the console: {bad!r}"


@pytest.mark.parametrize("styled", [False, True])
def test_the_live_console_escapes_every_event(styled: bool) -> None:
    out = io.StringIO()
    console = RunConsole(out, styled=styled)
    for event in hostile_events():
        console.emit(event)
    console.close()
    text = out.getvalue()
    if styled:  # our own SGR colours are the only escape sequences: strip them, then check
        from rich.text import Text

        text = Text.from_ansi(text).plain
    no_control(text)
    assert "\\x1b]52;c;" in text and "\\x1b]0;pwned\\x07" in text and "\\u202e" in text
    assert "done " not in text  # the final message is left to the summary: printed once


@pytest.mark.parametrize("styled", [False, True])
def test_the_summary_escapes_files_last_test_failing_tests_error_and_final_message(styled: bool) -> None:
    changes = ChangeLog()
    for event in hostile_events():
        changes.emit(event)
    out = io.StringIO()
    print_summary(hostile_report(), out, changes, styled=styled)
    text = out.getvalue()
    if styled:
        from rich.text import Text

        text = Text.from_ansi(text).plain
    no_control(text)
    for shown in ("evil\\x1b]52;c;", "b\\x1bc\\x1b[2J", "pytest \\x1b]0;pwned\\x07", "failed\\x1bc",
                  "test_\\x1b]52", "all done\\x1b]52", "second line\\x1bc", "it broke: \\x1b]52", "+\\x1b]52;c;"):
        assert shown in text, shown
    assert text.count("all done") == 1


def test_report_render_is_escaped() -> None:
    text = summary_text(hostile_report())
    no_control(text)
    assert "final message:" in text and "\\x1b]0;pwned" in text


def test_the_batch_lines_and_table_are_escaped() -> None:
    out = io.StringIO()
    view = BatchView(2, out, styled=False)
    report = hostile_report()
    view.started(report.task_id)
    view.on_event(report.task_id, hostile_events()[3])
    assert all("\x1b" not in cell for row in view.rows() for cell in row)
    view.finished(report)
    view.close()
    no_control(out.getvalue() + table_text([report]))
    assert "it broke: \\x1b]52" in table_text([report])


def test_a_usage_error_is_escaped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from agent.cli.parser import main

    script = tmp_path / "script.json"
    script.write_text('{"turns": []}')
    assert main(["run", "--repo", ".", "--model", f"scripted:{script}", "--base-url", "x" + OSC52, "g"]) == 2
    err = capsys.readouterr().err
    no_control(err)
    assert "\\u001b]52" in err or "\\x1b]52" in err
    assert main(["run", "--repo", "nowhere" + OSC52, "--model", f"scripted:{script}", "g"]) == 2
    err = capsys.readouterr().err
    no_control(err)
    assert "\\u001b]52" in err or "\\x1b]52" in err
