"""Rust end to end with real containers and no network: `codebox run` finds `cargo test` in a crate, builds its
environment (the toolchain codebox chooses: the host's rustup one copied in, else Debian trixie's; the locked
crates vendored on the host) and names the failing test from libtest's events; the model's arguments choose
tests; `codebox eval` grades a SWE-bench Multilingual-shaped row by Rust test names; a hostile repository is
refused or contained, and nothing of it runs on the host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agent.eval.repos import diff_of
from tests.e2e.rust_fixtures import FIX, LIB, MANIFEST, demo_crate

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1200)]  # the toolchain image's first build: minutes


@pytest.fixture(scope="module", autouse=True)
def _images() -> None:
    from agent.containers.image import ensure_sandbox_image
    from agent.languages.rust.env import toolchain_image

    ensure_sandbox_image()
    toolchain_image(None, lambda _: None)


def codebox(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CODEBOX_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "agent.cli", *args], capture_output=True, text=True, env=env,
                          timeout=1100, check=False)


def script(path: Path, turns: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def run_test(*args: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_test", "arguments": {"args": list(args)}}]}


def test_run_finds_cargo_test_names_the_failing_test_and_the_fix_passes(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    demo_crate(tmp_path / "demo", cache)
    model = script(tmp_path / "s.json", [run_test(), run_test("--lib", "tests::doubles", "--exact"),
                                         run_test("--config", "build.rustc-wrapper='/bin/sh'"),
                                         {"tool_calls": [{"name": "apply_patch", "arguments": {"patch": FIX}}]},
                                         run_test(), {"message": "fixed"}])
    report = tmp_path / "report.json"
    done = codebox(cache, "run", "--repo", str(tmp_path / "demo"), "--model", model, "--policy", "workspace-write",
                   "--isolated", "--report", str(report), "--no-diff", "fix add")
    assert done.returncode == 0, done.stderr
    assert "cargo test -- -Z unstable-options --format json (found Cargo.toml [package]" in done.stderr
    assert "1 failing: tests::adds" in done.stdout + done.stderr
    result = json.loads(report.read_text())
    assert result["last_test"]["outcome"] == "ok" and result["last_test"]["failed_tests"] == []
    assert result["env"]["installed"] == ["tinydep==0.1.0"]
    assert "run_test refused the argument '--config'" in done.stdout + done.stderr


def test_eval_grades_a_rust_row_by_test_names_gold_resolved_empty_not(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    repo = tmp_path / "repos" / "acme" / "demo"
    base = demo_crate(repo, cache)
    gold = diff_of(repo, {"src/lib.rs": LIB.replace("a - b", "a + b")})
    wrong = diff_of(repo, {"src/lib.rs": LIB.replace("a - b", "a + b + 1")})
    row = {"repo": "acme/demo", "base_commit": base, "patch": gold, "test_patch": "", "problem_statement": "add",
           "FAIL_TO_PASS": json.dumps(["tests::adds"]), "PASS_TO_PASS": json.dumps(["tests::doubles"]),
           "version": "0.1", "created_at": "2024-01-01T00:00:00Z", "environment_setup_commit": base}
    cases = {"gold": gold, "empty": "", "wrong": wrong}
    tasks, preds = tmp_path / "rows.jsonl", tmp_path / "preds.jsonl"
    tasks.write_text("".join(json.dumps({**row, "instance_id": iid}) + "\n" for iid in cases))
    preds.write_text("".join(json.dumps({"instance_id": iid, "model_patch": patch}) + "\n"
                             for iid, patch in cases.items()))
    out = tmp_path / "out"
    done = codebox(cache, "eval", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(out),
                   "--repos", str(tmp_path / "repos"), "--jobs", "1")
    results = json.loads((out / "results.json").read_text())
    assert results["resolved"] == ["gold"], done.stderr
    assert sorted(results["unresolved"]) == ["empty", "wrong"]
    gold_eval = json.loads((out / "gold" / "eval.json").read_text())
    assert gold_eval["fail_to_pass"] == {"tests::adds": "passed"}
    assert gold_eval["test_command"][:2] == ["cargo", "test"]


def _hostile_run(tmp_path: Path, extra: dict[str, str], manifest: str = MANIFEST,
                 executable: str = "") -> subprocess.CompletedProcess[str]:
    cache = tmp_path / "cache"
    demo_crate(tmp_path / "repo", cache, extra, manifest)
    if executable:
        (tmp_path / "repo" / executable).chmod(0o755)
    model = script(tmp_path / "s.json", [run_test(), {"message": "looked"}])
    return codebox(cache, "run", "--repo", str(tmp_path / "repo"), "--model", model, "--no-diff", "look")


def test_a_rustc_wrapper_and_a_target_runner_run_only_in_the_box(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    hook = f"#!/bin/sh\ntouch {marker}\nexec \"$@\"\n"
    config = ('[build]\nrustc-wrapper = "/repo/hook.sh"\n\n[target.x86_64-unknown-linux-gnu]\n'
              'runner = "/repo/hook.sh"\n')
    done = _hostile_run(tmp_path, {".cargo/config.toml": config, "hook.sh": hook}, executable="hook.sh")
    assert not marker.exists(), "the repository's rustc-wrapper ran on the host"
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("dependency", "said"), [
    ('outside = { path = "../outside" }', "is a path outside the repository"),
    ('remote = { git = "https://example.com/remote.git" }', "comes from git"),
])
def test_a_dependency_outside_the_repository_or_from_git_is_refused_in_one_line(
        tmp_path: Path, dependency: str, said: str) -> None:
    (tmp_path / "outside").mkdir()
    marker = tmp_path / "marker"
    (tmp_path / "outside" / "build.rs").write_text(f'fn main() {{ std::fs::write("{marker}", "ran").unwrap(); }}\n')
    done = _hostile_run(tmp_path, {}, MANIFEST + dependency + "\n")
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if said in line]
    assert len(lines) == 1 and "Cargo.toml" in lines[0], done.stderr
    assert not marker.exists()


def test_a_build_script_reaching_the_network_or_outside_its_target_is_contained(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    build = ("use std::net::{SocketAddr, TcpStream};\nuse std::time::Duration;\nfn main() {\n"
             '    let addr: SocketAddr = "1.1.1.1:80".parse().unwrap();\n'
             "    let net = TcpStream::connect_timeout(&addr, Duration::from_secs(3)).is_ok();\n"
             f'    let wrote = std::fs::write("{marker}", "x").is_ok() || std::fs::write("/repo/x", "x").is_ok();\n'
             '    println!("cargo:rustc-env=NET={net}");\n    println!("cargo:rustc-env=WROTE={wrote}");\n}\n')
    test = ('\n#[test]\nfn contained() {\n    assert_eq!(env!("NET"), "false");\n'
            '    assert_eq!(env!("WROTE"), "false");\n}\n')
    done = _hostile_run(tmp_path, {"build.rs": build, "tests/contained.rs": test})
    assert done.returncode == 0, done.stderr
    assert "1 failing: tests::adds" in done.stdout + done.stderr  # contained passed; only the known bug fails
    assert not marker.exists() and not (tmp_path / "repo" / "x").exists()
