"""Real SWE-bench rows as shipped, through `codebox eval`: gold and empty patches, one table per run.

For each selected row of the dataset (default: the 71-row Lite development set), this writes two
predictions files, the row's own `patch` (gold) and an empty patch, runs `codebox eval` once for each
with its defaults (only `--repos`, `--jobs` and `--out`, plus what you put after `--`), and writes a
per-instance table: instance, repo, version, the Python SWE-bench's spec names for it, the Python the
tests ran on, the gold and the empty verdicts, their times, and the one-line cause of an error or a
miss, taken from codebox's own eval.json. The expected result: gold `resolved`, empty `unresolved`
with its tests run (an empty patch in `error` is a harness failure, not a verdict).

    python bench/swebench_dev.py --per-version 1 --out /tmp/dev1
    python bench/swebench_dev.py --instances psf__requests-2317,pallets__flask-4045 --codebox ../wt/x/.venv/bin/codebox
    python bench/swebench_dev.py --repo sympy/sympy --limit 3 -- --as-of now

--codebox: the `codebox` of the checkout to measure (default: the one beside this Python); the table
records that checkout's commit and the load average before and after. --specs: SWE-bench's specs as
data, the `swebench` 4.1.0 wheel (`pip download --no-deps swebench==4.1.0`) or its
`swebench/harness/constants/python.py`; read, never imported into this process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATASET = ROOT.parent / "shared" / "datasets" / "swe-bench-lite-dev.jsonl"
SPECS_IN_WHEEL = "swebench/harness/constants/python.py"
CAUSE_CHARS = 240


@dataclass
class Row:
    instance: str
    repo: str
    version: str
    spec_python: str
    ran_python: str = ""
    gold: str = ""
    gold_s: float = 0.0
    gold_cause: str = ""
    empty: str = ""
    empty_ran: bool = False
    empty_s: float = 0.0
    empty_cause: str = ""


def read_rows(dataset: Path) -> list[tuple[str, dict]]:
    """Each line as shipped (its exact text, to write the subset byte for byte) with its parsed form."""
    lines = [line for line in dataset.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(line, json.loads(line)) for line in lines]


def select(rows: list[tuple[str, dict]], args: argparse.Namespace) -> list[tuple[str, dict]]:
    wanted = {i.strip() for chunk in args.instances for i in chunk.split(",") if i.strip()}
    picked = []
    per_version: dict[tuple[str, str], int] = {}
    for line, row in rows:
        if wanted and row["instance_id"] not in wanted:
            continue
        if args.repo and row["repo"] not in args.repo:
            continue
        key = (row["repo"], str(row.get("version", "")))
        if args.per_version and per_version.get(key, 0) >= args.per_version:
            continue
        per_version[key] = per_version.get(key, 0) + 1
        picked.append((line, row))
    if missing := wanted - {row["instance_id"] for _, row in picked}:
        sys.exit(f"swebench_dev: not in the dataset: {', '.join(sorted(missing))}")
    return picked[: args.limit] if args.limit else picked


def spec_pythons(specs: Path | None) -> dict[str, dict[str, str]]:
    """repo -> version -> Python, from SWE-bench 4.1.0's specs (plain data: dicts and comprehensions)."""
    if specs is None:
        return {}
    if specs.suffix == ".whl":
        with zipfile.ZipFile(specs) as wheel:
            source = wheel.read(SPECS_IN_WHEEL).decode()
    else:
        source = specs.read_text(encoding="utf-8")
    namespace: dict = {}
    exec(compile(source, str(specs), "exec"), namespace)  # the file imports nothing; it is tables
    table = namespace["MAP_REPO_VERSION_TO_SPECS_PY"]
    return {repo: {v: str(s.get("python", "")) for v, s in versions.items()} for repo, versions in table.items()}


def checkout_of(codebox: Path) -> tuple[str, str]:
    """The measured checkout's folder and commit, asked of the codebox's own Python."""
    python = codebox.with_name("python")
    where = subprocess.run([str(python), "-c", "import agent, pathlib; print(pathlib.Path(agent.__file__).parents[1])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    commit = subprocess.run(["git", "-C", where, "log", "-1", "--format=%h %s"],
                            capture_output=True, text=True).stdout.strip()
    return where, commit


def one_line(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= CAUSE_CHARS else text[: CAUSE_CHARS - 1] + "…"


def cause(verdict: dict) -> str:
    """Why an instance is not what it should be, in codebox's words (eval.json)."""
    status = verdict.get("status")
    if status == "error":
        text = verdict.get("error") or verdict.get("harness_error") or ""
        lines = [line for line in text.splitlines() if line.strip()]
        return one_line(lines[0] + (f" … {lines[-1]}" if len(lines) > 1 else "")) if lines else ""
    if status == "patch_failed":
        tried = (verdict.get("model_patch") or {}).get("tried") or []
        return one_line("patch did not apply: " + (str(tried[-1]) if tried else ""))
    if verdict.get("no_report"):
        return one_line(f"no report: {verdict['no_report']}")
    bad_f2p = {t: o for t, o in (verdict.get("fail_to_pass") or {}).items() if o not in ("passed", "xfail")}
    bad_p2p = {t: o for t, o in (verdict.get("pass_to_pass") or {}).items()
               if o not in ("passed", "xfail", "skipped")}
    parts = []
    for label, bad in (("F2P not passing", bad_f2p), ("P2P broken", bad_p2p)):
        if bad:
            parts.append(f"{label} {len(bad)}: " + ", ".join(f"{t} ({o})" for t, o in list(bad.items())[:2]))
    notes = verdict.get("verdict_notes") or []
    if notes and status != "resolved":
        parts.append(str(notes[0]))
    return one_line("; ".join(parts))


def python_of(verdict: dict) -> str:
    """The Python the instance was given: the verdict's own record where codebox keeps one, else its env's."""
    chosen = verdict.get("python") or {}
    if isinstance(chosen, dict) and chosen.get("ran"):
        return str(chosen["ran"])
    return str((verdict.get("env") or {}).get("python") or "")


def run_eval(codebox: Path, subset: Path, predictions: Path, out: Path, args: argparse.Namespace) -> float:
    command = [str(codebox), "eval", "--dataset", str(subset), "--predictions", str(predictions),
               "--repos", str(args.repos), "--jobs", str(args.jobs), "--out", str(out), *args.eval_args]
    started = time.monotonic()
    with open(out.with_suffix(".log"), "w") as log:
        log.write(" ".join(command) + "\n")
        log.flush()
        subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
    return time.monotonic() - started


def verdicts(out: Path) -> dict[str, dict]:
    found = {}
    for path in out.glob("*/eval.json"):
        verdict = json.loads(path.read_text())
        found[verdict["instance_id"]] = verdict
    return found


def markdown(rows: list[Row], header: dict) -> str:
    lines = [f"- codebox: `{header['commit']}` ({header['checkout']})",
             f"- date: {header['date']}; load average before/after: {header['load_before']} / {header['load_after']}",
             f"- gold: {header['gold_resolved']}/{len(rows)} resolved in {header['gold_wall_s']:.0f} s; "
             f"empty: {header['empty_ran']}/{len(rows)} ran their tests, {header['empty_resolved']} resolved, "
             f"in {header['empty_wall_s']:.0f} s; eval args: `{' '.join(header['eval_args']) or '(defaults)'}`",
             "",
             "| instance | version | spec Py | ran Py | gold | time | empty | time | cause (gold; empty) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        empty_ok = r.empty == "unresolved" and r.empty_ran
        gold_why = r.gold_cause if r.gold != "resolved" else ""
        empty_why = "" if empty_ok else ("empty: the same" if r.empty_cause == gold_why else f"empty: {r.empty_cause}")
        why = "; ".join(c for c in (gold_why, empty_why) if c)
        empty = r.empty + ("" if r.empty_ran or not r.empty else " (no tests ran)")
        lines.append(f"| {r.instance} | {r.version} | {r.spec_python} | {r.ran_python} | {r.gold} | {r.gold_s:.0f}s "
                     f"| {empty} | {r.empty_s:.0f}s | {why.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--repos", type=Path, default=Path("/work/repos"))
    parser.add_argument("--instances", action="append", default=[], help="ids, comma-separated (repeatable)")
    parser.add_argument("--repo", action="append", default=[], help="owner/name (repeatable)")
    parser.add_argument("--per-version", type=int, default=0, help="at most N rows per repository and version")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--codebox", type=Path, default=Path(sys.executable).with_name("codebox"))
    parser.add_argument("--specs", type=Path, help="swebench 4.1.0 wheel or its constants/python.py")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", choices=["gold", "empty"], help="run one of the two")
    parser.add_argument("--tabulate", action="store_true", help="only write the table again from --out's verdicts")
    parser.add_argument("--out", type=Path, default=Path("codebox-out") / time.strftime("swebench_dev-%Y%m%dT%H%M%S"))
    parser.add_argument("eval_args", nargs="*", help="after --: more `codebox eval` arguments")
    args = parser.parse_args()

    picked = select(read_rows(args.dataset), args)
    if not picked:
        sys.exit("swebench_dev: no row selected")
    args.out.mkdir(parents=True, exist_ok=True)
    subset = args.out / "dataset.jsonl"
    subset.write_text("".join(line + "\n" for line, _ in picked), encoding="utf-8")
    for kind in ("gold", "empty"):
        with open(args.out / f"{kind}.jsonl", "w") as f:
            for _, row in picked:
                patch = row["patch"] if kind == "gold" else ""
                f.write(json.dumps({"instance_id": row["instance_id"], "model_name_or_path": kind,
                                    "model_patch": patch}) + "\n")

    kept = args.out / "table.json"
    header = json.loads(kept.read_text())["run"] if args.tabulate else run_both(args, picked, subset)
    tabulate(args, picked, header)


def run_both(args: argparse.Namespace, picked: list[tuple[str, dict]], subset: Path) -> dict:
    checkout, commit = checkout_of(args.codebox)
    header: dict = {"checkout": checkout, "commit": commit, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "load_before": " ".join(f"{x:.1f}" for x in os.getloadavg()), "eval_args": args.eval_args,
                    "dataset": str(args.dataset), "gold_wall_s": 0.0, "empty_wall_s": 0.0}
    kinds = [args.only] if args.only else ["gold", "empty"]
    for kind in kinds:
        print(f"swebench_dev: {kind}: {len(picked)} instances with {args.codebox}", file=sys.stderr, flush=True)
        header[f"{kind}_wall_s"] = run_eval(args.codebox, subset, args.out / f"{kind}.jsonl", args.out / kind, args)
    header["load_after"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return header


def tabulate(args: argparse.Namespace, picked: list[tuple[str, dict]], header: dict) -> None:
    specs = spec_pythons(args.specs)
    gold, empty = verdicts(args.out / "gold"), verdicts(args.out / "empty")
    table = []
    for _, row in picked:
        iid, version = row["instance_id"], str(row.get("version", ""))
        r = Row(iid, row["repo"], version, specs.get(row["repo"], {}).get(version, "?" if specs else ""))
        if g := gold.get(iid):
            r.gold, r.gold_s, r.gold_cause = g["status"], g.get("duration_s") or 0.0, cause(g)
            r.ran_python = python_of(g)
        if e := empty.get(iid):
            r.empty, r.empty_s, r.empty_cause = e["status"], e.get("duration_s") or 0.0, cause(e)
            r.empty_ran = bool(e.get("tests_status")) or e.get("exit_code") is not None
            r.ran_python = r.ran_python or python_of(e)
        table.append(r)
    header["gold_resolved"] = sum(r.gold == "resolved" for r in table)
    header["empty_resolved"] = sum(r.empty == "resolved" for r in table)
    header["empty_ran"] = sum(r.empty_ran for r in table)
    (args.out / "table.json").write_text(json.dumps({"run": header, "rows": [asdict(r) for r in table]}, indent=1))
    text = markdown(table, header)
    (args.out / "table.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
