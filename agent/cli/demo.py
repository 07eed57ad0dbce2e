"""`codebox demo`: the whole pipeline, on a fresh machine with no model key.

A scripted model drives a real sandbox on a copy of a small repository with a real bug:
search, read, a patch that fails on stale context and is retried, a failing test run,
a second fix, a passing test run, the final message.
"""

from __future__ import annotations

import difflib
import shutil
import sys
import tempfile
from pathlib import Path

from agent.cancel import CancelToken
from agent.cli.signals import cancel_on_signals
from agent.console.live import RunConsole
from agent.console.render import print_summary
from agent.escape import printable
from agent.model.scripted import ScriptedModel
from agent.protocol import TaskSpec
from agent.task.events import FanoutSink, JsonlSink
from agent.task.runner import run_task

DEMO_DIR = Path(__file__).resolve().parent / "demo_data"
TEST_CMD = ["python3", "-m", "pytest", "-q"]


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def _diff(before: dict[str, str], after: dict[str, str]) -> str:
    out: list[str] = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name, ""), after.get(name, "")
        if a != b:
            out.extend(
                difflib.unified_diff(
                    a.splitlines(keepends=True), b.splitlines(keepends=True), f"a/{name}", f"b/{name}"
                )
            )
    return "".join(out)


def run_demo(keep: bool = False, image: str | None = None, out: Path | None = None, runtime: str | None = None) -> int:
    """The demo, in a temporary folder removed at the end (whatever happens) unless ``keep``.
    ``out``: where the events and the report go (default: the temporary folder)."""
    from agent.containers.image import ImageError, ensure_sandbox_image

    say = print
    say("codebox demo — the model is SCRIPTED (agent/cli/demo_data/script.json): no model key or network needed.")
    say("Everything else is real: the agent loop, the policy, and a network-less Docker sandbox per task.\n")
    try:
        tag = image or ensure_sandbox_image(log=lambda line: say(f"  [image] {printable(line)}"))
    except ImageError as exc:
        print(f"codebox: {exc}", file=sys.stderr)
        return 1
    workdir = Path(tempfile.mkdtemp(prefix="codebox-demo-"))
    try:
        return _run_in(workdir, tag, out or workdir, runtime, keep)
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _run_in(workdir: Path, tag: str, out: Path, runtime: str | None, keep: bool) -> int:
    from agent.defaults import DEFAULT_RUNTIME
    from agent.sandboxes.config import SandboxConfig

    say = print
    repo = workdir / "repo"
    shutil.copytree(DEMO_DIR / "repo", repo)
    before = _snapshot(repo)
    say(f"repository: a copy of the bundled demo repo at {repo}")
    task = TaskSpec(
        id="demo",
        repo=str(repo),
        goal="Users report that the first retry waits twice as long as configured and that one retry is "
        "missing. Find the bug in the retry delays, fix it, and make the test suite pass.",
        policy="workspace-write",
        allow=["**/*.py"],
        test_cmd=TEST_CMD,
        max_steps=20,
        timeout_s=300,
    )
    events = out / "events.jsonl"
    sink = FanoutSink(RunConsole(sys.stdout), JsonlSink(events))
    cancel = CancelToken()
    try:
        with cancel_on_signals(cancel):
            report = run_task(
                task,
                ScriptedModel.from_file(DEMO_DIR / "script.json"),
                sink,
                sandbox_config=SandboxConfig(image=tag, runtime=runtime or DEFAULT_RUNTIME),
                cancel=cancel,
            )
    finally:
        sink.close()
    print_summary(report, sys.stdout)
    diff = _diff(before, _snapshot(repo))
    say("\ndiff of the repository:\n" + (printable(diff, multiline=True) or "(no change)"))
    report_path = out / "report.json"
    report_path.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    if keep or out != workdir:
        say(f"events: {events}\nreport: {report_path}")
    if keep:
        say(f"kept: {workdir} (the repository, its events and report)")
    else:
        say(f"removed the demo's temporary folder {workdir} (--keep keeps it: the repository, events and report)")
    say(
        "\nTo use a real model: codebox run --repo PATH --model gpt-4.1 "
        '--policy workspace-write --test-cmd "python3 -m pytest -q" "your goal"\n'
        "  (OPENAI_API_KEY for OpenAI; --base-url http://127.0.0.1:8000/v1 for vLLM, Ollama, llama.cpp, LM Studio)\n"
        "  No key? A script of your own drives it the demo's way: --model scripted:FILE (docs/scripted-model.md)"
    )
    return 0 if report.status == "completed" else 1
