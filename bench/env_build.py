"""Environment builds: a cache hit with no network, a cold build against the host's own `uv pip install`
of the same lock, and the dependencies layer two commits of one repository share on disk.

Projects: `tiny` (the test suite's local wheelhouse: 4 tiny wheels) and `index` (pytest>=8 +
hypothesis from the real package index; skipped when it is unreachable). Per rep, interleaved:

- cold: the environment and its dependencies image removed and forgotten (the wheel download
  cache and the probe stay warm): resolve + dependencies box + project layer + load;
- hit: ensure_env again with the resolver and the downloader replaced by functions that fail
  (no index, no network), in this process, and `codebox env build` as a fresh process (under
  `unshare -n` when this user may: no network at all; the daemon's unix socket stays). The
  process reads bytecode as an installed wheel does (pip compiles it): the bench lets the child
  write it to a folder of its own on an uncounted first run, whatever PYTHONDONTWRITEBYTECODE says;
- host: `uv venv` + `uv pip install --offline --no-deps` of the same lock from the same wheels,
  with the same flags (copy, bytecode).

Then two commits of one project whose own build runs (a pre_install recipe) and one lock:
their environment images, the dependencies image they share, and the disk each takes (the
engine's own accounting: `docker system df -v`'s size, shared size and unique size).

Goals: hit <= 0.2 s; cold <= 1.5x the host's install; the second commit adds only its project layer.

`--hit-only`: the tiny project built once, then only its hits, `--hit-reps` of each per rep
(a hit is cheap and the machine noisy). `--codebox CMD` (repeatable): the command whose new
process is measured (default: this checkout's `python -m agent.cli.parser`); given twice, e.g. another
checkout's, both run in the same reps, interleaved, against the same recorded environment.

`--cold-only`: the cold builds and the host's installs alone (no hits, no two commits).

The build boxes get the task's limits (1 CPU by default; `--cpus 2`: the host's cores), except
the dependencies box of a lock of wheels only, which runs no package code and has no CPU quota.

    python bench/env_build.py [--reps 3] [--skip-index] [--cpus N] [--cold-only] [--hit-only [--hit-reps 5]]
                              [--codebox CMD]...
"""

from __future__ import annotations

import argparse
import functools
import os
import shlex
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

from agent.containers.image import ensure_sandbox_image  # noqa: E402
from agent.env.install import images  # noqa: E402
from agent.env.install.box import BuildLimits  # noqa: E402
from agent.env.install.ensure import EnvRequest, ensure_env  # noqa: E402
from agent.env.recipe import Recipe  # noqa: E402
from agent.env.resolve.fetch import cache_dir  # noqa: E402
from agent.env.resolve.resolve import IndexConfig, uv_binary  # noqa: E402
from agent.protocol import EnvInfo  # noqa: E402
from tests.agent.env.projects import FLAT, git_tagged, write  # noqa: E402
from tests.agent.env.wheels import make_wheelhouse  # noqa: E402
from tests.engine import docker  # noqa: E402

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
    import agent.env.resolve.fetch
    import agent.env.resolve.resolve

    def refuse(*args: object, **kwargs: object) -> Any:
        raise RuntimeError("the cache hit tried to reach the index")

    saved = agent.env.resolve.resolve.run_process, agent.env.resolve.fetch.fetch_pin
    agent.env.resolve.resolve.run_process, agent.env.resolve.fetch.fetch_pin = refuse, refuse
    try:
        info = ensure_env(request)
    finally:
        agent.env.resolve.resolve.run_process, agent.env.resolve.fetch.fetch_pin = saved
    assert not info.built
    return info


def _cli_env(index: IndexConfig, work: Path) -> dict[str, str]:
    """A new process's environment: the request's index, uv offline, bytecode as an installed wheel has it."""
    env = {**os.environ, "CODEBOX_FIND_LINKS": os.pathsep.join(index.find_links),
           "CODEBOX_NO_INDEX": "1" if index.no_index else "0", "UV_OFFLINE": "1",
           "PYTHONPYCACHEPREFIX": str(work / "pycache"), "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


@functools.cache
def _offline_prefix() -> list[str]:
    """``unshare -n`` (a network namespace of its own: no route anywhere) when this user may make one."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


def _cli_hit(repo: Path, env: dict[str, str], codebox: list[str]) -> float:
    """Wall seconds of one `codebox env build` cache hit as a new process (it must say it reused)."""
    start = time.perf_counter()
    proc = subprocess.run([*_offline_prefix(), *codebox, "env", "build", "--repo", str(repo), "--as-of", "now"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or "reusing" not in proc.stderr:
        raise SystemExit(f"{codebox}: not a cache hit: {proc.stderr[-2000:]}")
    return elapsed


def _hits(request: EnvRequest, commands: list[list[str]], work: Path, rep: int,
          cli: dict[str, list[float]]) -> tuple[EnvInfo, float]:
    """One rep of hits: in this process (its seconds), then each command's new process (added to ``cli``),
    the commands' order alternating with ``rep``."""
    start = time.perf_counter()
    info = _offline_hit(request)
    in_process = time.perf_counter() - start
    env = _cli_env(request.index, work)
    for codebox in commands if rep % 2 == 0 else commands[::-1]:
        cli.setdefault(" ".join(codebox), []).append(_cli_hit(request.repo, env, codebox))
    return info, in_process


def _print_hits(hit: list[float], cli: dict[str, list[float]]) -> None:
    where = "under unshare -n" if _offline_prefix() else "uv offline (no unshare -n here)"
    print(f"  cache hit, no network: {statistics.median(hit) * 1000:.0f} ms in process (goal <= 200 ms)")
    for who, times in cli.items():
        print(f"  `codebox env build` as a new process ({where}), {len(times)} runs: median "
              f"{statistics.median(times) * 1000:.0f} ms, min {min(times) * 1000:.0f} ms (goal <= 200 ms)  [{who}]")


def _warm(request: EnvRequest, commands: list[list[str]], work: Path) -> None:
    """An uncounted hit of each command: its bytecode written, the page cache warm."""
    for codebox in commands:
        _cli_hit(request.repo, _cli_env(request.index, work), codebox)


def _bench(name: str, request: EnvRequest, reps: int, work: Path, commands: list[list[str]],
           hits: bool = True) -> None:
    engine = images.EngineImages.connect()
    first = ensure_env(request)  # downloads into the wheel cache once
    if hits:
        _warm(request, commands, work)
    wheels = work / f"{name}-wheels"
    wheels.mkdir(exist_ok=True)
    for path in (cache_dir() / "wheels").rglob("*.whl"):
        shutil.copy(path, wheels / path.name)
    cold, hit, host = [], [], []
    cli: dict[str, list[float]] = {}
    info = first
    for rep in range(reps):
        _forget(engine, info)
        start = time.perf_counter()
        info = ensure_env(request)
        cold.append(time.perf_counter() - start)
        if hits:
            info, in_process = _hits(request, commands, work, rep, cli)
            hit.append(in_process)
        host.append(_timed(lambda: _host_install(first.lock, wheels, work)))
    _forget(engine, info)
    engine.close()
    c, u = (statistics.median(x) for x in (cold, host))
    print(f"{name}: {len(first.installed)} packages; medians of {reps} interleaved reps; load {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    print(f"  cold build {c:.2f} s | host uv install {u:.2f} s | cold / host: {c / u:.2f}x (goal <= 1.5x)")
    print(f"  cold builds: {' '.join(f'{x:.2f}' for x in cold)} s; "
          f"host installs: {' '.join(f'{x:.2f}' for x in host)} s")
    if hits:
        _print_hits(hit, cli)


def _hit_only(request: EnvRequest, reps: int, per_rep: int, work: Path, commands: list[list[str]]) -> None:
    """The tiny project built once; then only hits, ``per_rep`` of each per rep."""
    engine = images.EngineImages.connect()
    info = ensure_env(request)
    _warm(request, commands, work)
    hit: list[float] = []
    cli: dict[str, list[float]] = {}
    try:
        for rep in range(reps * per_rep):
            hit.append(_hits(request, commands, work, rep, cli)[1])
    finally:
        _forget(engine, info)
        engine.close()
    print(f"tiny: {len(info.installed)} packages; {reps * per_rep} interleaved hits; load {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    _print_hits(hit, cli)


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
    client = docker()
    usage = {i["Id"]: i for i in client.disk_usage()["Images"]}
    deps = usage[first.deps]
    rows = [("commit 1", usage[one.image_id]), ("commit 2", usage[two.image_id]), ("dependencies", deps)]
    print("two commits, one lock: each environment = the dependencies image + its own project layer")
    for label, row in rows:
        print(f"  {label:<13} size {row['Size'] / 1e6:8.2f} MB  shared {row['SharedSize'] / 1e6:8.2f} MB  "
              f"unique {(row['Size'] - row['SharedSize']) / 1e3:8.1f} kB")
    base = usage[client.inspect_image(EnvRequest(repo=repo).base_image)["Id"]]["Size"]
    added = sum(r["Size"] - r["SharedSize"] for _, r in rows) + (deps["Size"] - base)
    naive = usage[one.image_id]["Size"] + usage[two.image_id]["Size"] - 2 * base
    print(f"  disk beyond the base image for both: {added / 1e6:.2f} MB "
          f"(two full copies would be {naive / 1e6:.2f} MB)")
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
    parser.add_argument("--hit-only", action="store_true", help="the tiny project's cache hits only")
    parser.add_argument("--cold-only", action="store_true", help="cold builds against the host's install only")
    parser.add_argument("--hit-reps", type=int, default=5, help="with --hit-only: hits of each kind per rep")
    parser.add_argument("--codebox", action="append", default=[],
                        help="a codebox command whose new process is measured (default: this checkout's "
                             "python -m agent.cli.parser); give two to compare, interleaved")
    args = parser.parse_args()
    commands = [shlex.split(c) for c in args.codebox] or [[sys.executable, "-m", "agent.cli"]]
    ensure_sandbox_image()
    work = Path(tempfile.mkdtemp(prefix="codebox-bench-env-"))
    os.environ["CODEBOX_CACHE_DIR"] = str(work / "cache")
    try:
        wheelhouse = make_wheelhouse(work / "wheelhouse")
        local = IndexConfig(find_links=[str(wheelhouse)], no_index=True)
        limits = BuildLimits(cpus=args.cpus)
        tiny = EnvRequest(repo=write(work / "tiny", FLAT), index=local, limits=limits)
        if args.hit_only:
            _hit_only(tiny, args.reps, args.hit_reps, work, commands)
            return
        hits = not args.cold_only
        _bench("tiny", tiny, args.reps, work, commands, hits)
        if args.skip_index or not _index_reachable():
            print("index: skipped (--skip-index, or the package index is unreachable)")
            if hits:
                _two_commits(local, work, "alpha\ngamma\n")
        else:
            index_request = EnvRequest(repo=write(work / "indexproj", INDEX_PROJECT), limits=limits)
            _bench("index", index_request, args.reps, work, commands, hits)
            if hits:
                _two_commits(IndexConfig(), work, "hypothesis\npytest>=8\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
