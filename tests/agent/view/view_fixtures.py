"""Runs on disk for the viewer tests: a batch --out folder written the way codebox writes one
(events through JsonlSink, reports from the Report model, plus the newer keys other parts add),
and a hostile task whose every string is an XSS payload."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.protocol import AgentEvent, Report, TestRun, ToolCallRecord, Usage
from agent.task.events import JsonlSink

# Each payload sets window.__xss if it ever runs; the page must show all of them as text.
XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2"></script><script>window.__xss=3</script>'
XSS_ID = '"><img src=x onerror="window.__xss=4">'
XSS_FILE = "src/<script>window.__xss=5</script>.py"
T0 = 1_800_000_000.0

FAILING_OUTPUT = """$ python3 -m pytest -q
exit code 1 (failed) after 1.20 s
--- stdout (400 bytes) ---
.F.F
=================================== FAILURES ===================================
FAILED tests/test_app.py::test_add - assert 3 == 4
FAILED tests/test_app.py::test_sub[1-2] - AssertionError
2 failed, 2 passed in 0.05s"""

PATCH = """diff --git a/src/app.py b/src/app.py
--- a/src/app.py
+++ b/src/app.py
@@ -1,3 +1,3 @@
 def add(a, b):
-    return a - b
+    return a + b
-- a removed line that looks like a header
+++ an added line that looks like a header
"""


class RunWriter:
    """Writes one run's events with chosen clock times, as the agent loop would."""

    def __init__(self, path: Path, task_id: str) -> None:
        self.sink = JsonlSink(path)
        self.task_id = task_id
        self.seq = 0

    def emit(self, type_: str, step: int, at: float, **data: Any) -> None:
        self.seq += 1
        event = AgentEvent(type=type_, task_id=self.task_id, seq=self.seq, step=step, time=T0 + at, data=data)
        self.sink.emit(event)

    def call(self, step: int, at: float, name: str, args: dict[str, Any], duration: float, content: str,
             is_error: bool = False, outcome: str = "ok", decision: str = "allow") -> None:
        call_id = f"call_{self.seq + 1}"
        self.emit("tool.start", step, at, name=name, call_id=call_id, arguments=args, decision=decision,
                  reason="allowed by the fixture", asked=False, write_paths=[])
        self.emit("tool.end", step, at + duration, name=name, call_id=call_id, decision=decision,
                  is_error=is_error, outcome=outcome, duration_s=duration, content=content, summary=name, data={})

    def close(self) -> None:
        self.sink.close()


def _report(task_id: str, goal: str, **fields: Any) -> Report:
    base: dict[str, Any] = {
        "task_id": task_id, "goal": goal, "repo": "/repos/app", "model": "gpt-test",
        "status": "completed", "stop_reason": "final_message", "started_at": T0, "duration_s": 10.0,
    }
    base.update(fields)
    return Report(**base)


def _write_report(folder: Path, report: Report, **extra: Any) -> None:
    data = report.model_dump(mode="json")
    data.update(extra)  # keys newer codebox versions add: the viewer must take them as they come
    (folder / "report.json").write_text(json.dumps(data, indent=2), encoding="utf-8")


def _ok_task(out: Path) -> None:
    folder = out / "fix-ok"
    folder.mkdir()
    run = RunWriter(folder / "events.jsonl", "fix-ok")
    run.emit("turn.start", 0, 0.0, goal="Make add() add", repo="/repos/app", model="gpt-test",
             policy="workspace-write", max_steps=30)
    run.emit("message", 1, 0.5, text="Looking for add().", final=False, finish_reason="tool_calls", usage=None)
    run.call(1, 0.5, "search", {"query": "def add"}, 0.2, "src/app.py:1: def add(a, b):")
    run.call(2, 1.7, "apply_patch", {"patch": "*** Begin Patch ..."}, 0.1, "patched src/app.py")
    run.call(3, 2.0, "run_test", {}, 1.5, "$ python3 -m pytest -q\nexit code 0 (passed)\n4 passed")
    run.emit("message", 4, 4.0, text="Fixed add().", final=True, finish_reason="stop", usage=None)
    report = _report(
        "fix-ok", "Make add() add", steps=4, duration_s=4.2, final_message="Fixed add().",
        files_changed=["src/app.py"], usage=Usage(input_tokens=1000, output_tokens=200, total_tokens=1200),
        tool_calls=[ToolCallRecord(call_id="c", name=n, decision="allow", ok=True, duration_s=0.1)
                    for n in ("search", "apply_patch", "run_test")],
        last_test=TestRun(command=["python3", "-m", "pytest", "-q"], outcome="ok", exit_code=0, duration_s=1.5),
    )
    run.emit("turn.end", 4, 4.2, reason="final_message", status="completed", report=report.model_dump(mode="json"))
    run.close()
    _write_report(folder, report, base_commit="abc1234", base_dirty=False, attempt=2, node="node-a",
                  cost_usd=0.0123, env={"image": "codebox-env:1f2e", "python": "3.11"},
                  patch={"files": ["src/app.py"], "added": 2, "removed": 2})
    (folder / "patch.diff").write_text(PATCH, encoding="utf-8")


def _stopped_task(out: Path) -> None:
    folder = out / "fix-stopped"
    folder.mkdir()
    run = RunWriter(folder / "events.jsonl", "fix-stopped")
    run.emit("turn.start", 0, 0.0, goal="Fix subtraction", repo="/repos/app", model="gpt-test", policy="read-only")
    run.emit("model.retry", 1, 2.0, attempt=1, wait_s=1.0, reason="rate limited")
    run.call(1, 8.0, "run_test", {"args": ["-x"]}, 2.0, FAILING_OUTPUT, is_error=True, outcome="failed")
    run.call(2, 12.0, "apply_patch", {"patch": "x"}, 0.0, "Denied by policy", is_error=True, outcome="denied",
             decision="deny")
    report = _report(
        "fix-stopped", "Fix subtraction", status="stopped", stop_reason="max_steps", steps=2, duration_s=30.0,
        error="stopped after 2 model steps", usage=Usage(input_tokens=400, output_tokens=100, total_tokens=500),
        last_test=TestRun(command=["python3", "-m", "pytest", "-q", "-x"], outcome="failed", exit_code=1),
    )
    run.emit("turn.end", 2, 30.0, reason="max_steps", status="stopped", report=report.model_dump(mode="json"))
    run.close()
    _write_report(folder, report)


def _error_task(out: Path) -> None:
    folder = out / "fix-error"
    folder.mkdir()
    _write_report(folder, _report("fix-error", "Never starts", status="error", stop_reason="model_error",
                                  duration_s=0.0, error="no model given"))


def _running_task(out: Path) -> None:
    """A task still going: events and no report, the last line half written."""
    folder = out / "fix-running"
    folder.mkdir()
    run = RunWriter(folder / "events.jsonl", "fix-running")
    run.emit("turn.start", 0, 0.0, goal="Still going", repo="/repos/app", model="gpt-test", policy="read-only")
    run.call(1, 3.0, "read_file", {"path": "README.md"}, 0.05, "# app")
    run.close()
    with (folder / "events.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"type": "tool.start", "task_id": "fix-run')


def _xss_task(out: Path) -> None:
    folder = out / "xss"
    folder.mkdir()
    run = RunWriter(folder / "events.jsonl", XSS_ID)
    run.emit("turn.start", 0, 0.0, goal=XSS, repo=XSS, model=XSS, policy="workspace-write")
    run.emit("message", 1, 1.0, text=XSS, final=False, finish_reason="tool_calls", usage=None)
    run.call(1, 1.0, XSS, {XSS: XSS, "path": XSS_FILE}, 0.3, XSS, is_error=True, outcome=XSS)
    run.call(2, 2.0, "run_test", {}, 0.5, f"FAILED tests/test_x.py::{XSS} - boom\n{XSS}", is_error=True,
             outcome="failed")
    run.emit("message", 3, 3.0, text=XSS + "\u2028\u2029 the end", final=True, finish_reason="stop", usage=None)
    run.close()
    report = _report(
        XSS_ID, XSS, repo=XSS, model=XSS, final_message=XSS + "\u2028\u2029 the end", files_changed=[XSS_FILE],
        error=XSS, steps=3, last_test=TestRun(command=[XSS], outcome="failed", exit_code=1),
    )
    _write_report(folder, report, env={XSS: XSS}, node=XSS)
    (folder / "patch.diff").write_text(
        f"--- a/{XSS_FILE}\n+++ b/{XSS_FILE}\n@@ -1 +1 @@\n-{XSS}\n+{XSS}\n", encoding="utf-8"
    )


def write_batch(out: Path, hostile: bool = False) -> Path:
    out.mkdir()
    for make in (_ok_task, _stopped_task, _error_task, _running_task):
        make(out)
    rows = [{"task_id": t, "status": s} for t, s in
            (("fix-ok", "completed"), ("fix-stopped", "stopped"), ("fix-error", "error"))]
    (out / "summary.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    if hostile:
        _xss_task(out)
    return out
