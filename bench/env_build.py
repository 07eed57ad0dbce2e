"""Environment builds: cold build, cache hit, and the host's own `uv pip install` of the same lock.

Two fixture projects: `tiny` (the test suite's local wheelhouse: 4 tiny wheels, no network)
and `index` (pytest>=8 + hypothesis from the real package index; skipped if unreachable).
Per rep, interleaved: a cold build (image removed; the wheel download cache stays warm, so
this is probe + resolve + install + load), a cache hit (a second ensure_env), and on the
host `uv venv` + `uv pip install --offline --no-deps` of the same lock from the same wheels
with the same flags (copy, bytecode). Goals: cache hit <= 0.5 s; cold <= 2x host install.

    python bench/env_build.py [--reps 3] [--skip-index]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import docker  # noqa: E402

from agent.containers.image import ensure_sandbox_image  # noqa: E402
from agent.env.build import EnvRequest, ensure_env  # noqa: E402
from agent.env.fetch import cache_dir  # noqa: E402
from agent.env.resolve import IndexConfig, uv_binary  # noqa: E402
from tests.agent.env.projects import FLAT, write  # noqa: E402
from tests.agent.env.wheels import make_wheelhouse  # noqa: E402

INDEX_PROJECT = {
    "pyproject.toml": '[project]\nname = "benchproj"\nversion = "1.0"\ndependencies = ["hypothesis"]\n'
                      '[project.optional-dependencies]\ntest = ["pytest>=8"]\n',
    "benchproj.py": "",
}


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _host_install(lock_text: str, wheels: Path, work: Path) -> None:
    venv = work / "host-venv"
    shutil.rmtree(venv, ignore_errors=True)
    (work / "lock.txt").write_text(lock_text)
    uv = uv_binary()
    subprocess.run([uv, "venv", "-q", "--no-config", str(venv)], check=True)
    subprocess.run([uv, "pip", "install", "-q", "--no-config", "--offline", "--no-index", "--find-links", str(wheels),
                    "--no-deps", "--link-mode", "copy", "--compile-bytecode", "--python", str(venv / "bin/python"),
                    "-r", str(work / "lock.txt")], check=True, env={"UV_CACHE_DIR": str(work / "uv-cache"),
                                                                    "PATH": "/usr/bin:/bin"})
    shutil.rmtree(work / "uv-cache", ignore_errors=True)


def _bench(name: str, request: EnvRequest, reps: int, work: Path) -> None:
    client = docker.from_env()
    first = ensure_env(request)  # downloads into the wheel cache once
    wheels = work / f"{name}-wheels"
    wheels.mkdir(exist_ok=True)
    for path in (cache_dir() / "wheels").rglob("*.whl"):
        shutil.copy(path, wheels / path.name)
    cold, hit, host = [], [], []
    for _ in range(reps):
        client.images.remove(first.image)
        cold.append(_timed(lambda: ensure_env(request)))
        hit.append(_timed(lambda: ensure_env(request)))
        host.append(_timed(lambda: _host_install(first.lock, wheels, work)))
    client.images.remove(first.image)
    client.close()
    c, h, u = (statistics.median(x) for x in (cold, hit, host))
    print(f"{name}: {len(first.installed)} packages; medians of {reps} interleaved reps")
    print(f"  cold build {c:.2f} s | cache hit {h * 1000:.0f} ms | host uv install {u:.2f} s")
    print(f"  cold / host uv install: {c / u:.2f}x (goal <= 2x); cache hit {'<=' if h <= 0.5 else '>'} 0.5 s")


def _index_reachable() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/pytest/", timeout=10):
            return True
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--skip-index", action="store_true")
    args = parser.parse_args()
    ensure_sandbox_image()
    work = Path(tempfile.mkdtemp(prefix="codebox-bench-env-"))
    import os

    os.environ["CODEBOX_CACHE_DIR"] = str(work / "cache")
    try:
        wheelhouse = make_wheelhouse(work / "wheelhouse")
        tiny = EnvRequest(repo=write(work / "tiny", FLAT),
                          index=IndexConfig(find_links=[str(wheelhouse)], no_index=True))
        _bench("tiny", tiny, args.reps, work)
        if args.skip_index or not _index_reachable():
            print("index: skipped (--skip-index, or the package index is unreachable)")
        else:
            _bench("index", EnvRequest(repo=write(work / "indexproj", INDEX_PROJECT)), args.reps, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
