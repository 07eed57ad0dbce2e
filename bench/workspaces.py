"""Workspace creation: time and extra disk, next to a plain `cp -r` of the same repo, in one run.

Two generated git repos: a small one (20 files) and a large one (~1,600 files, ~10 MB, 30
commits of history). For each, interleaved reps of:
- cp -r:              a plain recursive copy of the repo, .git included (the baseline),
- default, clean:     create_workspace with no base_commit on a clean tree (clone --shared, the
                      user's files copied, hashed against HEAD),
- default, dirty:     the same with 5 modified and 3 untracked files (a snapshot commit too),
- base_commit:        create_workspace at an explicit commit (clone --shared + checkout: eval, SWE-bench),
- plain folder:       the tree without .git: cp --reflink=auto + git init/add/commit.
Prints medians, each as a ratio to cp -r, and the extra disk each leaves (du of the copy).
With --real GIT_DIR (a bare mirror, e.g. of a SWE-bench repository), a full clone of it is
measured too: real history makes .git far larger than the tree, which cp -r copies and a
workspace does not. --scratch puts repos, copies and workspaces on another file system.

    python bench/workspaces.py [--reps 5] [--real GIT_DIR ...] [--scratch DIR]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.task.workspace import create_workspace, git  # noqa: E402


def make_repo(path: Path, files: int, commits: int, seed: int = 7) -> Path:
    """A repo of `files` Python-like files spread over nested packages, with some history."""
    rng = random.Random(seed)
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    names = [Path(f"pkg{i % 12}") / f"sub{i % 7}" / f"mod_{i}.py" for i in range(files)]
    for name in names:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        lines = [f"def f_{i}(x):\n    return x * {rng.randint(1, 99)}\n\n" for i in range(rng.randint(20, 160))]
        (path / name).write_text("".join(lines))
    git("add", "-A", cwd=path)
    git("commit", "-qm", "initial", cwd=path)
    for n in range(commits - 1):
        for name in rng.sample(names, min(10, len(names))):
            with (path / name).open("a") as f:
                f.write(f"# change {n}\n")
        git("commit", "-qam", f"change {n}", cwd=path)
    git("gc", "-q", cwd=path)  # packed, as a real clone is
    return path


def dirty_copy(repo: Path, dest: Path) -> Path:
    shutil.copytree(repo, dest, symlinks=True)
    tracked = sorted(p for p in dest.rglob("*.py") if ".git" not in p.parts)
    for p in tracked[:5]:
        p.write_text(p.read_text() + "# uncommitted\n")
    for i in range(3):
        (dest / f"untracked_{i}.py").write_text("x = 1\n")
    return dest


def plain_copy(repo: Path, dest: Path) -> Path:
    shutil.copytree(repo, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return dest


def du_kb(path: Path) -> int:
    return int(subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True).stdout.split()[0])


def timed(make: Callable[[], Path]) -> tuple[float, int]:
    started = time.perf_counter()
    made = make()
    elapsed = time.perf_counter() - started
    size = du_kb(made)
    shutil.rmtree(made, ignore_errors=True)
    return elapsed, size


def bench(label: str, repo: Path, scratch: Path, reps: int) -> None:
    dirty = dirty_copy(repo, scratch / f"{label}-dirty")
    plain = plain_copy(repo, scratch / f"{label}-plain")
    counter = iter(range(10**6))

    def cp_r() -> Path:
        dest = scratch / f"cp-{next(counter)}"
        subprocess.run(["cp", "-r", str(repo), str(dest)], check=True)
        return dest

    head = git("rev-parse", "HEAD", cwd=repo).stdout.decode().strip()
    ways: dict[str, Callable[[], Path]] = {
        "cp -r": cp_r,
        "default, clean": lambda: create_workspace(repo, root=scratch).path,
        "default, dirty": lambda: create_workspace(dirty, root=scratch).path,
        "base_commit": lambda: create_workspace(repo, head, root=scratch).path,
        "plain folder": lambda: create_workspace(plain, root=scratch).path,
    }
    times: dict[str, list[float]] = {k: [] for k in ways}
    sizes: dict[str, int] = {}
    for _ in range(reps):  # interleaved: every way once per round
        for name, make in ways.items():
            elapsed, size = timed(make)
            times[name].append(elapsed)
            sizes[name] = size
    files = int(subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True).stdout.count("\n"))
    print(f"\n{label}: {files} files, tree+.git {du_kb(repo) / 1024:.1f} MB, .git {du_kb(repo / '.git') / 1024:.1f} MB")
    base = statistics.median(times["cp -r"])
    print(f"  {'way':<18} {'median':>9} {'x cp -r':>8} {'extra disk':>11}")
    for name in ways:
        med = statistics.median(times[name])
        print(f"  {name:<18} {med * 1000:7.0f}ms {med / base:7.2f}x {sizes[name] / 1024:9.1f}MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--real", nargs="*", default=[], help="bare mirrors to measure a full clone of")
    parser.add_argument("--scratch", help="folder for repos, copies and workspaces (default: the temp folder)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="codebox-bench-ws-", dir=args.scratch))
    try:
        small = make_repo(scratch / "small", files=20, commits=5)
        large = make_repo(scratch / "large", files=1600, commits=30)
        fs = subprocess.run(["stat", "-f", "-c", "%T", str(scratch)], capture_output=True, text=True).stdout.strip()
        print(f"workspaces vs cp -r, {args.reps} interleaved reps, medians; file system of {scratch}: {fs}")
        bench("small", small, scratch, args.reps)
        bench("large", large, scratch, args.reps)
        for mirror in args.real:
            name = Path(mirror).resolve().parent.name if Path(mirror).name == "repo" else Path(mirror).name
            clone = scratch / name
            subprocess.run(["git", "clone", "-q", "--no-hardlinks", mirror, str(clone)], check=True)
            bench(name, clone, scratch, args.reps)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
