"""Environment builds: a cache hit with no network, a cold build against the host's own `uv pip install`
of the same lock, and the dependencies layer two commits of one repository share on disk.

Projects: `tiny` (the test suite's local wheelhouse: 4 tiny wheels) and `index` (pytest>=8 +
hypothesis from the real package index; skipped when it is unreachable). Per rep, interleaved:

- cold: the environment and its dependencies image removed and forgotten (the wheel download
  cache and the probe stay warm): resolve + dependencies box + project layer + load;
- hit: ensure_env again with the resolver and the downloader replaced by functions that fail
  (no index, no network), in this process, and `codebox env build` as a fresh process;
- host: `uv venv` + `uv pip install --offline --no-deps` of the same lock from the same wheels,
  with the same flags (copy, bytecode).

Then two commits of one project whose own build runs (a pre_install recipe) and one lock:
their environment images, the dependencies image they share, and the disk each takes (the
engine's own accounting: `docker system df -v`'s size, shared size and unique size).

Goals: hit <= 0.2 s; cold <= 1.5x the host's install; the second commit adds only its project layer.

The build boxes get the task's limits (1 CPU by default); `--cpus 2` gives them the cores the
host's own install uses.

    python bench/env_build.py [--reps 3] [--skip-index] [--cpus N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import docker  # noqa: E402

from agent.containers.image import ensure_sandbox_image  # noqa: E402
from agent.env import images  # noqa: E402
from agent.env.box import BuildLimits  # noqa: E402
from agent.env.build import EnvRequest, ensure_env  # noqa: E402
from agent.env.fetch import cache_dir  # noqa: E402
from agent.env.recipe import Recipe  # noqa: E402
from agent.env.resolve import IndexConfig, uv_binary  # noqa: E402
from agent.protocol import EnvInfo  # noqa: E402
from tests.agent.env.projects import FLAT, git_tagged, write  # noqa: E402
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


def _forget(engine: images.EngineImages, info: EnvInfo) -> None:
    """The environment and its dependencies image: removed from the engine and the record."""
    entry = images.find(engine, info.image_id)
    names = [info.image_id] + ([entry.deps] if entry is not None and entry.deps else [])
    images.remove_env_images(engine, names)


def _host_install(lock_text: str, wheels: Path, work: Path) -> None:
    venv = work / "host-venv"
    shutil.rmtree(venv, ignore_errors=True)
    (work / "lock.txt").write_text(lock_text)
    uv = uv_binary()
    subprocess.run([uv, "venv", "-q", "--no-config", str(venv)], check=True)
    subprocess.run([uv, "pip", "install", "-q", "--no-config", "--offline", "--no-index", "--find-links", str(wheels),
                    "--no-deps", "--require-hashes", "--link-mode", "copy", "--compile-bytecode",
                    "--python", str(venv / "bin/python"), "-r", str(work / "lock.txt")],
                   check=True, env={"UV_CACHE_DIR": str(work / "uv-cache"), "PATH": "/usr/bin:/bin"})
    shutil.rmtree(work / "uv-cache", ignore_errors=True)


def _offline_hit(request: EnvRequest) -> EnvInfo:
    """ensure_env with every way to the network replaced by a failure: a hit must not need one."""
    import agent.env.fetch
    import agent.env.resolve

    def refuse(*args: object, **kwargs: object) -> Any:
        raise RuntimeError("the cache hit tried to reach the index")

    saved = agent.env.resolve.run_process, agent.env.fetch.fetch_pin
    agent.env.resolve.run_process, agent.env.fetch.fetch_pin = refuse, refuse
    try:
        info = ensure_env(request)
    finally:
        agent.env.resolve.run_process, agent.env.fetch.fetch_pin = saved
    assert not info.built
    return info


def _cli_hit(repo: Path, index: IndexConfig) -> None:
    env = {**os.environ, "CODEBOX_FIND_LINKS": os.pathsep.join(index.find_links),
           "CODEBOX_NO_INDEX": "1" if index.no_index else "0", "UV_OFFLINE": "1"}
    subprocess.run([sys.executable, "-m", "agent.cli", "env", "build", "--repo", str(repo), "--as-of", "now"],
                   cwd=ROOT, env=env, check=True, capture_output=True)


def _bench(name: str, request: EnvRequest, reps: int, work: Path) -> None:
    engine = images.EngineImages.connect()
    first = ensure_env(request)  # downloads into the wheel cache once
    wheels = work / f"{name}-wheels"
    wheels.mkdir(exist_ok=True)
    for path in (cache_dir() / "wheels").rglob("*.whl"):
        shutil.copy(path, wheels / path.name)
    cold, hit, cli, host = [], [], [], []
    info = first
    for _ in range(reps):
        _forget(engine, info)
        cold.append(_timed(lambda: ensure_env(request)))
        start = time.perf_counter()
        info = _offline_hit(request)
        hit.append(time.perf_counter() - start)
        cli.append(_timed(lambda: _cli_hit(request.repo, request.index)))
        host.append(_timed(lambda: _host_install(first.lock, wheels, work)))
    _forget(engine, info)
    engine.close()
    c, h, p, u = (statistics.median(x) for x in (cold, hit, cli, host))
    print(f"{name}: {len(first.installed)} packages; medians of {reps} interleaved reps")
    print(f"  cold build {c:.2f} s | host uv install {u:.2f} s | cold / host: {c / u:.2f}x (goal <= 1.5x)")
    print(f"  cache hit, no network: {h * 1000:.0f} ms in process (goal <= 200 ms); "
          f"`codebox env build` as a new process: {p * 1000:.0f} ms")


def _two_commits(index: IndexConfig, work: Path, requirements: str) -> None:
    """Two commits of one project, one lock: the dependencies layer is on disk once."""
    files = {"requirements.txt": requirements, "app.py": "import sys\n"}
    repo = git_tagged(write(work / "commits", {**files, "app.py": files["app.py"] + "# one\n"}), "v1")
    recipe = Recipe(pre_install=["printf 'BUILT = 1\\n' > generated_at_build.py"])  # a project build runs
    one = ensure_env(EnvRequest(repo=repo, index=index, recipe=recipe))
    write(repo, {"app.py": files["app.py"] + "# two\n"})
    subprocess.run(["git", "commit", "-qam", "two"], cwd=repo, check=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
                        "GIT_COMMITTER_EMAIL": "b@b"})
    two = ensure_env(EnvRequest(repo=repo, index=index, recipe=recipe))
    engine = images.EngineImages.connect()
    first, second = (images.find(engine, info.image_id) for info in (one, two))
    assert first is not None and second is not None
    assert first.deps == second.deps and one.image_id != two.image_id
    client = docker.from_env(timeout=600)
    usage = {i["Id"]: i for i in client.df()["Images"]}
    deps = usage[first.deps]
    rows = [("commit 1", usage[one.image_id]), ("commit 2", usage[two.image_id]), ("dependencies", deps)]
    print("two commits, one lock: each environment = the dependencies image + its own project layer")
    for label, row in rows:
        print(f"  {label:<13} size {row['Size'] / 1e6:8.2f} MB  shared {row['SharedSize'] / 1e6:8.2f} MB  "
              f"unique {(row['Size'] - row['SharedSize']) / 1e3:8.1f} kB")
    base = usage[client.images.get(EnvRequest(repo=repo).base_image).id]["Size"]
    added = sum(r["Size"] - r["SharedSize"] for _, r in rows) + (deps["Size"] - base)
    naive = usage[one.image_id]["Size"] + usage[two.image_id]["Size"] - 2 * base
    print(f"  disk beyond the base image for both: {added / 1e6:.2f} MB "
          f"(two full copies would be {naive / 1e6:.2f} MB)")
    client.close()
    images.remove_env_images(engine, [one.image_id, two.image_id, first.deps])
    engine.close()


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
    parser.add_argument("--cpus", type=float, default=BuildLimits().cpus, help="the build boxes' CPU limit")
    args = parser.parse_args()
    ensure_sandbox_image()
    work = Path(tempfile.mkdtemp(prefix="codebox-bench-env-"))
    os.environ["CODEBOX_CACHE_DIR"] = str(work / "cache")
    try:
        wheelhouse = make_wheelhouse(work / "wheelhouse")
        local = IndexConfig(find_links=[str(wheelhouse)], no_index=True)
        limits = BuildLimits(cpus=args.cpus)
        _bench("tiny", EnvRequest(repo=write(work / "tiny", FLAT), index=local, limits=limits), args.reps, work)
        if args.skip_index or not _index_reachable():
            print("index: skipped (--skip-index, or the package index is unreachable)")
            _two_commits(local, work, "alpha\ngamma\n")
        else:
            _bench("index", EnvRequest(repo=write(work / "indexproj", INDEX_PROJECT), limits=limits), args.reps, work)
            _two_commits(IndexConfig(), work, "hypothesis\npytest>=8\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
