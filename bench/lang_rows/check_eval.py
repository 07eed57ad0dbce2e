"""The committed eval rows of real upstream fixes (bench/lang_rows/rows.jsonl: Rust, Go and Node projects) graded by
`codebox eval` with its defaults, network off in the box: every gold patch resolved, every empty patch unresolved
after a real test run of the named tests.

The rows name their repositories (owner/name) and no code of them is committed: this reads each from a mirror
the `fetch` tool brought (CODEBOX_LANG_ROWS_MIRRORS, default /work/.mirror, laid out OWNER+NAME/repo) and skips a
language whose mirrors are not on this machine, saying which.

A measurement over fetched repositories, not a test of the suite: CI cannot fetch them (no GitHub here), and the
eleven rows take 10-20 minutes. Run it by name, with the mirrors present:

    .venv/bin/pytest bench/lang_rows/check_eval.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.timeout(5400)]  # Rust's rows compile with Debian's slow rustc

ROWS = Path(__file__).resolve().parent / "rows.jsonl"
MIRRORS = Path(os.environ.get("CODEBOX_LANG_ROWS_MIRRORS", "/work/.mirror"))
MANIFESTS = {"Cargo.toml": "rust", "go.mod": "go", "package.json": "node"}


def _mirror(repo: str) -> Path:
    return MIRRORS / repo.replace("/", "+") / "repo"


def _language(row: dict[str, Any]) -> str | None:
    """The row's language by the manifest at its base commit (None: its mirror is not here)."""
    mirror = _mirror(row["repo"])
    if not mirror.is_dir():
        return None
    for manifest, language in MANIFESTS.items():
        found = subprocess.run(["git", "-C", str(mirror), "cat-file", "-e", f"{row['base_commit']}:{manifest}"],
                               capture_output=True, check=False)
        if found.returncode == 0:
            return language
    return None


def _eval(tmp: Path, tasks: Path, repos: Path, predictions: str, out: str) -> dict[str, Any]:
    env = {**os.environ, "CODEBOX_CACHE_DIR": str(tmp / "cache")}
    done = subprocess.run([sys.executable, "-m", "agent.cli", "eval", "--tasks", str(tasks), "--predictions",
                           predictions, "--repos", str(repos), "--out", str(tmp / out), "--jobs", "1"],
                          capture_output=True, text=True, env=env, timeout=5000, check=False)
    results = tmp / out / "results.json"
    assert results.is_file(), done.stderr[-3000:]
    summary: dict[str, Any] = json.loads(results.read_text())
    return summary


@pytest.mark.parametrize("language", ["go", "node", "rust"])
def test_gold_patches_resolve_and_empty_ones_do_not(tmp_path: Path, language: str) -> None:
    rows = [json.loads(line) for line in ROWS.read_text().splitlines() if line.strip()]
    absent = sorted({r["repo"] for r in rows if not _mirror(r["repo"]).is_dir()})
    mine = [r for r in rows if _language(r) == language]
    if not mine:
        pytest.skip(f"no {language} row's repository is mirrored under {MIRRORS} (absent: {', '.join(absent)})")
    assert len(mine) >= 3, f"{language}: {len(mine)} rows (absent: {absent})"
    repos = tmp_path / "repos"
    repos.mkdir()
    for repo in {r["repo"] for r in mine}:
        (repos / repo.replace("/", "__")).symlink_to(_mirror(repo))
    tasks = tmp_path / "rows.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in mine))
    ids = sorted(r["instance_id"] for r in mine)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("".join(json.dumps({"instance_id": i, "model_name_or_path": "empty", "model_patch": ""}) + "\n"
                             for i in ids))

    gold = _eval(tmp_path, tasks, repos, "gold", "gold")
    assert sorted(gold["resolved"]) == ids, gold
    nothing = _eval(tmp_path, tasks, repos, str(empty), "empty")
    assert sorted(nothing["unresolved"]) == ids, nothing
    for instance in ids:  # each empty patch was judged on a real run: the suite ran, the fix's tests failed
        record = json.loads((tmp_path / "empty" / instance / "eval.json").read_text())
        assert record["harness_error"] is None and record["exit_code"] is not None, record
        assert record["tests_status"]["FAIL_TO_PASS"]["failure"], record["tests_status"]
        passing = json.loads(next(r["PASS_TO_PASS"] for r in mine if r["instance_id"] == instance))
        # graded test by test: the PASS_TO_PASS pass at base too (nanoid's browser customAlphabet at size 0 may not:
        # the bug its fix removes depends on the random bytes)
        assert bool(record["tests_status"]["PASS_TO_PASS"]["success"]) == bool(passing), record["tests_status"]
