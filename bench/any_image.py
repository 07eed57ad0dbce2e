"""The in-box server on its injected runtime, in codebox's image and in foreign ones (issue 34).

    python bench/any_image.py [--reps 8] [--runtimes runc,runsc] [--calls 20]

Each rep runs every path once, in turn (interleaved), so load on the machine hits them alike;
medians are printed with the load average beside them:

- create -> first tool result (``Sandbox.start()`` + one ``read_file``), for each image on the
  injected runtime (codebox's own, bullseye, busybox FROM scratch, musl, PyPy), and on the image's
  own python3 where it can run the server (the old way: codebox's image, bullseye's CPython 3.9);
  each divided by codebox's image on the injected runtime (goal <= 1.1x);
- per call: the median of ``--calls`` read_file calls in a started sandbox, and ``docker exec cat``
  of the same file in that container (goal <= 0.03x);
- a whole ``codebox run`` (new process, scripted model, 2 calls) in codebox's image and in the
  busybox one, divided by ``docker run --rm --network none IMAGE true``;
- the interpreter's own start inside a box (no container start around it: the least noisy
  figure): the injected runtime through its loader vs the image's python3, both ``-I -S`` and
  importing what the server imports at boot, 20 interleaved starts per rep, in codebox's image
  and in bullseye's (its CPython 3.9).

The foreign images come from tests/foreign_images.py (built offline the first time).
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
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import agent.containers.launch as launch  # noqa: E402
from agent.containers.engine_api import connect_engine  # noqa: E402
from agent.containers.image import ensure_sandbox_image  # noqa: E402
from agent.containers.runtime import Runtime, ensure_runtime  # noqa: E402
from agent.containers.sandbox import Sandbox  # noqa: E402
from agent.sandboxes.config import SandboxConfig  # noqa: E402
from tests.foreign_images import foreign_image  # noqa: E402

SCRIPT = {"turns": [
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
    {"tool_calls": [{"name": "search", "arguments": {"query": "hello"}}]},
    {"message": "done"},
]}


def _own_python() -> Runtime | None:
    return None  # container_options then runs the server on the image's python3 (the old way)


def _sandbox(repo: Path, image: str, runtime: str, injected: bool) -> Sandbox:
    launch.ensure_runtime = ensure_runtime if injected else _own_python  # type: ignore[assignment]
    return Sandbox(repo, SandboxConfig(image=image, runtime=runtime), task_id="bench-any-image")


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


class Bench:
    def __init__(self, work: Path, calls: int) -> None:
        self.repo = work / "repo"
        self.repo.mkdir()
        (self.repo / "README.md").write_text("hello any image\n" * 20)
        self.repo.chmod(0o755)
        self.script = work / "script.json"
        self.script.write_text(json.dumps(SCRIPT))
        self.calls = calls
        self.samples: dict[str, list[float]] = {}

    def add(self, key: str, value: float) -> None:
        self.samples.setdefault(key, []).append(value)

    def median(self, key: str) -> float:
        return statistics.median(self.samples[key])

    def first_result(self, label: str, image: str, runtime: str, injected: bool, per_call: bool) -> None:
        box = _sandbox(self.repo, image, runtime, injected)
        try:
            def go() -> None:
                box.start()
                assert box.call("read_file", {"path": "README.md"}).ok

            self.add(f"first result | {label}", _timed(go))
            if per_call:
                times = [_timed(lambda: box.call("read_file", {"path": "README.md"})) for _ in range(self.calls)]
                self.add(f"per call | {label}", statistics.median(times))
                [cid] = box.container_ids
                argv = ["docker", "exec", cid, "cat", "/repo/README.md"]
                self.add(f"docker exec cat | {label}",
                         _timed(lambda: subprocess.run(argv, capture_output=True, check=True)))
        finally:
            box.close()
            launch.ensure_runtime = ensure_runtime  # type: ignore[assignment]

    def whole_run(self, label: str, image: str) -> None:
        argv = [sys.executable, "-m", "agent.cli", "run", "--quiet", "--repo", str(self.repo), "--model",
                f"scripted:{self.script}", "--image", image, "--env", "none", "--test-cmd", "true", "go"]
        environ = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.add(f"codebox run | {label}",
                 _timed(lambda: subprocess.run(argv, cwd=ROOT, env=environ, capture_output=True, check=True)))
        true = ["docker", "run", "--rm", "--network", "none", image, "true"]
        self.add(f"docker run --rm true | {label}",
                 _timed(lambda: subprocess.run(true, capture_output=True, check=True)))


BOOT_IMPORTS = "import json, os, re, select, signal, sys, threading, time, gc, contextlib"
STARTS = f"""
import statistics, subprocess, sys, time
injected = ["/.codebox/lib/ld-linux-x86-64.so.2", "--library-path", "/.codebox/lib", "/.codebox/bin/python3.11"]
argvs = {{"injected": [*injected, "-I", "-S", "-c", {BOOT_IMPORTS!r}],
          "own": ["python3", "-I", "-S", "-c", {BOOT_IMPORTS!r}]}}
times = {{k: [] for k in argvs}}
for _ in range(20):
    for k, argv in argvs.items():
        t0 = time.perf_counter()
        subprocess.run(argv, check=True)
        times[k].append(time.perf_counter() - t0)
print("STARTS", statistics.median(times["injected"]), statistics.median(times["own"]))
"""


def interpreter_starts(bench: Bench, label: str, image: str) -> None:
    box = _sandbox(bench.repo, image, "runc", True)
    try:
        box.start()
        out = box.call("run_test", {"argv": ["python3", "-c", STARTS], "timeout_s": 120}).output
        injected, own = (float(x) for x in out.split("STARTS ", 1)[1].split()[:2])
        bench.add(f"start injected | {label}", injected)
        bench.add(f"start own | {label}", own)
    finally:
        box.close()
        launch.ensure_runtime = ensure_runtime  # type: ignore[assignment]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=8)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--runtimes", default="runc,runsc")
    args = parser.parse_args()
    # A tag of its own: on a machine where another codebox checkout retags codebox-sandbox:latest
    # meanwhile, the runs here keep the image this checkout built.
    client = connect_engine()
    client.tag_image(ensure_sandbox_image(log=lambda _m: None), "codebox-bench-any", "own")
    own = "codebox-bench-any:own"
    ensure_runtime()
    images = {"codebox": own, **{name: foreign_image(name) for name in ("bullseye", "busybox", "musl", "pypy")}}
    paths: list[tuple[str, str, str, bool]] = []  # (label, image, runtime, injected)
    for runtime in args.runtimes.split(","):
        for name, image in images.items():
            paths.append((f"{name} {runtime} injected", image, runtime, True))
        for name in ("codebox", "bullseye"):  # the images whose own python3 can run the server
            paths.append((f"{name} {runtime} own python3", images[name], runtime, False))
    with tempfile.TemporaryDirectory(prefix="codebox-bench-any-") as work:
        bench = Bench(Path(work), args.calls)
        for label, image, runtime, injected in paths[:2]:  # warm-up: page cache, the daemon's image store
            bench.first_result(label, image, runtime, injected, per_call=False)
        bench.samples.clear()
        load_before = os.getloadavg()[0]
        for rep in range(args.reps):
            for label, image, runtime, injected in paths:
                bench.first_result(label, image, runtime, injected, per_call=runtime == "runc")
            for name in ("codebox", "busybox"):
                bench.whole_run(name, images[name])
            for name in ("codebox", "bullseye"):
                interpreter_starts(bench, name, images[name])
            print(f"rep {rep + 1}/{args.reps} done, load {os.getloadavg()[0]:.1f}", file=sys.stderr)
        load_after = os.getloadavg()[0]
    print(f"load average {load_before:.1f} -> {load_after:.1f}; medians of {args.reps} interleaved reps")
    for runtime in args.runtimes.split(","):
        base = bench.median(f"first result | codebox {runtime} injected")
        print(f"\ncreate -> first result, {runtime} (÷ codebox's image on the injected runtime):")
        for label, _, rt, _ in paths:
            if rt == runtime:
                value = bench.median(f"first result | {label}")
                print(f"  {label:34s} {value * 1000:7.1f} ms  {value / base:5.2f}x")
    print("\nper call (read_file, median of medians) ÷ docker exec cat, runc:")
    for label, _, runtime, _ in paths:
        if runtime == "runc":
            call, exe = bench.median(f"per call | {label}"), bench.median(f"docker exec cat | {label}")
            print(f"  {label:34s} {call * 1000:6.2f} ms / {exe * 1000:6.1f} ms = {call / exe:.3f}x")
    print("\ninterpreter start in the box, with the server's boot imports (median of 20 per rep):")
    for name in ("codebox", "bullseye"):
        inj, own_ = bench.median(f"start injected | {name}"), bench.median(f"start own | {name}")
        print(f"  {name:10s} injected {inj * 1000:6.1f} ms / image's python3 {own_ * 1000:6.1f} ms = {inj / own_:.2f}x")
    print("\nwhole 2-call codebox run ÷ docker run --rm true:")
    for name in ("codebox", "busybox"):
        run, true = bench.median(f"codebox run | {name}"), bench.median(f"docker run --rm true | {name}")
        print(f"  {name:10s} {run * 1000:6.0f} ms / {true * 1000:6.0f} ms = {run / true:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
