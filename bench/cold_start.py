"""Cold start and footprint, as ratios measured in one run (medians of interleaved reps).

    python bench/cold_start.py [--reps 20] [--image codebox-sandbox:latest]

Each rep runs every path once, in turn, so load on the machine hits them alike:

- create to first result: ``Sandbox(...)`` + its first ``read_file`` answered, vs
  ``docker run -d`` + ``docker exec cat`` through the CLI (goal <= 1.0x);
- a whole ``codebox run`` (a new process) with a scripted model making 2 tool calls, vs
  ``docker run --rm --network none <image> true`` (goal <= 1.5x);
- a batch task's start with a warm pool (claim its pre-started sandbox + first result),
  vs ``docker run --rm ... true`` (goal <= 0.2x);
- an idle sandbox's memory, from its cgroup (memory.usage_in_bytes, v1; memory.current, v2)
  (goal <= 20 MB);
- the host process's peak RSS for that ``codebox run`` (goal <= 30 MB).
"""

from __future__ import annotations

import argparse
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

from agent.containers.image import ensure_sandbox_image  # noqa: E402
from agent.containers.pool import PlannedTask, WarmPool  # noqa: E402
from agent.containers.sandbox import Sandbox, SandboxConfig  # noqa: E402

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


def _run_child(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall time and peak RSS (bytes) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        assert proc.stderr is not None
        raise SystemExit(f"{argv} failed ({proc.returncode}): {proc.stderr.read()[-2000:]!r}")
    return elapsed, usage.ru_maxrss * 1024


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
        # A batch's queue: each rep claims the next task, whose sandbox started during the last rep.
        self.plan = [PlannedTask(f"bench-warm-{i}", self.repo.resolve(), self.config) for i in range(1000)]
        self.pool = WarmPool(1, self.plan)
        self.next_warm = 0

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

    def warm_task_start(self) -> None:
        if self.next_warm == 0:  # the batch's first task starts its own; the pool warms the next
            self.pool.claim(self.plan[0].task_id, self.plan[0].repo, self.config)
            self.next_warm = 1
        planned = self.plan[self.next_warm]
        self.pool.wait_started(planned.task_id)  # the task before it ran for longer than a start
        holder: list[Sandbox] = []

        def go() -> None:
            sandbox = self.pool.claim(planned.task_id, planned.repo, planned.config)
            assert sandbox is not None, "no warm sandbox"
            holder.append(sandbox)
            assert sandbox.call("read_file", {"path": "README.md"}).ok

        self.add("batch task start, warm pool", _timed(go))
        holder[0].close()
        self.next_warm += 1

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
             bench.warm_task_start, bench.idle_memory]
    try:
        for path in paths:  # warm-up: image layers and bytecode in the page cache, the reap done
            path()
        bench.rows.clear()
        for rep in range(args.reps):
            for path in paths if rep % 2 == 0 else reversed(paths):
                path()
    finally:
        bench.pool.close()
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
    print("\nfigure                                              value      goal")
    for name, value, unit, goal in figures:
        verdict = "met" if value <= goal else "NOT met"
        print(f"  {name:<48} {value:7.2f}{unit:<3} <= {goal:g}{unit.strip() or 'x'}  {verdict}")
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n(this bench process: {own:.0f} MB peak RSS)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
