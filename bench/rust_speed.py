"""A crate's `cargo test` in the sandbox against the host, build cached on both sides, and a cache hit of its
environment offline.

    python bench/rust_speed.py CRATE_DIR [--n 5]

1. The crate's environment is built (or found), then found again N times with every proxy variable pointing
   at a closed port on 127.0.0.1 (a lookup that tried the network would fail): the hit's median seconds.
2. Its test command (as codebox detects it) runs once on each side to fill the build caches (the sandbox's
   /tmp/codebox-cache, a scratch CARGO_TARGET_DIR on the host, a scratch copy of the crate), then N times
   each, interleaved host / sandbox: the medians and their ratio. The host runs the same command with its
   own toolchain (rustup's, here), RUSTC_BOOTSTRAP=1.
Printed with `uptime` beside.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent.containers.sandbox import Sandbox  # noqa: E402
from agent.env.cancel import NEVER  # noqa: E402
from agent.languages.registry import detect  # noqa: E402
from agent.languages.rust.env import ensure_rust_env  # noqa: E402
from agent.sandboxes.config import SandboxConfig  # noqa: E402

CLOSED = "http://127.0.0.1:9"


def cache_hits(repo: Path, n: int) -> list[float]:
    ensure_rust_env(repo, None, "docker", print, NEVER, repo.name)
    saved = {k: os.environ.get(k) for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")}
    os.environ.update({k: CLOSED for k in saved})
    try:
        times = []
        for _ in range(n):
            started = time.perf_counter()
            info = ensure_rust_env(repo, None, "docker", lambda _: None, NEVER, repo.name)
            times.append(time.perf_counter() - started)
            assert not info.built
        return times
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("crate")
    parser.add_argument("--n", type=int, default=5)
    args = parser.parse_args()
    repo = Path(args.crate).resolve()
    found = detect(repo)
    assert found is not None and found.language == "rust", "not a crate"
    print(f"# {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    hits = cache_hits(repo, max(args.n, 10))
    print(f"environment cache hit, offline: median {statistics.median(hits) * 1000:.0f} ms "
          f"(min {min(hits) * 1000:.0f}, max {max(hits) * 1000:.0f}, n={len(hits)})")
    env = ensure_rust_env(repo, None, "docker", lambda _: None, NEVER, repo.name)
    command = found.command
    host_command = list(command)
    if "--lockfile-path" in host_command:
        at = host_command.index("--lockfile-path")
        host_command = host_command[:at - 1] + host_command[at + 2:]
    with tempfile.TemporaryDirectory(prefix="codebox-bench-rust-") as tmp:
        copy = Path(tmp) / "crate"
        shutil.copytree(repo, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", "target"))
        host_env = {**os.environ, "RUSTC_BOOTSTRAP": "1", "CARGO_TARGET_DIR": str(Path(tmp) / "target")}
        config = SandboxConfig(image=env.run_image)
        with Sandbox(repo, config, task_id="bench-rust-speed") as sandbox:
            def box() -> float:
                started = time.perf_counter()
                reply = sandbox.call("run_test", {"argv": command, "timeout_s": 3600}, timeout_s=3600)
                assert reply.outcome in ("ok", "failed"), reply.output[-2000:]
                return time.perf_counter() - started

            def host() -> float:
                started = time.perf_counter()
                subprocess.run(host_command, cwd=copy, env=host_env, capture_output=True, check=False)
                return time.perf_counter() - started

            cold_box, cold_host = box(), host()
            print(f"first run (build): sandbox {cold_box:.1f} s, host {cold_host:.1f} s")
            boxes, hosts = [], []
            for _ in range(args.n):
                hosts.append(host())
                boxes.append(box())
    b, h = statistics.median(boxes), statistics.median(hosts)
    print(f"cargo test, build cached: sandbox median {b:.2f} s, host median {h:.2f} s, ratio {b / h:.2f} "
          f"(n={args.n}, interleaved)")
    print(f"# {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
