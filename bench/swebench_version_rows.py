"""Rows of one SWE-bench version, one after another, each in its own `codebox eval`, from an empty cache: does the
second row reuse the first row's environment? Per row: the verdict, the environment's time, its as-of date and the
keys of its environment image and dependencies image (from codebox's own record), and whether the lock was reused.

    python bench/swebench_version_rows.py --instances pytest-dev__pytest-7168,pytest-dev__pytest-7220
    python bench/swebench_version_rows.py --instances sympy__sympy-15308,sympy__sympy-15345 \\
        --codebox /work/main/.venv/bin/codebox          # the same on another checkout

The cache (CODEBOX_CACHE_DIR) is a new folder under --out: the images already in the engine's store are found
only through codebox's record, so every environment is built as on a fresh machine (the downloads too).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATASET = ROOT.parent / "shared" / "datasets" / "swe-bench-lite-dev.jsonl"


def run_row(row: str, args: argparse.Namespace, cache: Path) -> dict[str, object]:
    out = args.out / row
    command = [sys.executable, str(ROOT / "bench" / "swebench_dev.py"), "--instances", row, "--only", "gold",
               "--jobs", "1", "--codebox", str(args.codebox), "--out", str(out), "--dataset", str(args.dataset),
               "--repos", str(args.repos)]
    subprocess.run(command, env={**os.environ, "CODEBOX_CACHE_DIR": str(cache)}, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    result = json.loads((out / "gold" / row / "eval.json").read_text())
    env = result.get("env") or {}
    records = {}
    for path in (cache / "env-images").glob("*.json"):
        entry = json.loads(path.read_text())
        records[entry["id"]] = entry
    deps = records.get(records.get(env.get("image_id"), {}).get("deps", ""), {})
    log = (out / "gold.log").read_text()
    return {"row": row, "status": result["status"], "env_s": result.get("timings", {}).get("env"),
            "as_of": (env.get("as_of") or "")[:10], "env_key": records.get(env.get("image_id"), {}).get("key", "")[:16],
            "deps_key": deps.get("key", "")[:16], "lock_reused": "resolved before as of that date" in log,
            "deps_reused": "reusing the dependencies image" in log,
            "env_reused": "codebox: env: reusing codebox-env:" in log}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", required=True, help="ids of one version, comma-separated, in order")
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--repos", type=Path, default=Path("/work/repos"))
    parser.add_argument("--codebox", type=Path, default=Path(sys.executable).with_name("codebox"))
    parser.add_argument("--out", type=Path, default=Path("codebox-out") / time.strftime("version_rows-%Y%m%dT%H%M%S"))
    args = parser.parse_args()
    cache = args.out / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    print("| row | gold | env s | as of | env key | deps key | lock reused | deps image reused | env reused |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in [r.strip() for r in args.instances.split(",") if r.strip()]:
        r = run_row(row, args, cache)
        print(f"| {r['row']} | {r['status']} | {r['env_s']} | {r['as_of']} | {r['env_key']} | {r['deps_key']} | "
              f"{r['lock_reused']} | {r['deps_reused']} | {r['env_reused']} |", flush=True)


if __name__ == "__main__":
    main()
