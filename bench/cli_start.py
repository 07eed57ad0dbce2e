"""The host command's own start: `codebox --help`, a scripted `codebox run --quiet`, and when
the run's container reaches the Docker daemon.

    python bench/cli_start.py [--reps 7] [--codebox PATH [--codebox PATH]] [--image codebox-sandbox:latest]

``--codebox`` is the command to measure (an installed ``codebox`` script, e.g. another
checkout's .venv/bin/codebox); by default this checkout's ``python -m agent.cli.parser``. Given twice,
both are measured in the same reps, interleaved (load on the machine hits them alike). Each rep
runs, for each command in turn: ``codebox --help``, ``codebox run --help``, a scripted run (2 tool calls: read_file,
search) and ``docker run --rm --network none <image> true``; the wall time and the peak RSS of
each child come from wait4. While the runs go, ``docker events`` records the run's container
(by its owner label, the child's pid): ``create``, ``start`` and ``die`` after the process began.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = {
    "turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {"tool_calls": [{"name": "search", "arguments": {"query": "hello"}}]},
        {"message": "done"},
    ]
}
OWNER_LABEL = "codebox.owner"


class Events:
    """`docker events` for codebox containers, in a thread: (time ns, action, owner label) tuples."""

    def __init__(self) -> None:
        fmt = "{{.TimeNano}} {{.Action}} {{index .Actor.Attributes \"" + OWNER_LABEL + "\"}}"
        self.proc = subprocess.Popen(
            ["docker", "events", "--format", fmt, "--filter", "type=container", "--filter", f"label={OWNER_LABEL}"],
            stdout=subprocess.PIPE, text=True,
        )
        self.seen: list[tuple[int, str, str]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            parts = line.split()
            if len(parts) >= 3 and parts[0].isdigit():
                with self.lock:
                    self.seen.append((int(parts[0]), parts[1].split(":")[0], parts[2]))

    def of(self, owner: int, since_ns: int) -> dict[str, float]:
        """Milliseconds after ``since_ns`` of the first of each action of this owner's containers."""
        with self.lock:
            found: dict[str, float] = {}
            for t, action, label in self.seen:
                if label.split(":")[0] == str(owner) and action not in found:
                    found[action] = (t - since_ns) / 1e6
        return found

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait()


def run_child(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, int]:
    """(wall s, peak RSS MB, pid, start time ns) of one child; it must exit 0."""
    start_ns = time.time_ns()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        assert proc.stderr is not None
        raise SystemExit(f"{argv} failed: {proc.stderr.read()[-2000:]!r}")
    return elapsed, usage.ru_maxrss / 1024, proc.pid, start_ns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--codebox", action="append", default=[],
                        help="a codebox command to measure (default: this checkout); give two to compare, "
                             "their runs interleaved")
    parser.add_argument("--image", default="codebox-sandbox:latest")
    args = parser.parse_args(argv)
    commands = [[c] for c in args.codebox] or [[sys.executable, "-m", "agent.cli"]]
    env = dict(os.environ) if args.codebox else {**os.environ, "PYTHONPATH": str(ROOT)}
    work = Path(tempfile.mkdtemp(prefix="codebox-bench-cli-"))
    (work / "repo").mkdir()
    (work / "repo" / "README.md").write_text("hello\n")
    (work / "script.json").write_text(json.dumps(SCRIPT))
    docker_true = ["docker", "run", "--rm", "--network", "none", args.image, "true"]
    rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
    timeline: dict[tuple[str, str], list[float]] = {}
    events = Events()
    try:
        for rep in range(args.reps + 1):  # the first rep warms the page cache and is not counted
            for codebox in commands if rep % 2 == 0 else reversed(commands):
                who = " ".join(codebox)
                paths = {
                    "codebox --help": [*codebox, "--help"],
                    "codebox run --help": [*codebox, "run", "--help"],
                    "codebox run (scripted, 2 calls)": [
                        *codebox, "run", "--quiet", "--repo", str(work / "repo"),
                        "--model", f"scripted:{work / 'script.json'}", "--image", args.image, "read it"],
                    "docker run --rm true": docker_true,
                }
                for name, command in paths.items():
                    wall, rss, pid, start_ns = run_child(command, env)
                    if rep == 0:
                        continue
                    rows.setdefault((who, name), []).append((wall, rss))
                    if name.startswith("codebox run ("):
                        time.sleep(0.3)  # the die event may arrive after the process is gone
                        for action, ms in events.of(pid, start_ns).items():
                            timeline.setdefault((who, action), []).append(ms)
    finally:
        events.close()
    print(f"medians of {args.reps} reps; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    for codebox in commands:
        who = " ".join(codebox)
        print(who)
        for (row_who, name), values in rows.items():
            if row_who != who:
                continue
            walls, rsss = [w for w, _ in values], [r for _, r in values]
            print(f"  {name:<34} {statistics.median(walls) * 1000:7.0f} ms (min {min(walls) * 1000:.0f})"
                  f"  {statistics.median(rsss):6.1f} MB peak RSS")
        run_wall = statistics.median(w for w, _ in rows[(who, "codebox run (scripted, 2 calls)")])
        true_wall = statistics.median(w for w, _ in rows[(who, "docker run --rm true")])
        print(f"  run / docker run --rm true: {run_wall / true_wall:.2f}x (goal <= 1.5x)")
        print("  the run's container, ms after the process began (docker events, median):")
        for action in ("create", "start", "die", "destroy"):
            if (who, action) in timeline:
                times = timeline[(who, action)]
                print(f"    {action:<8} {statistics.median(times):7.0f} ms  (min {min(times):.0f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
