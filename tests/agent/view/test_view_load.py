"""Loading runs for the viewer: every input shape, lenient reading, times from the events' clocks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from view_fixtures import T0, XSS, XSS_ID

from agent.languages.registry import failing_tests
from agent.view import ViewError, load
from agent.view.diff import split_diff
from agent.view.load import default_output, split_runs


def by_id(view_tasks: list, task_id: str):  # type: ignore[no-untyped-def]
    return next(t for t in view_tasks if t.id == task_id)


def test_a_batch_folder_lists_its_tasks_in_summary_order_then_the_unlisted(batch_out: Path) -> None:
    view = load(batch_out)
    assert view.kind == "batch"
    assert [t.id for t in view.tasks] == ["fix-ok", "fix-stopped", "fix-error", "fix-running"]
    assert view.totals.tasks == 4
    assert (view.totals.completed, view.totals.failed, view.totals.error) == (1, 1, 1)
    assert view.totals.tokens == 1700
    assert view.totals.tests_ok == 1
    assert view.totals.cost == pytest.approx(0.0123)
    assert view.totals.wall_time_s == pytest.approx(30.0)


def test_step_times_come_from_the_event_clocks(batch_out: Path) -> None:
    task = by_id(load(batch_out).tasks, "fix-ok")
    steps = [(s.number, round(s.start_s, 3), round(s.model_s, 3), round(s.tool_s, 3)) for s in task.timeline]
    # model time: from the step's previous event to its first reply; tool time: the calls' own durations
    assert steps == [(1, 0.0, 0.5, 0.2), (2, 0.7, 1.0, 0.1), (3, 1.8, 0.2, 1.5), (4, 3.5, 0.5, 0.0)]
    search = task.timeline[0].calls[0]
    assert search.start_s == pytest.approx(0.5, abs=1e-3)
    assert json.loads(search.arguments) == {"query": "def add"}
    assert search.content == "src/app.py:1: def add(a, b):"
    assert task.timeline[-1].final and task.final_message == "Fixed add()."


def test_a_model_retry_does_not_end_the_model_wait(batch_out: Path) -> None:
    task = by_id(load(batch_out).tasks, "fix-stopped")
    first = task.timeline[0]
    assert first.model_s == pytest.approx(8.0, abs=1e-3)
    assert first.notes == ["model retry 1 after 1.0s: rate limited"]
    denied = task.timeline[1].calls[0]
    assert (denied.decision, denied.outcome, denied.is_error) == ("deny", "denied", True)


def test_the_last_test_names_its_failing_tests(batch_out: Path) -> None:
    test = by_id(load(batch_out).tasks, "fix-stopped").test
    assert test is not None
    assert (test.outcome, test.exit_code, test.command) == ("failed", 1, "python3 -m pytest -q -x")
    assert test.failing == ["tests/test_app.py::test_add", "tests/test_app.py::test_sub[1-2]"]
    assert "2 failed, 2 passed" in test.output


def test_newer_report_keys_are_read_and_unknown_ones_kept(batch_out: Path) -> None:
    task = by_id(load(batch_out).tasks, "fix-ok")
    assert (task.input_tokens, task.output_tokens, task.total_tokens) == (1000, 200, 1200)
    assert task.cost == pytest.approx(0.0123)
    env = task.environment
    assert env["base_commit"] == "abc1234"
    assert env["attempt"] == "2" and env["node"] == "node-a" and env["base_dirty"] == "false"
    assert env["env.image"] == "codebox-env:1f2e" and env["policy"] == "workspace-write"
    assert task.patch is not None and task.patch.source == "patch.diff"


def test_a_diff_is_split_by_hunk_counts_not_by_line_prefixes(batch_out: Path) -> None:
    patch = by_id(load(batch_out).tasks, "fix-ok").patch
    assert patch is not None
    kinds = [kind for kind, _ in patch.lines]
    assert kinds == ["file", "file", "file", "hunk", "ctx", "del", "add", "del", "add"]
    assert (patch.files, patch.added, patch.removed) == (["src/app.py"], 2, 2)


def test_split_diff_new_deleted_and_no_newline_files() -> None:
    text = (
        "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n"
        "--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n"
        "--- a/ff.c\n+++ b/ff.c\n@@ -1 +1 @@\n-x\x0cy\n+x\u2028y\n"
    )
    split = split_diff(text)
    assert split.files == ["new.py", "old.py", "ff.c"]
    assert (split.added, split.removed) == (3, 2)
    assert ("note", "\\ No newline at end of file") in split.lines
    assert ("add", "+x\u2028y") in split.lines  # one line, not two


def test_a_running_task_shows_what_is_there_and_says_what_is_missing(batch_out: Path) -> None:
    task = by_id(load(batch_out).tasks, "fix-running")
    assert task.status == "running"
    assert [c.name for s in task.timeline for c in s.calls] == ["read_file"]
    assert any("torn last line" in w for w in task.warnings)
    assert any("no report" in w for w in task.warnings)


def test_a_report_without_events_shows_the_report_calls(batch_out: Path) -> None:
    task = by_id(load(batch_out).tasks, "fix-error")
    assert task.status == "error" and task.error == "no model given"
    assert task.timeline == []
    assert any("no events" in w for w in task.warnings)


def test_u2028_inside_an_event_does_not_split_the_line(xss_out: Path) -> None:
    task = by_id(load(xss_out).tasks, XSS_ID)
    assert not [w for w in task.warnings if "torn" in w]
    assert task.final_message == XSS + "\u2028\u2029 the end"
    assert task.goal == XSS


def test_one_task_folder_an_events_file_and_a_report_file(batch_out: Path) -> None:
    folder = batch_out / "fix-ok"
    for path in (folder, folder / "events.jsonl", folder / "report.json"):
        view = load(path)
        assert view.kind == "run"
        assert [t.id for t in view.tasks] == ["fix-ok"]
        assert len(view.tasks[0].timeline) == 4
    # from the events alone, the report comes from the last event
    assert load(folder / "events.jsonl").tasks[0].total_tokens == 1200


def test_an_events_file_with_runs_appended_is_a_page_per_run(batch_out: Path, tmp_path: Path) -> None:
    merged = tmp_path / "run.jsonl"
    ok, stopped = ((batch_out / name / "events.jsonl").read_text() for name in ("fix-ok", "fix-stopped"))
    text = ok * 2 + stopped
    merged.write_text(text)
    view = load(merged)
    assert view.kind == "batch"
    assert [t.id for t in view.tasks] == ["fix-ok", "fix-ok (2)", "fix-stopped"]
    events = [json.loads(line) for line in text.splitlines()]
    assert [len(run) for run in split_runs(events)] == [10, 10, 7]


def test_predictions_fill_in_a_missing_patch(batch_out: Path) -> None:
    patch_text = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    row = {"instance_id": "fix-stopped", "model_name_or_path": "m", "model_patch": patch_text}
    (batch_out / "predictions.jsonl").write_text(json.dumps(row) + "\n")
    patch = by_id(load(batch_out).tasks, "fix-stopped").patch
    assert patch is not None and patch.source == "predictions.jsonl" and patch.files == ["x"]


def test_hostile_numbers_do_not_break_loading(tmp_path: Path) -> None:
    report = {"task_id": "t", "status": "completed", "duration_s": "NaN", "steps": True, "started_at": 1e400,
              "usage": {"input_tokens": "many"}, "cost": float("inf"), "tool_calls": "lots", "weird": [1, {"a": None}]}
    (tmp_path / "report.json").write_text(json.dumps(report))
    (tmp_path / "events.jsonl").write_text(
        '{"type": "tool.end", "task_id": "t", "seq": 1, "step": 1, "time": Infinity, "data": {"duration_s": NaN}}\n'
        '[1, 2]\n"text"\n{"type": 5}\n'
    )
    task = load(tmp_path).tasks[0]
    assert task.duration_s == 0.0 and task.cost is None and task.started_at is None
    assert task.environment["weird"] == '[1, {"a": null}]'
    assert sum("not an event" in w for w in task.warnings) == 3


def test_nothing_to_show_is_an_error_with_a_message(tmp_path: Path) -> None:
    with pytest.raises(ViewError, match="does not exist"):
        load(tmp_path / "missing")
    with pytest.raises(ViewError, match="holds no runs"):
        load(tmp_path)
    (tmp_path / "x.jsonl").write_text("not json\n")
    with pytest.raises(ViewError, match="no codebox events"):
        load(tmp_path / "x.jsonl")
    (tmp_path / "r.json").write_text("[]")
    with pytest.raises(ViewError, match="not a JSON object"):
        load(tmp_path / "r.json")


def test_default_output_next_to_the_input(batch_out: Path) -> None:
    assert default_output(batch_out) == batch_out / "view.html"
    assert default_output(batch_out / "fix-ok" / "events.jsonl") == batch_out / "fix-ok" / "events.html"


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("FAILED tests/a.py::test_x - AssertionError: no\nFAILED tests/a.py::test_x", ["tests/a.py::test_x"]),
        ("tests/a.py::test_y FAILED                [ 50%]\ntests/a.py::test_z PASSED", ["tests/a.py::test_y"]),
        ("ERROR tests/b.py - ImportError", ["tests/b.py"]),
        ("FAIL: test_one (pkg.tests.TestA.test_one)\nERROR: test_two (pkg.tests.TestA)",
         ["pkg.tests.TestA.test_one", "pkg.tests.TestA.test_two"]),  # one name a test, as the report has it
        ("4 passed in 0.1s", []),
    ],
)
def test_failing_tests_from_pytest_and_unittest_output(output: str, expected: list[str]) -> None:
    assert failing_tests(output) == expected


def test_started_at_is_the_report_time(batch_out: Path) -> None:
    assert by_id(load(batch_out).tasks, "fix-ok").started_at == T0


def test_without_events_the_report_call_records_are_the_steps(tmp_path: Path) -> None:
    calls = [{"call_id": "a", "name": "search", "decision": "allow", "ok": True, "duration_s": 0.5},
             {"call_id": "b", "name": "apply_patch", "decision": "deny", "ok": False, "error": "Denied"}]
    (tmp_path / "report.json").write_text(json.dumps({"task_id": "t", "status": "stopped", "tool_calls": calls}))
    task = load(tmp_path / "report.json").tasks[0]
    assert task.tool_calls == 2
    [step] = task.timeline
    assert [(c.name, c.decision, c.is_error, c.content) for c in step.calls] == [
        ("search", "allow", False, ""), ("apply_patch", "deny", True, "Denied")]
    assert step.tool_s == 0.5


def test_two_tasks_claiming_one_id_get_two_pages(batch_out: Path) -> None:
    copy = batch_out / "fix-ok-again"
    copy.mkdir()
    (copy / "report.json").write_text((batch_out / "fix-ok" / "report.json").read_text())
    ids = [t.id for t in load(batch_out).tasks]
    assert ids.count("fix-ok") == 1 and "fix-ok (2)" in ids


def test_a_huge_diff_line_is_cut() -> None:
    split = split_diff("--- a/min.js\n+++ b/min.js\n@@ -1 +1 @@\n-" + "x" * 10_000 + "\n+y\n")
    kind, line = split.lines[3]
    assert kind == "del" and len(line) < 4100 and line.endswith("characters cut by the viewer]")
    assert (split.added, split.removed) == (1, 1)
