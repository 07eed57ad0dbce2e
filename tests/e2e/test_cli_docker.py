"""The codebox command as a user runs it: a real process, real signals, real containers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.console.render import summary_text
from tests import engine

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
DEMO_REPO = ROOT / "agent" / "cli" / "demo_data" / "repo"
SLOW_SCRIPT = {"turns": [{"tool_calls": [{"name": "run_test", "arguments": {}}]}, {"message": "never"}]}


@pytest.fixture(scope="module", autouse=True)
def _image() -> None:
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()


def codebox(*args: str, **kw: object) -> subprocess.Popen[str]:
    env = kw.pop("env", None) or {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "agent.cli", *args],
        cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw,  # type: ignore[call-overload]
    )


def containers_of(pid: int) -> list[str]:
    return [c["Names"][0].lstrip("/") for c in engine.containers(engine.docker(), f"codebox.owner={pid}")]


def wait_until_gone(pid: int, seconds: float = 10) -> list[str]:
    deadline = time.monotonic() + seconds
    left = containers_of(pid)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = containers_of(pid)
    return left


def slow_repo(tmp_path: Path, name: str = "repo") -> Path:
    repo = tmp_path / name
    shutil.copytree(DEMO_REPO, repo)
    (repo / "slow.py").write_text("import time\nprint('started', flush=True)\ntime.sleep(120)\n")
    return repo


def test_demo_runs_the_whole_pipeline_and_leaves_no_temporary_folder(tmp_path: Path) -> None:
    proc = codebox("demo", env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)})
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0, out
    assert "SCRIPTED" in out and "completed (final_message)" in out
    assert "Failed to find expected lines" in out  # the stale patch, retried
    assert "-    for n in range(1, attempts):" in out and "+    for n in range(attempts):" in out
    assert "To use a real model" in out and "--model scripted:FILE" in out
    # Its copy of the repository, its events and report: all gone (the image build's lock file stays).
    assert list(tmp_path.glob("codebox-demo-*")) == []
    assert "removed the demo's temporary folder" in out and "--keep keeps it" in out


def test_demo_keep_leaves_the_fixed_repository_its_events_and_report(tmp_path: Path) -> None:
    proc = codebox("demo", "--keep", env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)})
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0, out
    (kept,) = tmp_path.glob("codebox-demo-*")
    assert kept.name.startswith("codebox-demo-") and f"kept: {kept}" in out
    assert sorted(p.name for p in kept.iterdir()) == ["events.jsonl", "repo", "report.json"]
    assert "for n in range(attempts):" in (kept / "repo" / "backoff.py").read_text()
    assert json.loads((kept / "report.json").read_text())["status"] == "completed"


def test_the_demo_takes_the_runtime_setting_and_a_missing_one_is_said_before_any_step() -> None:
    proc = codebox("demo", "--runtime", "no-such-runtime")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, out
    assert "has no runtime 'no-such-runtime'" in out and "daemon.json" in out
    assert "0 tool calls" in out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_run_is_cancelled_cleanly_by_a_signal(tmp_path: Path, sig: signal.Signals) -> None:
    repo = slow_repo(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SLOW_SCRIPT))
    report_path = tmp_path / "report.json"
    proc = codebox("run", "--repo", str(repo), "--model", f"scripted:{script}", "--test-cmd", "python3 slow.py",
                   "--report", str(report_path), "--events", str(tmp_path / "events.jsonl"), "wait")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(
        '"tool.start"' in line for line in _lines(tmp_path / "events.jsonl")
    ):
        time.sleep(0.1)
    time.sleep(1.0)  # the test command is running now
    assert containers_of(proc.pid), "the run should have a container while the test runs"
    started = time.monotonic()
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=30)
    assert time.monotonic() - started < 15
    assert proc.returncode == 130, out
    report = json.loads(report_path.read_text())
    assert report["status"] == "cancelled" and report["stop_reason"] == "cancelled"
    events = [json.loads(line) for line in _lines(tmp_path / "events.jsonl")]
    assert events[-1]["type"] == "turn.end" and events[-1]["data"]["reason"] == "cancelled"
    assert wait_until_gone(proc.pid) == []


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


def test_batch_cancel_then_resume(tmp_path: Path) -> None:
    fast = {"turns": [{"tool_calls": [{"name": "search", "arguments": {"query": "delays"}}]}, {"message": "ok"}]}
    (tmp_path / "fast.json").write_text(json.dumps(fast))
    (tmp_path / "slow.json").write_text(json.dumps(SLOW_SCRIPT))
    lines = []
    for i in range(4):
        kind = "slow" if i == 3 else "fast"
        lines.append({"id": f"t{i}", "repo": str(slow_repo(tmp_path, f"r{i}")), "goal": "g",
                      "test_cmd": ["python3", "slow.py"], "model": f"scripted:{tmp_path / kind}.json"})
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out"

    proc = codebox("batch", str(tasks), "--jobs", "2", "--out", str(out))
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not any('"tool.start"' in x for x in _lines(out / "t3" / "events.jsonl")):
        time.sleep(0.1)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    text, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, text
    assert json.loads((out / "t3" / "report.json").read_text())["status"] == "cancelled"
    assert wait_until_gone(proc.pid) == []
    # Under load a fast task may be cancelled too: only the finished ones are skipped later.
    done_before = {
        p.parent.name for p in out.glob("*/report.json") if json.loads(p.read_text())["status"] != "cancelled"
    }

    # Resume with a script that finishes: finished tasks are skipped, the cancelled one runs again.
    lines[3]["model"] = f"scripted:{tmp_path / 'fast.json'}"
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    proc = codebox("batch", str(tasks), "--jobs", "2", "--out", str(out))
    text, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, text
    rows = [json.loads(line) for line in (out / "summary.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] == ["completed"] * 4
    finished_first = done_before
    assert finished_first, "some tasks should have finished before the cancel"
    assert f"{len(finished_first)} resumed" in text, text


@pytest.mark.parametrize("quiet", [True, False], ids=["quiet", "live-console"])
def test_ask_policy_prompts_on_the_terminal(tmp_path: Path, quiet: bool) -> None:
    import pty

    repo = tmp_path / "repo"
    shutil.copytree(DEMO_REPO, repo)

    def add(path: str) -> dict[str, object]:
        patch = f"*** Begin Patch\n*** Add File: {path}\n+x = 1\n*** End Patch\n"
        return {"tool_calls": [{"name": "apply_patch", "arguments": {"patch": patch}}]}

    script = tmp_path / "script.json"
    # refused once, then "always" for notes.py: the third write to it is not asked about
    script.write_text(json.dumps({"turns": [add("notes.py"), add("notes.py"), add("notes.py"), {"message": "ok"}]}))
    report_path = tmp_path / "report.json"
    pid, fd = pty.fork()
    if pid == 0:  # the child: codebox with the pty as its terminal
        os.chdir(ROOT)
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv(sys.executable, [sys.executable, "-m", "agent.cli", "run", "--repo", str(repo), "--policy", "ask",
                                  "--model", f"scripted:{script}", "--report", str(report_path),
                                  *(["--quiet"] if quiet else []), "go"])
    answers = ["n\n", "a\n"]
    given = 0
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break  # the child closed the terminal
            if not chunk:
                break
            seen += chunk
            if seen.count(b"these paths: ") > given:  # a new question: answer it
                os.write(fd, answers[given].encode())
                given += 1
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert seen.count(b"Allow?") == 2, seen.decode(errors="replace")
    assert b"notes.py" in seen
    report = json.loads(report_path.read_text())
    assert [c["decision"] for c in report["tool_calls"]] == ["deny", "allow", "allow"]
    assert (repo / "notes.py").read_text() == "x = 1\n"
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_missing_image_fails_fast_before_the_model_is_asked(tmp_path: Path) -> None:
    from agent.model.scripted import ScriptedModel
    from agent.protocol import TaskSpec
    from agent.sandboxes.config import SandboxConfig
    from agent.task.events import MemorySink
    from agent.task.runner import run_task

    model = ScriptedModel([{"message": "never asked"}])
    tmp_path.chmod(0o755)  # a root-owned repo must be world-readable (the tool container is never root)
    report = run_task(TaskSpec(repo=str(tmp_path), goal="g"), model, MemorySink(),
                      sandbox_config=SandboxConfig(image="codebox-no-such-image:none"))
    assert report.stop_reason == "sandbox_error" and "codebox image build" in (report.error or "")
    assert model.requests == []


def test_a_sandbox_that_cannot_start_ends_the_run_once_with_its_own_message(tmp_path: Path) -> None:
    from agent.model.scripted import ScriptedModel
    from agent.protocol import TaskSpec
    from agent.sandboxes.config import SandboxConfig
    from agent.task.events import MemorySink
    from agent.task.runner import run_task

    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]}
    model = ScriptedModel([read] * 5)
    started = time.monotonic()
    tmp_path.chmod(0o755)  # a root-owned repo must be world-readable (the tool container is never root)
    config = SandboxConfig(cpus=4096.0)  # a limit only the engine refuses: more CPUs than the machine has
    report = run_task(TaskSpec(repo=str(tmp_path), goal="g"), model, MemorySink(), sandbox_config=config)
    assert report.stop_reason == "sandbox_error", summary_text(report)
    assert "could not start" in (report.error or "") and "CPU" in (report.error or "")
    assert len(model.requests) == 1 and time.monotonic() - started < 10


def test_run_with_no_test_command_runs_pytest_where_the_repository_shows_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests" / "test_calc.py").write_text("from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"tool_calls": [{"name": "run_test", "arguments": {}}]},
                                            {"message": "done"}]}))
    report = tmp_path / "r.json"
    proc = codebox("run", "--repo", str(repo), "--env", "none", "--model", f"scripted:{script}",
                   "--report", str(report), "--require-tests", "run the tests")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "codebox: tests: python3 -m pytest -q (found tests/test_calc.py; --test-cmd to change)" in out
    last = json.loads(report.read_text())["last_test"]
    assert last["outcome"] == "ok" and last["command"] == ["python3", "-m", "pytest", "-q"]
    proc = codebox("run", "--repo", str(repo), "--env", "none", "--model", f"scripted:{script}",
                   "--test-cmd", "python3 -c pass", "--report", str(report), "run the tests")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "codebox: tests:" not in out, out
    assert json.loads(report.read_text())["last_test"]["command"] == ["python3", "-c", "pass"]
