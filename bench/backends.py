"""What a sandbox backend x runtime costs, in one run with interleaved reps, as ratios to docker-runc.

    python bench/backends.py [--targets docker:runc,docker:runsc,podman:runc,podman:runsc] [--reps 5]
                             [--calls 100] [--runs 3]

Per target, through the seam (agent.backends.registry), as a task makes its sandbox:
- per call: the median of ``--calls`` round trips of ping (the attach stream and the server, no
  file), read_file (plus the file system under /repo), a literal search and a regex search (under
  runsc a literal search runs in the server's own Python, a regex one starts ripgrep);
- create -> first result: a session's start (create, attach, start, first answer) plus one read_file;
- a whole run: `codebox run` of a scripted 2-call task (read_file, run_test), process start to exit.
Each rep visits every target in turn (the order rotates), so drift on a loaded machine hits all.
A target this machine lacks is reported and left out. runsc-kvm (gVisor's KVM platform) can be
named too where the daemon has it registered.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent.backends.registry import backend_for  # noqa: E402
from agent.errors import SandboxError  # noqa: E402
from agent.sandboxes.base import Session  # noqa: E402
from agent.sandboxes.config import SandboxConfig  # noqa: E402

CALLS = {"ping": ("ping", {}), "read_file": ("read_file", {"path": "pkg/mod_0.py"}),
         "search": ("search", {"query": "needle_7"}), "regex": ("search", {"query": "needle_7\\b", "regex": True})}


def _repo(root: Path) -> Path:
    repo = root / "repo"
    (repo / "pkg").mkdir(parents=True)
    for i in range(50):
        (repo / "pkg" / f"mod_{i}.py").write_text(f"def needle_{i}():\n    return {i}\n" * 20)
    repo.chmod(0o755)
    return repo


def _per_call(box: Session, calls: int) -> dict[str, float]:
    out = {}
    for name, (tool, args) in CALLS.items():
        for _ in range(3):
            box.call(tool, args)
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            result = box.call(tool, args)
            times.append(time.perf_counter() - t0)
            assert result.ok, result.output
        out[name] = statistics.median(times)
    return out


def _first_result(config: SandboxConfig, repo: Path, n: int) -> tuple[float, Session]:
    box = backend_for(config).session(repo, config, task_id=f"bench-backends-{n}")
    t0 = time.perf_counter()
    box.start()
    assert box.call("read_file", {"path": "pkg/mod_0.py"}).ok
    return time.perf_counter() - t0, box


def _whole_run(config: SandboxConfig, repo: Path, work: Path) -> float:
    script = work / "script.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "pkg/mod_0.py"}}]},
        {"tool_calls": [{"name": "run_test", "arguments": {}}]},
        {"message": "done"},
    ]}))
    argv = [sys.executable, "-m", "agent.cli", "run", "--quiet", "--repo", str(repo), "--model", f"scripted:{script}",
            "--backend", config.backend, "--runtime", config.runtime, "--image", config.image, "--env", "none",
            "--test-cmd", "true", "go"]
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=300)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise SandboxError(done.stdout[-500:] + done.stderr[-500:])
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", default="docker:runc,docker:runsc,podman:runc,podman:runsc")
    parser.add_argument("--reps", type=int, default=5, help="interleaved reps of start and per-call (default 5)")
    parser.add_argument("--calls", type=int, default=100, help="calls per tool per rep (default 100)")
    parser.add_argument("--runs", type=int, default=3, help="whole `codebox run`s per target (default 3)")
    parser.add_argument("--image", default=SandboxConfig().image)
    args = parser.parse_args(argv)
    targets: list[SandboxConfig] = []
    for item in args.targets.split(","):
        backend, _, runtime = item.partition(":")
        config = SandboxConfig(backend=backend, runtime=runtime or "runc", image=args.image)
        try:
            backend_for(config).preflight(config)
        except SandboxError as exc:
            print(f"{item}: left out ({exc})".splitlines()[0][:200])
            continue
        targets.append(config)
    if not targets:
        return 1
    names = [f"{t.backend}-{t.runtime}" for t in targets]
    first: dict[str, list[float]] = {n: [] for n in names}
    calls: dict[str, dict[str, list[float]]] = {n: {c: [] for c in CALLS} for n in names}
    runs: dict[str, list[float]] = {n: [] for n in names}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="codebox-bench-backends-") as tmp:
        work = Path(tmp)
        repo = _repo(work)
        for rep in range(args.reps):
            order = targets[rep % len(targets):] + targets[: rep % len(targets)]
            for config in order:
                name = f"{config.backend}-{config.runtime}"
                took, box = _first_result(config, repo, rep)
                try:
                    first[name].append(took)
                    for tool, value in _per_call(box, args.calls).items():
                        calls[name][tool].append(value)
                finally:
                    box.close()
            if rep < args.runs:
                for config in order:
                    runs[f"{config.backend}-{config.runtime}"].append(_whole_run(config, repo, work))
    base = names[0]
    head = f"{'target':<16}{'ping ms':>9}{'read ms':>9}{'search ms':>11}{'regex ms':>10}{'first s':>9}{'run s':>8}"
    print(f"\n{head}   ratios to {base}: ping, read, search, regex, first, run")
    for name in names:
        med = {tool: statistics.median(calls[name][tool]) for tool in CALLS}
        f, r = statistics.median(first[name]), statistics.median(runs[name]) if runs[name] else float("nan")
        bmed = {tool: statistics.median(calls[base][tool]) for tool in CALLS}
        bf, br = statistics.median(first[base]), statistics.median(runs[base]) if runs[base] else float("nan")
        ratios = [med[tool] / bmed[tool] for tool in CALLS] + [f / bf, r / br]
        print(f"{name:<16}{med['ping'] * 1e3:>9.2f}{med['read_file'] * 1e3:>9.2f}{med['search'] * 1e3:>11.2f}"
              f"{med['regex'] * 1e3:>10.2f}{f:>9.3f}{r:>8.3f}   " + ", ".join(f"{x:.2f}x" for x in ratios))
    print(f"\n({args.reps} interleaved reps x {args.calls} calls per tool; {args.runs} whole runs per target; "
          f"{os.cpu_count()} cores, load {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
