"""Cold start and footprint, as ratios measured in one run (medians of interleaved reps).

    python bench/cold_start.py [--reps 20] [--image codebox-sandbox:latest]

Each rep runs every path once, in turn, so load on the machine hits them alike:

- create to first result: ``Sandbox(...)`` + its first ``read_file`` answered, vs
  ``docker run -d`` + ``docker exec cat`` through the CLI (goal <= 1.0x);
- a whole ``codebox run`` (a new process) with a scripted model making 2 tool calls, vs
  ``docker run --rm --network none <image> true`` (goal <= 1.5x);
- a batch task's start with a warm pool: the second task of a ``run_batch`` at --jobs 1, from
  its start to its first tool result (its workspace made and its sandbox started while the
  first task ran), vs ``docker run --rm ... true`` (goal <= 0.2x); the same task of a batch
  without the pool, for comparison;
- an idle sandbox's memory, from its cgroup (memory.usage_in_bytes, v1; memory.current, v2)
  (goal <= 20 MB);
- the host process's peak RSS for that ``codebox run`` (goal <= 30 MB);
- what one more running task costs the host process of a batch (not a goal of its own, but what
  bounds how many tasks a batch server holds): the peak RSS of ``codebox batch`` running 8 tasks
  at once (each holds its sandbox for a 2 s test run) minus that of the same batch at --jobs 1,
  divided by 7.

codebox's own bytecode is compiled first (``compileall``), as an installed package has it: with
PYTHONDONTWRITEBYTECODE set (as on this machine) every run would otherwise compile the host
package from source.
"""

from __future__ import annotations

import argparse
import compileall
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent.batch import run_batch  # noqa: E402
from agent.console.batch_view import BatchView  # noqa: E402
from agent.console.render import summary_text  # noqa: E402
from agent.containers.image import ensure_sandbox_image  # noqa: E402
from agent.containers.sandbox import Sandbox  # noqa: E402
from agent.protocol import AgentEvent, Report, TaskSpec  # noqa: E402
from agent.sandboxes.config import SandboxConfig  # noqa: E402

MB = 1024 * 1024
SCRIPT = {
    "turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {"tool_calls": [{"name": "search", "arguments": {"query": "hello"}}]},
        {"message": "done"},
    ]
}


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout.strip()


def _cgroup_memory(container_id: str) -> int | None:
    """Bytes the container's memory cgroup charges (page cache included, as docker stats counts it)."""
    for path in (
        f"/sys/fs/cgroup/memory/docker/{container_id}/memory.usage_in_bytes",
        f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/memory.current",
    ):
        try:
            return int(Path(path).read_text())
        except OSError:
            continue
    return None


# Runs argv as ITS child and prints "<seconds> <peak RSS KiB> <exit code>". A child forked (vfork)
# straight from this bench would report this bench's own peak (~40 MB) as its ru_maxrss: the
# kernel carries the parent's high-water mark over the exec. Forked from a small interpreter
# instead, the measured process reports its own.
_TRAMPOLINE = """
import os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - t0, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def _run_child(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall time and peak RSS (bytes) of one child process."""
    done = subprocess.run([sys.executable, "-S", "-c", _TRAMPOLINE, *argv], env=env, capture_output=True,
                          text=True, check=False)
    elapsed, rss_kib, code = done.stdout.split()[-3:] if done.stdout.split() else ("0", "0", "-1")
    if done.returncode != 0 or int(code) != 0:
        raise SystemExit(f"{argv} failed ({code}): {done.stderr[-2000:]!r}")
    return float(elapsed), int(rss_kib) * 1024


class _StartWatch(BatchView):
    """The batch's own progress view, plus when each task started and had its first tool result."""

    def __init__(self, total: int, pause_after: str, pause_s: float) -> None:
        super().__init__(total, io.StringIO())
        self.started_at: dict[str, float] = {}
        self.first_result_at: dict[str, float] = {}
        self.pause_after, self.pause_s = pause_after, pause_s

    def started(self, task_id: str) -> None:
        self.started_at[task_id] = time.perf_counter()
        super().started(task_id)

    def finished(self, report: Report) -> None:
        super().finished(report)
        if report.task_id == self.pause_after:  # stands for a real task, which runs longer than a start
            time.sleep(self.pause_s)

    def on_event(self, task_id: str, event: AgentEvent) -> None:
        if event.type == "tool.end":
            self.first_result_at.setdefault(task_id, time.perf_counter())
        super().on_event(task_id, event)


class Bench:
    def __init__(self, image: str, work: Path) -> None:
        self.image = image
        self.config = SandboxConfig(image=image)
        self.repo = work / "repo"
        self.repo.mkdir()
        (self.repo / "README.md").write_text("hello from the bench\n")
        self.script = work / "script.json"
        self.script.write_text(json.dumps(SCRIPT))
        self.env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.rows: dict[str, list[float]] = {}
        self.work = work
        self.batches = 0

    def add(self, key: str, value: float) -> None:
        self.rows.setdefault(key, []).append(value)

    def median(self, key: str) -> float:
        return statistics.median(self.rows[key])

    # -- the paths ----------------------------------------------------------------------------
    def sandbox_first_result(self) -> None:
        holder: list[Sandbox] = []

        def go() -> None:
            sandbox = Sandbox(self.repo, self.config, task_id="bench-cold")
            holder.append(sandbox)
            assert sandbox.call("read_file", {"path": "README.md"}).ok

        self.add("codebox create -> first result", _timed(go))
        holder[0].close()

    def docker_run_exec(self) -> None:
        ids: list[str] = []

        def go() -> None:
            mount = f"{self.repo}:/repo:ro"
            ids.append(_docker("run", "-d", "--network", "none", "-v", mount, self.image, "sleep", "600"))
            _docker("exec", ids[0], "cat", "/repo/README.md")

        self.add("docker run -d + docker exec", _timed(go))
        _docker("rm", "-f", ids[0])

    def codebox_run(self) -> None:
        argv = [sys.executable, "-m", "agent.cli", "run", "--quiet", "--repo", str(self.repo),
                "--model", f"scripted:{self.script}", "--image", self.image, "bench"]
        elapsed, rss = _run_child(argv, self.env)
        self.add("codebox run (scripted, 2 calls)", elapsed)
        self.add("host RSS of codebox run", rss)

    def docker_run_true(self) -> None:
        run_true = ("run", "--rm", "--network", "none", self.image, "true")
        self.add("docker run --rm true", _timed(lambda: _docker(*run_true)))

    def _second_task_start(self, warm: bool) -> float:
        """A batch of two tasks at --jobs 1: the second one's start -> its first tool result."""
        self.batches += 1
        ids = [f"bench-batch-{self.batches}-{i}" for i in range(2)]
        tasks = [TaskSpec(id=t, repo=str(self.repo), goal="bench", model=f"scripted:{self.script}") for t in ids]
        view = _StartWatch(len(ids), pause_after=ids[0], pause_s=2.0)
        out = self.work / f"out-{self.batches}"
        reports = run_batch(tasks, out, jobs=1, sandbox_config=self.config, view=view, warm=warm)
        shutil.rmtree(out, ignore_errors=True)
        assert [r.status for r in reports] == ["completed", "completed"], [summary_text(r) for r in reports]
        return view.first_result_at[ids[1]] - view.started_at[ids[1]]

    def warm_task_start(self) -> None:
        self.add("batch task start, warm pool", self._second_task_start(warm=True))

    def cold_task_start(self) -> None:
        self.add("batch task start, no pool", self._second_task_start(warm=False))

    def batch_rss(self, jobs: int, tasks: int = 8) -> int:
        """Peak RSS (bytes) of a `codebox batch` process running ``tasks`` tasks at --jobs ``jobs``."""
        script = self.work / "wait.json"
        script.write_text(json.dumps({"turns": [{"tool_calls": [{"name": "run_test", "arguments": {}}]},
                                                {"message": "done"}]}))
        lines = [json.dumps({"id": f"hold-{i}", "repo": str(self.repo), "goal": "hold the sandbox",
                             "test_cmd": ["sleep", "2"], "model": f"scripted:{script}"}) for i in range(tasks)]
        task_file = self.work / "hold.jsonl"
        task_file.write_text("\n".join(lines) + "\n")
        self.batches += 1
        out = self.work / f"batch-rss-{self.batches}"
        argv = [sys.executable, "-m", "agent.cli", "batch", str(task_file), "--jobs", str(jobs), "--out", str(out),
                "--image", self.image, "--env", "none"]
        _, rss = _run_child(argv, self.env)
        shutil.rmtree(out, ignore_errors=True)
        return rss

    def idle_memory(self) -> None:
        with Sandbox(self.repo, self.config, task_id="bench-idle") as sandbox:
            [cid] = sandbox.container_ids
            time.sleep(1.0)
            idle = _cgroup_memory(cid)
            assert sandbox.call("read_file", {"path": "README.md"}).ok
            assert sandbox.call("search", {"query": "hello"}).ok
            time.sleep(0.5)
            used = _cgroup_memory(cid)
        if idle is not None and used is not None:
            self.add("idle sandbox memory (cgroup)", idle)
            self.add("sandbox memory after read_file + search", used)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=20, help="interleaved reps (default 20)")
    parser.add_argument("--image", default=SandboxConfig().image)
    args = parser.parse_args(argv)
    image = ensure_sandbox_image(log=lambda _msg: None) if args.image == SandboxConfig().image else args.image
    work = Path(tempfile.mkdtemp(prefix="codebox-bench-cold-"))
    bench = Bench(image, work)
    paths = [bench.sandbox_first_result, bench.docker_run_exec, bench.codebox_run, bench.docker_run_true,
             bench.warm_task_start, bench.cold_task_start, bench.idle_memory]
    for package in ("agent", "sandbox"):
        compileall.compile_dir(str(ROOT / package), quiet=2)
    try:
        for path in paths:  # warm-up: image layers and bytecode in the page cache, the reap done
            path()
        bench.rows.clear()
        for rep in range(args.reps):
            for path in paths if rep % 2 == 0 else reversed(paths):
                path()
        for _ in range(3):  # a batch's host memory per running task: few reps, each takes seconds
            bench.add("batch host RSS, 8 tasks at --jobs 1", bench.batch_rss(jobs=1))
            bench.add("batch host RSS, 8 tasks at --jobs 8", bench.batch_rss(jobs=8))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    m = bench.median
    print(f"\nmedians of {args.reps} interleaved reps (this machine: {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.1f})")
    for key in bench.rows:
        value = m(key)
        shown = f"{value / MB:8.1f} MB" if "memory" in key or "RSS" in key else f"{value * 1000:8.1f} ms"
        print(f"  {key:<42} {shown}")
    figures = [
        ("create -> first result / docker run -d + exec",
         m("codebox create -> first result") / m("docker run -d + docker exec"), "x", 1.0),
        ("codebox run (2 calls) / docker run --rm true",
         m("codebox run (scripted, 2 calls)") / m("docker run --rm true"), "x", 1.5),
        ("batch task start (warm) / docker run --rm true",
         m("batch task start, warm pool") / m("docker run --rm true"), "x", 0.2),
    ]
    if "idle sandbox memory (cgroup)" in bench.rows:
        figures.append(("idle sandbox memory (cgroup)", m("idle sandbox memory (cgroup)") / MB, " MB", 20.0))
    figures.append(("host process peak RSS, codebox run", m("host RSS of codebox run") / MB, " MB", 30.0))
    per_task = (m("batch host RSS, 8 tasks at --jobs 8") - m("batch host RSS, 8 tasks at --jobs 1")) / 7
    print(f"\n  one more running task in a batch costs the host process {per_task / MB:.1f} MB")
    print("\nfigure                                              value      goal")
    for name, value, unit, goal in figures:
        verdict = "met" if value <= goal else "NOT met"
        print(f"  {name:<48} {value:7.2f}{unit:<3} <= {goal:g}{unit.strip() or 'x'}  {verdict}")
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n(this bench process: {own:.0f} MB peak RSS)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
