"""The static read of a repository (read_declared) and the C-source digest: how long they take.

Fixtures written here, per shape: a setup.py of N module-level statements feeding setup()
(the static evaluator's worst honest case), a pyproject with a legacy tox ini naming
requirements files, and a tree of C sources digested in 1 MiB blocks (its throughput beside
the host's own `sha256sum` of the same files, as a ratio). Reps are interleaved; medians.
Goal: the read stays a fast path (milliseconds) and the digest runs near sha256sum's speed.

    python bench/env_read.py [--reps 5] [--c-mib 64]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from agent.env.read.declared import read_declared  # noqa: E402
from agent.env.read.digest import source_digest  # noqa: E402
from tests.agent.env.projects import write  # noqa: E402


def _setup_py(statements: int) -> dict[str, str]:
    lines = ["from setuptools import setup", "EXTRAS = {'tests': ['pytest']}"]
    lines += [f"EXTRAS['e{i}'] = EXTRAS['tests'] + ['pkg{i}>={i}']" for i in range(statements)]
    lines.append("setup(name='big', version='1.0', install_requires=['alpha'], extras_require=EXTRAS)")
    return {"setup.py": "\n".join(lines) + "\n", "big/__init__.py": ""}


TOX = {
    "pyproject.toml": '[project]\nname = "toxed"\nversion = "1.0"\n[tool.tox]\nlegacy_tox_ini = """\n'
                      '[tox]\nenvlist = py{39,310,311}\n[testenv:py{39,310,311}]\ndeps =\n'
                      '    -r{toxinidir}/tests/requirements.txt\n"""\n',
    "tests/requirements.txt": "".join(f"pkg{i}>={i}\n" for i in range(200)),
    "toxed.py": "",
}


def _c_tree(root: Path, mib: int) -> Path:
    block = (b"int f(void) { return 42; }\n" * 40_000)[: 1 << 20]
    for i in range(mib):
        path = root / f"src/mod{i % 16}/file{i}.c"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(block)
    return root


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _sha256sum(root: Path) -> None:
    files = sorted(str(p) for p in root.rglob("*.c"))
    subprocess.run(["sha256sum", *files], check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--c-mib", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="codebox-bench-read-") as tmp:
        work = Path(tmp)
        cases: dict[str, Callable[[], object]] = {}
        for statements in (10, 1000):
            repo = write(work / f"setup{statements}", _setup_py(statements))
            cases[f"read setup.py, {statements} statements"] = lambda repo=repo: read_declared(repo)
        tox = write(work / "tox", TOX)
        cases["read legacy tox ini + 200-line -r file"] = lambda: read_declared(tox)
        tree = _c_tree(work / "c", args.c_mib)
        cases[f"digest {args.c_mib} MiB of C"] = lambda: source_digest(tree)
        cases[f"sha256sum {args.c_mib} MiB of C"] = lambda: _sha256sum(tree)
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.reps):
            for name, fn in cases.items():
                times[name].append(_time(fn))
        for name, values in times.items():
            print(f"{name:<45} median {statistics.median(values) * 1000:9.1f} ms  (max {max(values) * 1000:.1f})")
        digest = statistics.median(times[f"digest {args.c_mib} MiB of C"])
        host = statistics.median(times[f"sha256sum {args.c_mib} MiB of C"])
        print(f"digest / sha256sum: {digest / host:.2f}x")


if __name__ == "__main__":
    main()
