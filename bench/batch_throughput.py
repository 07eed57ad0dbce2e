"""Batch throughput: 40 demo-kind tasks (scripted model, real sandbox) at --jobs 1, 2, 4, 8.

Prints, per jobs value, measured in this one run:
- tasks per minute (wall clock of the whole batch),
- peak memory per sandbox container (cgroup v1 max_usage, sampled), and the runner's own peak RSS,
- where a task's time goes: in tool calls (as the report times them) vs codebox's overhead
  (container start/stop, the loop, events, reports), as medians per task.

    python bench/batch_throughput.py [--tasks 40] [--jobs 1,2,4,8]
"""

from __future__ import annotations

import argparse
import io
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import agent.task.runner  # noqa: E402
from agent.batch import run_batch  # noqa: E402
from agent.containers.image import ensure_sandbox_image  # noqa: E402
from agent.protocol import Report, TaskSpec  # noqa: E402
from agent.sandboxes.config import SandboxConfig  # noqa: E402

DEMO = ROOT / "agent" / "cli" / "demo_data"
CGROUP = Path("/sys/fs/cgroup/memory/docker")


class MemorySampler:
    """Polls the memory cgroup of every running container; keeps each one's peak."""

    def __init__(self, interval_s: float = 0.2) -> None:
        self.interval_s = interval_s
        self.peaks: dict[str, int] = {}
        self.max_running = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            running = 0
            for d in CGROUP.glob("*/memory.max_usage_in_bytes"):
                try:
                    value = int(d.read_text())
                except (OSError, ValueError):
                    continue
                running += 1
                key = d.parent.name
                self.peaks[key] = max(self.peaks.get(key, 0), value)
            self.max_running = max(self.max_running, running)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def make_tasks(workdir: Path, count: int) -> list[TaskSpec]:
    tasks = []
    for i in range(count):
        repo = workdir / f"repo{i:03d}"
        shutil.copytree(DEMO / "repo", repo)
        tasks.append(
            TaskSpec(
                id=f"t{i:03d}",
                repo=str(repo),
                goal="fix the retry delays",
                policy="workspace-write",
                test_cmd=["python3", "-m", "pytest", "-q"],
                timeout_s=300,
            )
        )
    return tasks


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def timed_run_task(durations: dict[str, float]) -> Callable[..., Report]:
    """run_task, timed whole: sandbox start, the loop, the tools, sandbox removal."""
    original = agent.task.runner.run_task

    def run(task: TaskSpec, *args: Any, **kwargs: Any) -> Report:
        started = time.monotonic()
        try:
            return original(task, *args, **kwargs)
        finally:
            durations[task.id] = time.monotonic() - started

    return run


def run_one(jobs: int, count: int, image: str) -> dict[str, float]:
    workdir = Path(tempfile.mkdtemp(prefix=f"codebox-bench-j{jobs}-"))
    durations: dict[str, float] = {}
    original = agent.task.runner.run_task
    agent.task.runner.run_task = timed_run_task(durations)  # type: ignore[assignment]
    try:
        tasks = make_tasks(workdir, count)
        with MemorySampler() as sampler:
            started = time.monotonic()
            reports = run_batch(
                tasks,
                workdir / "out",
                model=f"scripted:{DEMO / 'script.json'}",
                jobs=jobs,
                sandbox_config=SandboxConfig(image=image),
                progress_stream=io.StringIO(),
            )
            wall = time.monotonic() - started
        ok = sum(1 for r in reports if r.status == "completed")
        in_tools = [sum(c.duration_s for c in r.tool_calls) for r in reports]
        whole = [durations[r.task_id] for r in reports]
        overhead = [w - t for w, t in zip(whole, in_tools, strict=True)]
        peaks = sorted(sampler.peaks.values())
        return {
            "jobs": jobs,
            "ok": ok,
            "tasks": len(reports),
            "wall_s": wall,
            "tasks_per_min": 60 * len(reports) / wall,
            "task_s": median(whole),
            "tools_s": median(in_tools),
            "overhead_s": median(overhead),
            "ctr_peak_mib": (peaks[len(peaks) // 2] / 2**20) if peaks else float("nan"),
            "ctr_peak_max_mib": (peaks[-1] / 2**20) if peaks else float("nan"),
            "containers_seen": len(peaks),
            "max_running": sampler.max_running,
        }
    finally:
        agent.task.runner.run_task = original  # type: ignore[assignment]
        shutil.rmtree(workdir, ignore_errors=True)


def failures(reports: list[Report]) -> list[str]:
    return [f"{r.task_id}: {r.stop_reason} {r.error}" for r in reports if r.status != "completed"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--jobs", default="1,2,4,8")
    args = parser.parse_args()
    image = ensure_sandbox_image()
    rows = [run_one(int(j), args.tasks, image) for j in args.jobs.split(",")]
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    header = (
        f"{'jobs':>4} {'ok':>6} {'tasks/min':>9} {'vs j1':>6} {'wall s':>7} {'task s':>7} "
        f"{'tools s':>7} {'ovh s':>6} {'ovh %':>6} {'ctr MiB':>8} {'max MiB':>8} {'peak ctrs':>9}"
    )
    print(header)
    base = rows[0]["tasks_per_min"]
    for r in rows:
        print(
            f"{r['jobs']:>4.0f} {r['ok']:>3.0f}/{r['tasks']:<2.0f} {r['tasks_per_min']:>9.1f} "
            f"{r['tasks_per_min'] / base:>6.2f} {r['wall_s']:>7.1f} {r['task_s']:>7.2f} {r['tools_s']:>7.2f} "
            f"{r['overhead_s']:>6.2f} {100 * r['overhead_s'] / r['task_s']:>6.1f} {r['ctr_peak_mib']:>8.1f} "
            f"{r['ctr_peak_max_mib']:>8.1f} {r['max_running']:>9.0f}"
        )
    print(f"\nrunner process peak RSS: {rss_mib:.0f} MiB (whole bench)")
    print("ctr MiB = median per-container peak (cgroup max_usage); a task runs a tool and a write container")
    print("task s = run_task whole (tool container start .. removal); tools s = inside tool calls,")
    print("  which includes starting the write container on the first apply_patch")
    print("ovh = task s - tools s: tool container start and removal, the loop, events, report")


if __name__ == "__main__":
    main()
