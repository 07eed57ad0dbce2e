"""What it costs that search looks inside binary files and names what it skipped, in one run, as ratios.

    python bench/search_skips.py [--n 15] [--files 2000] [--binaries 400] [--image codebox-sandbox:latest]

Inside the sandbox container (its ripgrep), on a generated tree of text files and binary files
(.pyc-like, 16 KiB with NUL bytes; the query is in 1 % of the text files), interleaved reps of:
ripgrep with the flags search used before (binary files dropped at the first NUL, silently) and
with today's (``--binary --debug
--max-filesize``); and the whole ``search`` tool call through the sandbox. Printed: medians in
ms and the ratio new / old.
"""

from __future__ import annotations

import argparse
import json
import os
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

INSIDE = r"""
import json, statistics, subprocess, sys, time
n = int(sys.argv[1])
base = ["rg", "--json", "--no-config", "--sort", "path", "--hidden", "--no-ignore", "--encoding", "none",
        "--color", "never", "--fixed-strings", "--glob", "!.git"]
flags = {"old": base, "new": base + ["--binary", "--debug", "--max-filesize", str(64 * 1024 * 1024)]}
out = {k: [] for k in flags}
for _ in range(n):
    for name, cmd in flags.items():
        t = time.perf_counter()
        subprocess.run(cmd + ["needle", "tree"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out[name].append(time.perf_counter() - t)
print(json.dumps({k: statistics.median(v) * 1000 for k, v in out.items()}))
"""


def _make_tree(root: Path, files: int, binaries: int) -> None:
    tree = root / "tree"
    for i in range(files):
        d = tree / f"pkg{i % 40}"
        d.mkdir(parents=True, exist_ok=True)
        hit = "# needle\n" if i % 100 == 0 else ""
        (d / f"mod{i}.py").write_text(hit + "".join(f"def f{j}(x):\n    return x + {j}\n" for j in range(40)))
    for i in range(binaries):
        d = tree / f"pkg{i % 40}" / "__pycache__"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i}.pyc").write_bytes((b"\x00\x01\x02" + os.urandom(77)) * 200)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=15, help="reps of each measurement (default 15)")
    parser.add_argument("--files", type=int, default=2000, help="text files (default 2000)")
    parser.add_argument("--binaries", type=int, default=400, help="binary files (default 400)")
    parser.add_argument("--image", default=SandboxConfig().image)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        repo.chmod(0o755)
        _make_tree(repo, args.files, args.binaries)
        (repo / "inside.py").write_text(INSIDE)
        with Sandbox(repo, SandboxConfig(image=args.image), task_id="bench-search-skips") as sandbox:
            reply = sandbox.call("run_test", {"argv": ["python3", "inside.py", str(args.n)]}, timeout_s=600)
            assert reply.ok, reply.output
            rg = json.loads(reply.output.rsplit("\n", 1)[-1])
            calls = []
            for _ in range(args.n):
                t0 = time.perf_counter()
                result = sandbox.call("search", {"query": "needle", "path": "tree"})
                calls.append(time.perf_counter() - t0)
            assert result.ok, result.output
    call_ms = statistics.median(calls) * 1000
    print(f"tree: {args.files} text files, {args.binaries} binary files (NUL bytes)")
    print(f"rg as search ran it before (binaries dropped silently): {rg['old']:8.1f} ms")
    print(f"rg as search runs it now (binaries searched, skips named): {rg['new']:8.1f} ms")
    print(f"new / old:                                               {rg['new'] / rg['old']:8.2f}x")
    print(f"a whole search call through the sandbox now (max 50 results): {call_ms:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
