"""What the agent loop adds, and what the sandbox costs a test suite — measured in one run.

1. A tool call through the WHOLE loop (scripted model -> registry -> policy -> sandbox ->
   history -> events): N read_file calls in one run, per-call median from the events,
   next to a bare Sandbox.call of the same read and a host read.
2. A test suite in the sandbox (run_test, read-only repo, no network) vs the same suite
   run with the same command on the host.

    python bench/loop_overhead.py [--calls 300] [--suite-tests 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.console.render import summary_text  # noqa: E402
from agent.containers.image import ensure_sandbox_image  # noqa: E402
from agent.containers.sandbox import Sandbox  # noqa: E402
from agent.model.scripted import ScriptedModel  # noqa: E402
from agent.protocol import TaskSpec  # noqa: E402
from agent.sandboxes.config import SandboxConfig  # noqa: E402
from agent.task.events import MemorySink  # noqa: E402
from agent.task.runner import run_task  # noqa: E402

TEST_CMD = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def loop_per_call(repo: Path, calls: int, image: str) -> tuple[float, float, float]:
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "backoff.py"}}]} for _ in range(calls)
    ]
    turns.append({"message": "done"})
    sink = MemorySink()
    task = TaskSpec(repo=str(repo), goal="read", max_steps=calls + 5, timeout_s=600)
    from agent.task.loop import Limits

    report = run_task(task, ScriptedModel(turns), sink, sandbox_config=SandboxConfig(image=image),
                      limits=Limits(max_steps=calls + 5, loop_guard_repeats=calls + 5))
    assert report.status == "completed", summary_text(report)
    # Per call through the loop: from one tool.start to the next (model turn, policy, sandbox,
    # history, events), skipping the first (the sandbox's warm-up).
    starts = [e.time for e in sink.events if e.type == "tool.start"]
    gaps = [b - a for a, b in itertools.pairwise(starts[1:])]
    loop_ms = 1000 * statistics.median(gaps)

    with Sandbox(repo, SandboxConfig(image=image)) as sandbox:
        bare = []
        for _ in range(calls):
            t = time.perf_counter()
            sandbox.call("read_file", {"path": "backoff.py"})
            bare.append(time.perf_counter() - t)
    host = []
    for _ in range(calls):
        t = time.perf_counter()
        (repo / "backoff.py").read_text()
        host.append(time.perf_counter() - t)
    return loop_ms, 1000 * statistics.median(bare), 1000 * statistics.median(host)


def make_suite(repo: Path, tests: int) -> None:
    per_file = 50
    (repo / "tests").mkdir(exist_ok=True)
    (repo / "tests" / "test_backoff.py").unlink(missing_ok=True)  # the demo's bug is not what we time
    for f in range(max(1, tests // per_file)):
        body = ["import json, re\n"]
        for i in range(per_file):
            body.append(
                f"def test_{f}_{i}():\n"
                f"    data = {{'n': {i}, 'xs': list(range(200))}}\n"
                f"    assert json.loads(json.dumps(data))['n'] == {i}\n"
                f"    assert re.findall(r'\\d+', ' '.join(map(str, data['xs'])))[-1] == '199'\n"
            )
        (repo / "tests" / f"test_gen_{f}.py").write_text("\n".join(body))


def suite_times(repo: Path, rounds: int, image: str) -> tuple[list[float], list[float]]:
    inside, host = [], []
    with Sandbox(repo, SandboxConfig(image=image)) as sandbox:
        for _ in range(rounds):
            t = time.perf_counter()
            reply = sandbox.call("run_test", {"argv": TEST_CMD, "timeout_s": 300})
            inside.append(time.perf_counter() - t)
            assert reply.ok, reply.output
            t = time.perf_counter()
            subprocess.run([sys.executable, *TEST_CMD[1:]], cwd=repo, check=True, capture_output=True,
                           env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp",
                                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})  # the sandbox has no plugins either
            host.append(time.perf_counter() - t)
    return inside, host


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--suite-tests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    image = ensure_sandbox_image()
    work = Path(tempfile.mkdtemp(prefix="codebox-bench-loop-"))
    try:
        repo = work / "repo"
        shutil.copytree(ROOT / "agent" / "cli" / "demo_data" / "repo", repo)
        loop_ms, bare_ms, host_ms = loop_per_call(repo, args.calls, image)
        make_suite(repo, args.suite_tests)
        inside, host = suite_times(repo, args.rounds, image)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    mi, mh = statistics.median(inside), statistics.median(host)
    print(f"{'path':<58} {'median':>10}")
    print(f"{'read_file through the whole agent loop (per call)':<58} {loop_ms:>8.3f}ms")
    print(f"{'read_file via Sandbox.call (bare)':<58} {bare_ms:>8.3f}ms")
    print(f"{'read on the host, in-process':<58} {host_ms:>8.3f}ms")
    print(f"{f'test suite ({args.suite_tests} tests) via run_test in the sandbox':<58} {mi:>9.3f}s")
    print(f"{'the same suite on the host (this python, its pytest)':<58} {mh:>9.3f}s")
    print("\nratios (this run)")
    print(f"  loop call / bare sandbox call     {loop_ms / bare_ms:6.2f}x   (target: loop call <= 3 ms)")
    print(f"  suite in sandbox / suite on host  {mi / mh:6.2f}x   (target: <= 1.2x)")


if __name__ == "__main__":
    main()
