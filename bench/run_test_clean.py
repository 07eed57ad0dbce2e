"""What a clean start costs each run_test (fresh HOME and TMPDIR, /tmp emptied), in one run, as ratios.

    python bench/run_test_clean.py [--n 40] [--image codebox-sandbox:latest]

Through a real sandbox: the round trip of ``run_test ["true"]`` (which now includes the clean
start) and of ``run_test ["python3", "-c", "pass"]``; then, inside the container, the clean-start
steps alone (``_make_scratch`` + ``_remove_tree`` of it, ``_wipe_tmp`` of an empty /tmp and of one
a previous run left 100 or 1000 files in), timed in-process. Reps of each measurement are
interleaved. Printed: medians in ms and the clean start as a fraction of a ``true`` run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent.containers.sandbox import Sandbox  # noqa: E402
from agent.sandboxes.config import SandboxConfig  # noqa: E402

# Runs inside the container: times the clean-start steps on a private directory standing in for /tmp.
INSIDE = r"""
import json, os, statistics, sys, tempfile, time
sys.path.insert(0, "/opt/codebox")
from sandbox.tools.run_test import _make_scratch, _remove_tree, _wipe_tmp
n = int(sys.argv[1])
fake_tmp = tempfile.mkdtemp()
def leave(count):
    d = os.path.join(fake_tmp, "left")
    os.mkdir(d)
    for i in range(count):
        open(os.path.join(d, str(i)), "w").close()
    open(os.path.join(fake_tmp, "usercustomize.py"), "w").close()
out = {"scratch": [], "wipe_empty": [], "wipe_100": [], "wipe_1000": []}
for _ in range(n):  # interleaved
    t = time.perf_counter(); s = _make_scratch(); _remove_tree(s); out["scratch"].append(time.perf_counter() - t)
    t = time.perf_counter(); _wipe_tmp(fake_tmp); out["wipe_empty"].append(time.perf_counter() - t)
    for count in (100, 1000):
        leave(count)
        t = time.perf_counter(); _wipe_tmp(fake_tmp); out[f"wipe_{count}"].append(time.perf_counter() - t)
print(json.dumps({k: statistics.median(v) * 1000 for k, v in out.items()}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=40, help="reps of each measurement (default 40)")
    parser.add_argument("--image", default=SandboxConfig().image)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        repo.chmod(0o755)
        (repo / "inside.py").write_text(INSIDE)
        with Sandbox(repo, SandboxConfig(image=args.image), task_id="bench-run-test-clean") as sandbox:
            runs: dict[str, list[float]] = {"true": [], "python3 -c pass": []}
            argvs = {"true": ["true"], "python3 -c pass": ["python3", "-c", "pass"]}
            for _ in range(3):
                sandbox.call("run_test", {"argv": ["true"]})
            for _ in range(args.n):
                for name, argv in argvs.items():
                    t0 = time.perf_counter()
                    reply = sandbox.call("run_test", {"argv": argv})
                    runs[name].append(time.perf_counter() - t0)
                    assert reply.ok, reply.output
            reply = sandbox.call("run_test", {"argv": ["python3", "inside.py", str(args.n)]})
            assert reply.ok, reply.output
            steps = json.loads(reply.output.rsplit("\n", 1)[-1])
    true_ms = statistics.median(runs["true"]) * 1000
    py_ms = statistics.median(runs["python3 -c pass"]) * 1000
    clean_ms = steps["scratch"] + 2 * steps["wipe_empty"]  # one scratch, /tmp emptied before and after
    print(f"run_test ['true'] round trip (clean start included):      {true_ms:8.2f} ms")
    print(f"run_test ['python3', '-c', 'pass'] round trip:            {py_ms:8.2f} ms")
    print(f"fresh HOME + TMPDIR (make + remove), in the container:     {steps['scratch']:8.3f} ms")
    print(f"empty /tmp wipe, nothing left:                           {steps['wipe_empty']:8.3f} ms")
    left = f"{steps['wipe_100']:8.3f} / {steps['wipe_1000']:.3f}"
    print(f"/tmp wipe after a run left 100 / 1000 files:          {left} ms")
    print(f"clean start per run (scratch + 2 empty wipes) / 'true' run: {clean_ms / true_ms:8.3f}x")
    print(f"clean start per run / 'python3 -c pass' run:                {clean_ms / py_ms:8.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
