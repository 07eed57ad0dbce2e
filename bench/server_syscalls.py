"""System calls per tool call of the in-container server, counted with strace: no timing noise.

    python bench/server_syscalls.py [--calls 20] [--engines auto,python,literal] [--top 6]

Under gVisor every system call is served by its user-space kernel (tens of microseconds each on
the ptrace platform, a process start far more), so the count of calls a tool makes is what its
cost under runsc follows. The server runs here on the host, as the tests run it, under
``strace -f`` (children included: rg, a test's processes); a request for an unknown tool marks
where the counted calls start and end. Per server and tool: its boot (to the first answer), the
tool's first call (its module's imports included), and the mean over ``--calls`` calls after 3
warm-up calls, with the most frequent system calls. Here the server sees the host's processes
(it ignores ``--reap-all`` in the host's pid namespace): its boot and a run_test scan /proc, 3
calls per process, for the host's hundreds where a container has a handful.
"""

from __future__ import annotations

import argparse
import collections
import compileall
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CALLS = {
    "ping": ("ping", {}),
    "read_file": ("read_file", {"path": "pkg/mod_0.py"}),
    "search": ("search", {"query": "needle_7"}),
    "search_regex": ("search", {"query": "needle_7\\b", "regex": True}),
    "run_test": ("run_test", {"argv": ["true"]}),
}
MARK = "__mark__"


def _repo(root: Path) -> Path:
    """The same tree as bench/backends.py: 50 modules of 40 lines."""
    repo = root / "repo"
    (repo / "pkg").mkdir(parents=True)
    for i in range(50):
        (repo / "pkg" / f"mod_{i}.py").write_text(f"def needle_{i}():\n    return {i}\n" * 20)
    return repo


def _requests(tool: str, args: dict[str, object], calls: int) -> list[bytes]:
    line = (json.dumps({"id": 1, "tool": tool, "args": args}) + "\n").encode()
    mark = (json.dumps({"id": "m", "tool": MARK}) + "\n").encode()
    return [mark, line, mark, *[line] * 3, mark, *[line] * calls, mark]


def _syscalls(log: str) -> tuple[list[str], list[int]]:
    """One entry per system call made, in order (a call another thread interrupted is one call,
    where it started), and the indexes of the reads that got a mark."""
    out: list[str] = []
    marks: list[int] = []
    started: dict[str, int] = {}  # pid -> index of its unfinished call
    for line in log.splitlines():
        pid, _, body = line.partition(" ")
        body = body.lstrip()
        if body.startswith("<... "):  # the rest of an unfinished call
            if body.startswith("<... read resumed>") and MARK in body and pid in started:
                marks.append(started[pid])
            continue
        if body.startswith(("+++", "---")) or "(" not in body:
            continue
        if body.endswith("<unfinished ...>"):
            started[pid] = len(out)
        elif body.startswith("read(") and MARK in body:
            marks.append(len(out))
        out.append(body)
    return out, marks


def count(repo: Path, engine: str, tool: str, args: dict[str, object], calls: int) -> tuple[int, int, float, list[str]]:
    """(syscalls of the boot, of the first call, mean per call after it, the calls of the counted window)."""
    with tempfile.NamedTemporaryFile(prefix="codebox-strace-", suffix=".log") as log:
        argv = ["strace", "-f", "-qq", "-s", "48", "-o", log.name, sys.executable, "-S", "-m", "sandbox.server",
                "--root", str(repo), "--reap-all", "--search-engine", engine]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
        server = subprocess.Popen(argv, env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        assert server.stdin is not None and server.stdout is not None
        for request in _requests(tool, args, calls):  # one at a time: each is its own read()
            server.stdin.write(request)
            server.stdin.flush()
            server.stdout.readline()
        server.stdin.close()
        server.wait(timeout=60)
        made, marks = _syscalls(Path(log.name).read_text(errors="replace"))
    if len(marks) != 4:
        raise SystemExit(f"{engine} {tool}: expected 4 marks in the trace, found {len(marks)}")
    # between two marks: the first mark's answer (a write), then the calls, whose reads of their
    # request are there too (the last read is the next mark's)
    first = made[marks[0] + 2 : marks[1] + 1]
    window = made[marks[2] + 2 : marks[3] + 1]
    return marks[0], len(first), len(window) / calls, window


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20, help="counted calls per tool (default 20)")
    parser.add_argument("--engines", default="auto,python", help="--search-engine values to run (default auto,python)")
    parser.add_argument("--tools", default=",".join(CALLS), help=f"default {','.join(CALLS)}")
    parser.add_argument("--top", type=int, default=6, help="most frequent system calls shown per tool (default 6)")
    args = parser.parse_args(argv)
    if shutil.which("strace") is None:
        print("strace is not on PATH (apt-get install strace)")
        return 1
    compileall.compile_dir(str(ROOT / "sandbox"), quiet=2)  # as the host does for a container's boot
    with tempfile.TemporaryDirectory(prefix="codebox-bench-syscalls-") as tmp:
        repo = _repo(Path(tmp))
        for engine in args.engines.split(","):
            for name in args.tools.split(","):
                tool, tool_args = CALLS[name]
                boot, first, per_call, window = count(repo, engine, tool, tool_args, args.calls)
                names = collections.Counter(body.split("(", 1)[0] for body in window)
                top = ", ".join(f"{n} {c / args.calls:g}" for n, c in names.most_common(args.top))
                print(f"{engine:<8}{name:<14}{per_call:>8.1f} per call, first {first:>5}, boot {boot:>5}   {top}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
