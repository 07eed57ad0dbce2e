"""The same batch on the local engine and on a one-machine Ray cluster, in one run.

One task at a time on both (local --jobs 1; a Ray head with 1 codebox_slot), so a batch's
wall clock is the sum of its tasks. Batches of --small and --large tasks, interleaved reps;
per engine the slope (seconds per extra task) and the intercept (fixed cost per batch) of
wall clock against batch size. Ray's per-task overhead = slope(ray) - slope(local); its
per-batch cost = intercept(ray) - intercept(local) (the board actor, image probe, snapshot).
ray.init is measured apart (the driver connects once). Memory: RSS of the head node's
processes, of a worker node's (no slots: its idle footprint), and of a Ray worker process
that ran codebox tasks.

    python bench/engines.py [--small 2] [--large 10] [--reps 3]
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # keep 127.0.0.1 (see agent.engines.ray)
os.environ["CODEBOX_NODE_GC"] = "0"  # a shared machine: other runs' leftovers are theirs

from agent.batch import run_batch  # noqa: E402
from agent.containers.image import ensure_sandbox_image  # noqa: E402
from agent.engines import LocalEngine  # noqa: E402
from agent.engines.ray import RayEngine  # noqa: E402
from agent.protocol import TaskSpec  # noqa: E402


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env)
    return repo


def make_tasks(root: Path, repo: Path, count: int, tag: str) -> list[TaskSpec]:
    """Demo-kind tasks: read a file, write a fix, finish (a real sandbox, a scripted model)."""
    patch = "*** Begin Patch\n*** Update File: calc.py\n@@\n-    return a - b\n+    return a + b\n*** End Patch\n"
    turns = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
             {"tool_calls": [{"name": "apply_patch", "arguments": {"patch": patch}}]},
             {"message": "fixed"}]
    script = root / "script.json"
    script.write_text(json.dumps({"turns": turns}))
    return [TaskSpec(id=f"{tag}-{i}", repo=str(repo), goal="fix add", policy="workspace-write",
                     model=f"scripted:{script}") for i in range(count)]


GAPS: dict[str, list[float]] = {}


def timed_batch(engine: object, tasks: list[TaskSpec], out: Path, name: str = "") -> float:
    """Wall clock of the batch; the gaps between one task's last event and the next one's first
    (one task at a time: the engine's own work between tasks, workspace and patch included) go to GAPS."""
    start = time.perf_counter()
    reports = run_batch(tasks, out, engine=engine, progress_stream=io.StringIO())  # type: ignore[arg-type]
    elapsed = time.perf_counter() - start
    bad = [r for r in reports if r.status != "completed"]
    if bad or len(reports) != len(tasks):
        raise SystemExit(f"batch failed: {[(r.task_id, r.error) for r in bad]}")
    spans = []
    for task in tasks:
        times = [json.loads(line)["time"] for line in (out / task.id / "events.jsonl").read_text().splitlines()]
        spans.append((min(times), max(times)))
    spans.sort()
    GAPS.setdefault(name, []).extend(b[0] - a[1] for a, b in itertools.pairwise(spans))
    return elapsed


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rfind(")") + 2:].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def node_services(node: object) -> dict[str, float]:
    """RSS (MB) of a node's own processes: gcs, raylet, monitors, and the raylet's agents."""
    out: dict[str, float] = {}
    for kind, processes in node.all_processes.items():  # type: ignore[attr-defined]
        for info in processes:
            out[kind] = out.get(kind, 0.0) + rss_mb(info.process.pid)
    raylet = node.all_processes["raylet"][0].process.pid  # type: ignore[attr-defined]
    for pid in children(raylet):
        name = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        if "Agent" in name:
            out[name] = out.get(name, 0.0) + rss_mb(pid)
    return out


def worker_processes(node: object) -> list[float]:
    raylet = node.all_processes["raylet"][0].process.pid  # type: ignore[attr-defined]
    sizes = []
    for pid in children(raylet):
        name = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        if "Agent" not in name:
            sizes.append(rss_mb(pid))
    return sizes


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Slope and intercept through the medians of the two batch sizes."""
    sizes = sorted({p[0] for p in points})
    small, large = (statistics.median(t for n, t in points if n == size) for size in (sizes[0], sizes[-1]))
    slope = (large - small) / (sizes[-1] - sizes[0])
    return slope, small - slope * sizes[0]


def _noop() -> int:
    return 0


def components(ray: object, repo: Path, root: Path, reps: int = 20) -> tuple[dict[str, float], dict[str, float]]:
    """The parts of Ray's per-task work, each timed alone (medians, ms)."""
    from agent.engines.node import local_image_id
    from agent.engines.ray import _Board
    from agent.engines.snapshot import make_snapshot, shared_source, unpack_snapshot

    remote = ray.remote(_noop).options(num_cpus=0, resources={"codebox_slots": 1})  # type: ignore[attr-defined]
    board = ray.remote(_Board).options(num_cpus=0).remote()  # type: ignore[attr-defined]
    ray.get(remote.remote())  # type: ignore[attr-defined]
    ray.get(board.start.remote("warm"))  # type: ignore[attr-defined]
    snap = make_snapshot(repo)

    def median_ms(fn: object) -> float:
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            fn()  # type: ignore[operator]
            times.append((time.perf_counter() - start) * 1000)
        return statistics.median(times)

    count = iter(range(10**6))

    def unpack() -> None:
        folder = root / f"unpack-{next(count)}"
        folder.mkdir()
        unpack_snapshot(snap.kind, snap.data, folder)

    def shared() -> None:
        with shared_source(snap.kind, snap.data, snap.digest, "bench", root / "sources"):
            pass

    out = {
        "dispatch (empty task on a slot, round trip)": median_ms(lambda: ray.get(remote.remote())),  # type: ignore[attr-defined]
        "board.start (actor call)": median_ms(lambda: ray.get(board.start.remote("t"))),  # type: ignore[attr-defined]
        "snapshot from the node's copy (a lock)": median_ms(shared),
        "image check (cached in the worker process)": 0.0,
    }
    once = {  # once per node and batch
        "unpack the snapshot (git clone --bare of the bundle)": median_ms(unpack),
        "image check (docker image inspect by id)": median_ms(lambda: local_image_id("codebox-sandbox:latest")),
    }
    ray.kill(board)  # type: ignore[attr-defined]
    return out, once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=2)
    parser.add_argument("--large", type=int, default=10)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    ensure_sandbox_image(log=lambda _m: None)
    import ray
    from ray.cluster_utils import Cluster

    root = Path(tempfile.mkdtemp(prefix="cbench-", dir="/tmp"))
    os.environ["RAY_TMPDIR"] = str(root)
    node = {"num_cpus": 1, "object_store_memory": 100 * 2**20, "node_ip_address": "127.0.0.1"}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "resources": {"codebox_slots": 1},
                                                            "include_dashboard": False})
    try:
        worker = cluster.add_node(**node, resources={"codebox_slots": 0})
        cluster.wait_for_nodes()
        start = time.perf_counter()
        ray.init(address=cluster.address, log_to_driver=False, logging_level="WARNING")
        init_s = time.perf_counter() - start
        repo = make_repo(root)
        local, on_ray = LocalEngine(jobs=1), RayEngine(address=cluster.address)
        timed_batch(on_ray, make_tasks(root, repo, 1, "warm-ray"), root / "warm-ray")  # worker processes up
        timed_batch(local, make_tasks(root, repo, 1, "warm-local"), root / "warm-local")
        points: dict[str, list[tuple[int, float]]] = {"local": [], "ray": []}
        for rep in range(args.reps):
            for size in (args.small, args.large):
                for name, engine in (("local", local), ("ray", on_ray)):
                    tag = f"{name}-{size}-{rep}"
                    elapsed = timed_batch(engine, make_tasks(root, repo, size, tag), root / tag, name)
                    points[name].append((size, elapsed))
        parts, once = components(ray, repo, root)
        (slope_local, icpt_local), (slope_ray, icpt_ray) = fit(points["local"]), fit(points["ray"])
        head_mem, worker_mem = node_services(cluster.head_node), node_services(worker)
        task_workers = worker_processes(cluster.head_node)
        print(f"batches of {args.small} and {args.large} tasks, one at a time, {args.reps} interleaved reps\n")
        print(f"{'engine':8} {'s per task':>11} {'s per batch':>12}")
        print(f"{'local':8} {slope_local:11.3f} {icpt_local:12.3f}")
        print(f"{'ray':8} {slope_ray:11.3f} {icpt_ray:12.3f}")
        overhead = slope_ray - slope_local
        print(f"\nfrom batch wall clocks (noisy on a shared machine): ray per-task overhead "
              f"{overhead * 1000:.0f} ms ({overhead / slope_local:.1%} of a local task; "
              f"goal < 50 ms)")
        gap_local, gap_ray = statistics.median(GAPS["local"]), statistics.median(GAPS["ray"])
        print(f"between two tasks (median of {len(GAPS['ray'])}; workspace, patch, dispatch): local "
              f"{gap_local * 1000:.0f} ms, ray {gap_ray * 1000:.0f} ms -> ray per-task overhead "
              f"{(gap_ray - gap_local) * 1000:.0f} ms")
        print(f"ray per-task work, each part timed alone: {sum(parts.values()):.0f} ms  "
              + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()))
        print("  once per node and batch: " + ", ".join(f"{k} {v:.1f}" for k, v in once.items()))
        print(f"ray per-batch cost: {icpt_ray - icpt_local:.2f} s; ray.init (once per driver): {init_s:.2f} s")
        print(f"\nhead node RSS: {sum(head_mem.values()):.0f} MB  "
              + ", ".join(f"{k} {v:.0f}" for k, v in sorted(head_mem.items())))
        print(f"worker node RSS (idle): {sum(worker_mem.values()):.0f} MB  "
              + ", ".join(f"{k} {v:.0f}" for k, v in sorted(worker_mem.items())))
        print(f"Ray worker processes on the head after the batches: {len(task_workers)}, "
              f"RSS {', '.join(f'{s:.0f}' for s in sorted(task_workers))} MB")
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
