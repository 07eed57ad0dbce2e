"""What one path lookup costs in a container, by engine and user: the engine's storage driver can make it ~40x.

    python bench/storage_lookups.py [--image codebox-sandbox:latest] [--n 20000]

In one container per case (the image given, network none), Python times ``os.stat`` of paths that start at
"/" ("/usr/lib", "/usr/lib/missing", "/tmp/missing") and of a relative one from its working folder, as root
and as the sandbox's unprivileged user (65534), under Docker and, where it is installed, Podman; the host
runs the same loop as itself and as 65534 (setpriv). Printed: microseconds per lookup, each engine's storage
driver, and the load average. Why it matters: on a FUSE root file system (Docker's fuse-overlayfs driver) the
kernel asks the FUSE daemon before a non-root process may search "/", on every lookup that starts there, and
codebox never runs repository code as root; a pytest run makes tens of thousands of such lookups.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

PROBE = """
import json, os, sys, time
n = int(sys.argv[1])
os.chdir("/tmp")
out = {}
for path in ("/usr/lib", "/usr/lib/missing", "/tmp/missing", "missing"):
    started = time.perf_counter()
    for _ in range(n):
        os.path.exists(path)
    out[path] = (time.perf_counter() - started) / n * 1e6
print(json.dumps(out))
"""


def driver(engine: str) -> str:
    field = "{{.Driver}}" if engine == "docker" else "{{.Store.GraphDriverName}}"
    done = subprocess.run([engine, "info", "--format", field], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


def in_container(engine: str, image: str, user: str, n: int) -> dict[str, float]:
    # Podman's default rlimits exceed this machine's hard limits: explicit ones, as codebox's Podman backend sets.
    limits = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"] if engine == "podman" else []
    done = subprocess.run([engine, "run", "--rm", "--network", "none", "--user", user, "--tmpfs", "/tmp:rw,mode=1777",
                           *limits, image, "python3", "-c", PROBE, str(n)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{engine} run failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def on_host(user: str | None, n: int) -> dict[str, float]:
    prefix = ["setpriv", "--reuid", user, "--regid", user, "--clear-groups"] if user else []
    done = subprocess.run([*prefix, sys.executable, "-c", PROBE, str(n)], capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def row(name: str, took: dict[str, float]) -> str:
    return f"{name:<34}" + "".join(f"{took[p]:>18.1f}" for p in took)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image", default="codebox-sandbox:latest")
    parser.add_argument("--n", type=int, default=20000)
    args = parser.parse_args()
    print(f"# load {os.getloadavg()[0]:.2f}; µs per os.stat, median of 3 containers each")
    engines = ["docker", *(["podman"] if shutil.which("podman") else [])]
    header = None
    for engine in engines:
        print(f"# {engine}: storage driver {driver(engine)}")
        for user, label in (("0:0", "root"), ("65534:65534", "the sandbox's user (65534)")):
            runs = [in_container(engine, args.image, user, args.n) for _ in range(3)]
            took = {p: sorted(r[p] for r in runs)[1] for p in runs[0]}
            if header is None:
                header = f"{'where':<34}" + "".join(f"{p:>18}" for p in took)
                print(header)
            print(row(f"{engine}, {label}", took))
    for host_user, label in ((None, "host, this user"), ("65534", "host, 65534")):
        print(row(label, on_host(host_user, args.n)))
    print(f"# load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
