"""Cancelling an environment build: how long from the cancel to the end, at each place it can come.

The build is blocked in its install container (tests/agent/env/slow.py: the install would take ten
minutes), or in uv (an index on 127.0.0.1 that never answers). Per rep:
- in process, install: CancelToken.cancel() -> ensure_env raises EnvCancelled (container removed);
- in process, resolve: the same while uv waits on the index (uv's process group killed);
- `codebox run`, `codebox batch` (3 tasks, --jobs 2) and `codebox env build`: SIGINT -> the process exits.

    python bench/env_cancel.py [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import pytest  # noqa: E402

from agent.cancel import CancelToken  # noqa: E402
from agent.containers.image import ensure_sandbox_image  # noqa: E402
from agent.env.cancel import EnvCancelled  # noqa: E402
from agent.env.install.ensure import EnvRequest, ensure_env  # noqa: E402
from agent.env.resolve.resolve import IndexConfig  # noqa: E402
from tests.agent.env.projects import FLAT, write  # noqa: E402
from tests.agent.env.slow import slow_install, wait_for_install  # noqa: E402
from tests.agent.env.wheels import make_wheelhouse  # noqa: E402
from tests.e2e.test_env_cancel import interrupt_during_the_install, scripted, start  # noqa: E402
from tests.engine import docker  # noqa: E402
from tests.repos import sh  # noqa: E402


def _in_process(repo: Path, index: IndexConfig, ready: Callable[[], object]) -> float:
    cancel, ended = CancelToken(), []

    def build() -> None:
        try:
            ensure_env(EnvRequest(repo=repo, index=index), cancel=cancel)
        except EnvCancelled:
            ended.append(time.perf_counter())

    thread = threading.Thread(target=build)
    thread.start()
    try:
        ready()
        sent = time.perf_counter()
    finally:
        cancel.cancel()
        thread.join(60)
    assert ended, "the build was not cancelled"
    return ended[0] - sent


def _silent_index() -> str:
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    kept = []
    threading.Thread(target=lambda: [kept.append(server.accept()) for _ in iter(int, 1)], daemon=True).start()
    return f"http://127.0.0.1:{server.getsockname()[1]}/simple"


def _children() -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == os.getpid():
                found.add(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            pass
    return found


def _wait_for_child(before: set[int]) -> None:
    deadline = time.monotonic() + 60
    while not (_children() - before):
        assert time.monotonic() < deadline, "uv never started"
        time.sleep(0.02)
    time.sleep(0.3)  # uv is up and waiting on the index


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    ensure_sandbox_image()
    work = Path(tempfile.mkdtemp(prefix="codebox-bench-cancel-"))
    os.environ["CODEBOX_CACHE_DIR"] = str(work / "cache")
    wheels = make_wheelhouse(work / "wheels")
    client = docker()
    times: dict[str, list[float]] = {}
    with pytest.MonkeyPatch.context() as mp:
        slow_install(mp)
        for rep in range(args.reps):
            repo = write(work / f"repo{rep}", FLAT)
            times.setdefault("in process, install", []).append(_in_process(
                repo, IndexConfig(find_links=[str(wheels)], no_index=True),
                lambda: wait_for_install(client, os.getpid())))
            mp.setenv("UV_INDEX_URL", _silent_index())
            mine = _children()
            times.setdefault("in process, resolve (uv)", []).append(_in_process(
                repo, IndexConfig(), lambda mine=mine: _wait_for_child(mine)))  # uv, waiting on the index
            mp.delenv("UV_INDEX_URL")
            run_dir = work / f"run{rep}"
            run_dir.mkdir()
            proc = start(run_dir, "run", "--repo", str(repo), "--model", scripted(run_dir), "--env", "auto", "go")
            times.setdefault("codebox run, SIGINT -> exit", []).append(interrupt_during_the_install(proc)[3])
            sh("git", "init", "-q", cwd=repo)
            sh("git", "add", ".", cwd=repo)
            sh("git", "commit", "-qm", "init", cwd=repo)
            tasks = run_dir / "tasks.jsonl"
            tasks.write_text("".join(json.dumps({"id": f"t{i}", "repo": str(repo), "goal": "go"}) + "\n"
                                     for i in range(3)))
            proc = start(run_dir, "batch", str(tasks), "--jobs", "2", "--out", str(run_dir / "out"),
                         "--model", scripted(run_dir))
            times.setdefault("codebox batch, SIGINT -> exit", []).append(interrupt_during_the_install(proc)[3])
            proc = start(run_dir, "env", "build", "--repo", str(repo))
            times.setdefault("codebox env build, SIGINT -> exit", []).append(interrupt_during_the_install(proc)[3])
    shutil.rmtree(work, ignore_errors=True)
    print(f"cancel of an environment build, {args.reps} reps (median / max, seconds):")
    for name, values in times.items():
        print(f"  {name:36} {statistics.median(values):5.2f} / {max(values):5.2f}")


if __name__ == "__main__":
    main()
