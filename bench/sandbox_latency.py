"""Per-call cost of the sandbox boundary, measured in one run, as medians and ratios.

    python bench/sandbox_latency.py [--n 200] [--starts 5] [--image codebox-sandbox:latest]

Compares a read_file round trip through ``Sandbox.call`` (one persistent attach
socket to the in-container server) with the per-call alternatives: ``docker exec
cat`` through the CLI, an exec through codebox's own Engine API client (what the
docker SDK's ``exec_run`` does: create, start, read, inspect), and on the host an
in-process read and ``subprocess.run(["cat", f])``. Also: container start-to-ready (ping
answered), ``docker run --rm --network none <image> true``, and close (kill + remove).
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
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent.containers.engine_api import EngineClient, NotFound  # noqa: E402
from agent.containers.sandbox import Sandbox  # noqa: E402
from agent.sandboxes.config import SandboxConfig  # noqa: E402


def _times(fn: Callable[[], object], n: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200, help="calls per per-call path (default 200)")
    parser.add_argument("--starts", type=int, default=5, help="container starts to time (default 5)")
    parser.add_argument("--image", default=SandboxConfig().image)
    args = parser.parse_args(argv)
    n = args.n

    client = EngineClient.from_env()
    try:
        client.inspect_image(args.image)
    except NotFound:
        print(f"image {args.image} missing: run `codebox image build` first", file=sys.stderr)
        return 2

    rows: list[tuple[str, float, int]] = []
    with tempfile.TemporaryDirectory(prefix="codebox-bench-") as tmp:
        repo = Path(tmp)
        repo.chmod(0o755)  # the sandbox user (nobody) reads it
        sample = repo / "sample.txt"
        sample.write_text("".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(20)))
        cfg = SandboxConfig(image=args.image)

        # -- per-call paths ---------------------------------------------------------------------
        with Sandbox(repo, cfg, task_id="bench") as sb:
            cid = sb.container_ids[0]
            reply = sb.call("read_file", {"path": "sample.txt"})
            assert reply.ok, reply
            call = _times(lambda: sb.call("read_file", {"path": "sample.txt"}), n)
            rows.append(("read_file via Sandbox.call (attach socket)", _ms(call), n))
            cat_n = max(20, n // 4)
            run_cat = _times(lambda: sb.call("run_test", {"argv": ["cat", "sample.txt"], "timeout_s": 10}), cat_n)
            rows.append(("run_test `cat` via Sandbox.call", _ms(run_cat), cat_n))
            cli = _times(
                lambda: subprocess.run(
                    ["docker", "exec", cid, "cat", "/repo/sample.txt"], capture_output=True, check=True
                ),
                n,
            )
            rows.append(("`docker exec <ctr> cat` (CLI, subprocess)", _ms(cli), n))
            def exec_cat() -> bytes:
                exec_id = client.exec_create(cid, ["cat", "/repo/sample.txt"])
                out = b"".join(data for _stream, data in client.exec_start(exec_id))
                client.exec_inspect(exec_id)
                return out

            api = _times(exec_cat, n)
            rows.append(("exec cat via the Engine API client", _ms(api), n))

        host_read = _times(lambda: sample.read_text(), n)
        rows.append(("host: in-process read", _ms(host_read), n))
        host_cat = _times(lambda: subprocess.run(["cat", str(sample)], capture_output=True, check=True), n)
        rows.append(("host: subprocess.run(['cat', f])", _ms(host_cat), n))

        # -- container lifecycle ----------------------------------------------------------------
        ready: list[float] = []
        start_total: list[float] = []
        close: list[float] = []
        for i in range(args.starts):
            sb = Sandbox(repo, cfg, task_id=f"bench-start-{i}")
            t0 = time.perf_counter()
            sb.start()
            start_total.append(time.perf_counter() - t0)
            assert sb.startup_s is not None
            ready.append(sb.startup_s)
            t0 = time.perf_counter()
            sb.close()
            close.append(time.perf_counter() - t0)
        rows.append(("container start-to-ready (create..ping answered)", _ms(ready), args.starts))
        rows.append(("Sandbox.start() total (incl. image check, reap)", _ms(start_total), args.starts))
        run_true = _times(
            lambda: subprocess.run(
                ["docker", "run", "--rm", "--network", "none", args.image, "true"], capture_output=True, check=True
            ),
            args.starts,
            warmup=1,
        )
        rows.append(("`docker run --rm --network none <image> true`", _ms(run_true), args.starts))
        rows.append(("Sandbox.close() (kill + remove)", _ms(close), args.starts))

    width = max(len(r[0]) for r in rows)
    print(f"\n{'path':<{width}}  {'median ms':>10}  {'n':>5}")
    print(f"{'-' * width}  {'-' * 10}  {'-' * 5}")
    for name, ms, count in rows:
        print(f"{name:<{width}}  {ms:>10.3f}  {count:>5}")

    med = {name: ms for name, ms, _ in rows}
    sb_call = med["read_file via Sandbox.call (attach socket)"]
    ratios = [
        ("docker exec CLI / Sandbox.call", med["`docker exec <ctr> cat` (CLI, subprocess)"] / sb_call),
        ("Engine API exec / Sandbox.call", med["exec cat via the Engine API client"] / sb_call),
        ("Sandbox.call / host in-process read", sb_call / med["host: in-process read"]),
        ("Sandbox.call / host subprocess cat", sb_call / med["host: subprocess.run(['cat', f])"]),
        (
            "run_test cat / host subprocess cat",
            med["run_test `cat` via Sandbox.call"] / med["host: subprocess.run(['cat', f])"],
        ),
        (
            "start-to-ready / docker run --rm true",
            med["container start-to-ready (create..ping answered)"]
            / med["`docker run --rm --network none <image> true`"],
        ),
    ]
    print("\nratios (this run)")
    for name, value in ratios:
        print(f"  {name:<40} {value:10.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
