"""A crate's `cargo test` in the sandbox against the host, build cached on both sides, and a cache hit of its
environment offline.

    python bench/rust_speed.py CRATE_DIR [--n 5] [--toolchain rustup|debian] [--cpus N] [--backend podman]

1. The crate's environment is built (or found) on the toolchain chosen (default: as codebox chooses, the
   host's rustup toolchain when there is one), then found again N times with every proxy variable pointing
   at a closed port on 127.0.0.1 (a lookup that tried the network would fail): the hit's median seconds.
2. Its test command (as codebox detects it) runs once on each side to fill the build caches (the sandbox's
   /tmp/codebox-cache, a scratch CARGO_TARGET_DIR on the host, a scratch copy of the crate), then N times
   each, interleaved host / sandbox, in phases that say where the time goes: `true` (the sandbox's own cost
   of a run_test call), `cargo test --no-run` (cargo's start and its freshness check of every unit), `cargo
   test --doc` (rustdoc compiles each doc test on every run: nothing caches them), and the whole command.
   Per phase: the medians, their ratio, the seconds inside the box (the call's own clock) and how many units
   cargo compiled again on a cached run (a fingerprint that changed between runs would show here).
   The host runs the same commands with its own toolchain (rustup's), RUSTC_BOOTSTRAP=1.
3. Beside the wall clock, each side's CPU seconds (the host's: getrusage of the command's processes; the
   sandbox's: its containers' cpuacct, cgroup v1). Why: with cgroup v1 every container sits under one
   `docker` cgroup whose weight equals ONE process of the host's root cgroup, so on a machine loaded by
   other containers a box gets a small share of the CPU where a host process gets a whole one; the CPU
   seconds say whether the box does more work, whatever the share. `--host-cgroup` runs the host's commands
   in a cgroup of their own under `docker` (made and removed here), so both sides compete as equals.
4. `--backend podman`: the environment is built in Podman's store and the sandbox runs in Podman (kernel
   overlay storage, where Docker's here is fuse-overlayfs); its containers' cgroup parent is `libpod_parent`
   (Podman's cgroupfs manager), which `--host-cgroup` then joins instead of `docker`.
Printed with `uptime` beside.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent.backends.registry import get_backend  # noqa: E402
from agent.env.cancel import NEVER  # noqa: E402
from agent.languages.registry import detect  # noqa: E402
from agent.languages.rust.env import ensure_rust_env  # noqa: E402
from agent.sandboxes.config import SandboxConfig  # noqa: E402

CLOSED = "http://127.0.0.1:9"


def cache_hits(repo: Path, n: int, backend: str) -> list[float]:
    ensure_rust_env(repo, None, backend, print, NEVER, repo.name)
    saved = {k: os.environ.get(k) for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")}
    os.environ.update({k: CLOSED for k in saved})
    try:
        times = []
        for _ in range(n):
            started = time.perf_counter()
            info = ensure_rust_env(repo, None, backend, lambda _: None, NEVER, repo.name)
            times.append(time.perf_counter() - started)
            assert not info.built
        return times
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# Each engine's cgroup parent of its containers (cgroup v1, cgroupfs) and a container's folder in it.
CGROUP_PARENT = {"docker": "docker", "podman": "libpod_parent"}
CONTAINER_CGROUP = {"docker": "{id}", "podman": "libpod-{id}"}


def box_cpu_s(container_ids: list[str], backend: str) -> float:
    """CPU seconds the sandbox's containers have used so far (cgroup v1's cpuacct; 0 where there is none)."""
    total = 0
    for cid in container_ids:
        folder = Path("/sys/fs/cgroup/cpuacct") / CGROUP_PARENT[backend] / CONTAINER_CGROUP[backend].format(id=cid)
        with contextlib.suppress(OSError, ValueError):
            total += int((folder / "cpuacct.usage").read_text())
    return total / 1e9


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@contextlib.contextmanager
def host_cgroup(wanted: bool, backend: str) -> Iterator[Path | None]:
    """A cpu cgroup beside the engine's containers for the host's commands (``wanted`` and cgroup v1), removed
    after."""
    if not wanted:
        yield None
        return
    parent = Path("/sys/fs/cgroup/cpu") / CGROUP_PARENT[backend]
    if not parent.is_dir():
        raise SystemExit(f"--host-cgroup: {parent} is not there (cgroup v1 with the cgroupfs driver only)")
    path = parent / f"codebox-bench-host-{os.getpid()}"
    path.mkdir()
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            path.rmdir()


def recompiled(text: str) -> int:
    """Units cargo compiled (again) in a run, from its status lines."""
    return sum(1 for line in text.splitlines() if line.lstrip().startswith("Compiling "))


def without_lock_path(command: list[str]) -> list[str]:
    """The command as the host runs it in its writable copy: without the sandbox's --lockfile-path (cargo up
    to 1.94; a newer one gets the lock path from the image's variables, which the host does not set)."""
    if "--lockfile-path" not in command:
        return list(command)
    at = command.index("--lockfile-path")
    return command[:at - 1] + command[at + 2:]


def phases(command: list[str]) -> list[tuple[str, list[str]]]:
    cut = command.index("--") if "--" in command else len(command)
    return [("true", ["true"]), ("cargo test --no-run", [*command[:cut], "--no-run"]),
            ("cargo test --doc", [*command[:cut], "--doc", *command[cut:]]), ("cargo test (all)", command)]


HIT = ("import sys; sys.path.insert(0, {root!r}); from pathlib import Path; "
       "from agent.languages.rust.env import ensure_rust_env; "
       "assert not ensure_rust_env(Path({repo!r}), None, {backend!r}).built")


def process_hits(repo: Path, n: int, backend: str) -> tuple[list[float], str]:
    """A cache hit as a new Python process (its imports included), under ``unshare -n`` when this user may
    make a network namespace (no route anywhere; the daemon's unix socket stays), else with closed proxies."""
    unshare = shutil.which("unshare")
    offline = bool(unshare) and subprocess.run([str(unshare), "-n", "true"], capture_output=True).returncode == 0
    prefix = [str(unshare), "-n"] if offline else []
    env = {**os.environ, **({} if offline else {k: CLOSED for k in ("http_proxy", "https_proxy")})}
    code = HIT.format(root=str(ROOT), repo=str(repo), backend=backend)
    times = []
    for _ in range(n):
        started = time.perf_counter()
        subprocess.run([*prefix, sys.executable, "-c", code], env=env, check=True)
        times.append(time.perf_counter() - started)
    return times, "under unshare -n" if offline else "proxies closed (no unshare -n here)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("crate")
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--toolchain", choices=["rustup", "debian"], default=None)
    parser.add_argument("--cpus", type=float, default=None, help="the sandbox's CPUs (default: codebox's)")
    parser.add_argument("--host-cgroup", action="store_true",
                        help="the host's commands in a cgroup beside the engine's containers")
    parser.add_argument("--backend", choices=["docker", "podman"], default="docker",
                        help="where the environment is built and the sandbox runs (default: docker)")
    args = parser.parse_args()
    if args.toolchain:
        os.environ["CODEBOX_RUST_TOOLCHAIN"] = args.toolchain
    repo = Path(args.crate).resolve()
    found = detect(repo)
    assert found is not None and found.language == "rust", "not a crate"
    print(f"# {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    hits = cache_hits(repo, max(args.n, 10), args.backend)
    print(f"environment cache hit, offline: median {statistics.median(hits) * 1000:.0f} ms "
          f"(min {min(hits) * 1000:.0f}, max {max(hits) * 1000:.0f}, n={len(hits)})")
    spawned, where = process_hits(repo, max(args.n, 10), args.backend)
    print(f"environment cache hit as a new process, {where}: median {statistics.median(spawned) * 1000:.0f} ms "
          f"(min {min(spawned) * 1000:.0f}, max {max(spawned) * 1000:.0f}, n={len(spawned)})")
    env = ensure_rust_env(repo, None, args.backend, lambda _: None, NEVER, repo.name)
    for note in env.notes:
        print(f"# {note}")
    print(f"# the box's {env.toolchain}")
    found = detect(repo, env)  # the command as the environment's cargo takes it
    assert found is not None
    command = found.command
    print(f"# test command: {' '.join(command)}")
    with (tempfile.TemporaryDirectory(prefix="codebox-bench-rust-") as tmp,
          host_cgroup(args.host_cgroup, args.backend) as cgroup):
        copy = Path(tmp) / "crate"
        shutil.copytree(repo, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", "target"))
        host_env = {**os.environ, "RUSTC_BOOTSTRAP": "1", "CARGO_TARGET_DIR": str(Path(tmp) / "target")}
        config = SandboxConfig(backend=args.backend, image=env.run_image)
        if args.cpus:
            config = dataclasses.replace(config, cpus=args.cpus)
        print(f"# sandbox: {args.backend}, {config.cpus:g} CPUs, {config.memory} memory; host: {os.cpu_count()} "
              f"CPUs{', in ' + str(cgroup) if cgroup else ''}")
        sandbox = get_backend(args.backend).session(repo, config, task_id="bench-rust-speed")
        with contextlib.closing(sandbox):
            def box(argv: list[str]) -> tuple[float, float, int]:
                cpu, started = box_cpu_s(sandbox.container_ids, args.backend), time.perf_counter()
                reply = sandbox.call("run_test", {"argv": argv, "timeout_s": 3600}, timeout_s=3600)
                took = time.perf_counter() - started
                assert reply.outcome in ("ok", "failed"), reply.output[-2000:]
                return took, box_cpu_s(sandbox.container_ids, args.backend) - cpu, recompiled(reply.output)

            def join() -> None:  # in the child, before exec: into the host's cgroup
                assert cgroup is not None
                (cgroup / "cgroup.procs").write_text(str(os.getpid()))

            def host(argv: list[str]) -> tuple[float, float, int]:
                cpu, started = children_cpu_s(), time.perf_counter()
                done = subprocess.run(without_lock_path(argv), cwd=copy, env=host_env, capture_output=True,
                                      text=True, errors="replace", check=False,
                                      preexec_fn=join if cgroup is not None else None)
                took = time.perf_counter() - started
                return took, children_cpu_s() - cpu, recompiled(done.stderr)

            cold_box, cold_host = box(command)[0], host(command)[0]
            print(f"first run (build): sandbox {cold_box:.1f} s, host {cold_host:.1f} s")
            results: dict[str, tuple[list[tuple[float, float, int]], list[tuple[float, float, int]]]] = {}
            for _ in range(args.n):
                for name, argv in phases(command):
                    hosts, boxes = results.setdefault(name, ([], []))
                    hosts.append(host(argv))
                    boxes.append(box(argv))
    for name, (hosts, boxes) in results.items():
        b, h = statistics.median(t for t, _, _ in boxes), statistics.median(t for t, _, _ in hosts)
        b_cpu, h_cpu = statistics.median(c for _, c, _ in boxes), statistics.median(c for _, c, _ in hosts)
        again = max(c for _, _, c in boxes), max(c for _, _, c in hosts)
        print(f"{name}: wall: sandbox {b:.2f} s, host {h:.2f} s, ratio {b / h:.2f}; CPU: sandbox {b_cpu:.2f} s, "
              f"host {h_cpu:.2f} s, ratio {b_cpu / h_cpu if h_cpu else float('nan'):.2f}; compiled again: "
              f"sandbox {again[0]}, host {again[1]} units (medians, n={args.n}, interleaved)")
    print(f"# {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
