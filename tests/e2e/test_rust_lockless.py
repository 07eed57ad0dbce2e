"""A crate that commits no Cargo.lock, end to end with real containers and no network in the box: on rustup's
toolchain (cargo 1.94 and newer: the lock path in the environment image's variables, the plain test command) and
on Debian's (cargo 1.85: --lockfile-path on the test command), `codebox run` finds its tests, names the failing one
and passes after the fix (and again with the environment named by its image, --env), and `codebox eval` grades a
row of it by test name; the lock is written in the box's build cache, never into the repository. A user's image
whose cargo is older than both forms is refused in one line before any model request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.languages.rust import CARGO_TEST, lockpath, rustup
from tests.agent.eval.repos import diff_of, make_repo
from tests.e2e.rust_fixtures import FIX

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1200)]  # a toolchain image's first build: minutes
FOUND, WHY = rustup.find_host_toolchain()
LIB = """pub fn add(a: i32, b: i32) -> i32 {
    a - b
}

#[cfg(test)]
mod tests {
    #[test]
    fn adds() {
        assert_eq!(super::add(2, 2), 4);
    }

    #[test]
    fn zero() {
        assert_eq!(super::add(0, 0), 0);
    }
}
"""
FILES = {"Cargo.toml": '[package]\nname = "nolock"\nversion = "0.1.0"\nedition = "2021"\n', "src/lib.rs": LIB}


def host_cargo() -> str:
    """``cargo -V`` of the host's rustup toolchain: the one copied into codebox's image."""
    assert FOUND is not None, f"this test needs the host's rustup toolchain (in CI too): {WHY}"
    done = subprocess.run([str(FOUND.root / "bin" / "cargo"), "-V"], capture_output=True, text=True, check=True)
    return done.stdout.strip()


# rustup's toolchain must be here in CI (the default toolchain is what this tests); elsewhere its absence skips.
TOOLCHAINS = [
    pytest.param("rustup", marks=pytest.mark.skipif(FOUND is None and not os.environ.get("CI"),
                                                    reason=f"no rustup toolchain on this machine: {WHY}")),
    "debian",
]


def codebox(cache: Path, toolchain: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "CODEBOX_RUST_TOOLCHAIN"}
    env["CODEBOX_CACHE_DIR"] = str(cache)
    if toolchain:
        env["CODEBOX_RUST_TOOLCHAIN"] = toolchain
    return subprocess.run([sys.executable, "-m", "agent.cli", *args], capture_output=True, text=True, env=env,
                          timeout=1100, check=False)


def script(path: Path, turns: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def run_test() -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_test", "arguments": {"args": []}}]}


@pytest.mark.parametrize("toolchain", TOOLCHAINS)
def test_a_lockless_crate_runs_and_is_graded_on_the_toolchain_with_its_cargo_s_form(tmp_path: Path,
                                                                                    toolchain: str) -> None:
    cargo = host_cargo() if toolchain == "rustup" else "cargo 1.85."  # Debian trixie's: 1.85.1 today
    form = lockpath.lock_path(host_cargo() if toolchain == "rustup" else "cargo 1.85.0")
    assert form is not None
    command = [*CARGO_TEST[:2], *form.test_args, *CARGO_TEST[2:]]
    cache = tmp_path / "cache"
    repo = tmp_path / "repos" / "acme" / "nolock"
    base = make_repo(repo, FILES)

    model = script(tmp_path / "s.json", [run_test(), {"tool_calls": [{"name": "apply_patch",
                                                                       "arguments": {"patch": FIX}}]},
                                         run_test(), {"message": "fixed"}])
    report = tmp_path / "report.json"
    done = codebox(cache, toolchain, "run", "--repo", str(repo), "--model", model, "--policy", "workspace-write",
                   "--isolated", "--report", str(report), "--no-diff", "fix add")
    assert done.returncode == 0, done.stderr
    assert f"{' '.join(command)} (found Cargo.toml [package]" in done.stderr, done.stderr
    assert "1 failing: tests::adds" in done.stdout + done.stderr
    result = json.loads(report.read_text())
    assert result["last_test"]["outcome"] == "ok" and result["last_test"]["failed_tests"] == []
    assert result["env"]["toolchain"].startswith(cargo), result["env"]
    expected_note = "resolver.lockfile-path, set in the image's environment" if form.env else "--lockfile-path on"
    assert any(f"writes it to {lockpath.LOCK} ({expected_note}" in note for note in result["env"]["notes"])
    chosen = [note for note in result["env"]["notes"] if note.startswith("rust toolchain:")]
    assert chosen and ("rustup" in chosen[0] if toolchain == "rustup" else "Debian" in chosen[0]), chosen
    assert not (repo / "Cargo.lock").exists()

    # The environment named again by its image (--env IMAGE, from codebox's record): the same command.
    model = script(tmp_path / "again.json", [run_test(), {"message": "ran"}])
    done = codebox(cache, toolchain, "run", "--repo", str(repo), "--env", result["env"]["image"], "--model", model,
                   "--no-diff", "run the tests")
    assert done.returncode == 0, done.stderr
    assert f"{' '.join(command)} (found Cargo.toml [package]" in done.stderr, done.stderr
    assert "1 failing: tests::adds" in done.stdout + done.stderr

    gold = diff_of(repo, {"src/lib.rs": LIB.replace("a - b", "a + b")})
    row = {"repo": "acme/nolock", "base_commit": base, "test_patch": "", "problem_statement": "add",
           "FAIL_TO_PASS": json.dumps(["tests::adds"]), "PASS_TO_PASS": json.dumps(["tests::zero"]),
           "version": "0.1", "created_at": "2024-01-01T00:00:00Z", "environment_setup_commit": base}
    cases = {"gold": gold, "empty": ""}
    tasks, preds = tmp_path / "rows.jsonl", tmp_path / "preds.jsonl"
    tasks.write_text("".join(json.dumps({**row, "patch": gold, "instance_id": iid}) + "\n" for iid in cases))
    preds.write_text("".join(json.dumps({"instance_id": iid, "model_patch": patch}) + "\n"
                             for iid, patch in cases.items()))
    out = tmp_path / "out"
    done = codebox(cache, toolchain, "eval", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(out),
                   "--repos", str(tmp_path / "repos"), "--jobs", "1")
    results = json.loads((out / "results.json").read_text())
    assert results["resolved"] == ["gold"] and results["unresolved"] == ["empty"], done.stderr
    gold_eval = json.loads((out / "gold" / "eval.json").read_text())
    assert gold_eval["fail_to_pass"] == {"tests::adds": "passed"}
    assert gold_eval["pass_to_pass"] == {"tests::zero": "passed"}
    cut = command.index("--")
    assert gold_eval["test_command"] == [*command[:cut], "--no-fail-fast", *command[cut:]]
    assert not (repo / "Cargo.lock").exists()


def test_a_user_image_whose_cargo_is_too_old_is_refused_in_one_line(tmp_path: Path) -> None:
    """The image's cargo says 1.81 (a script standing for it, on Debian's toolchain image): neither form exists
    there, so the run stops before the model is asked, saying why and what to do."""
    from agent.env.install import images
    from agent.languages.rust.toolchain import debian_image

    engine = images.EngineImages.connect("docker")
    try:
        base = debian_image(engine, lambda _: None)
    finally:
        engine.close()
    context = tmp_path / "image"
    context.mkdir()
    (context / "cargo").write_text("#!/bin/sh\necho 'cargo 1.81.0 (000000000 2024-09-05)'\n")
    (context / "cargo").chmod(0o755)
    (context / "Dockerfile").write_text(f"FROM {base}\nCOPY cargo /usr/local/bin/cargo\n")
    tag = f"codebox-test-old-cargo:{tmp_path.name.lower()}"
    subprocess.run(["docker", "build", "-q", "-t", tag, str(context)], capture_output=True, check=True, timeout=600)
    try:
        repo = tmp_path / "nolock"
        make_repo(repo, FILES)
        model = script(tmp_path / "s.json", [run_test(), {"message": "ran"}])
        done = codebox(tmp_path / "cache", None, "run", "--repo", str(repo), "--image", tag, "--model", model,
                       "--no-diff", "run the tests")
    finally:
        subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True, timeout=120, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    said = [line for line in done.stderr.splitlines() if "cannot write one outside" in line]
    assert len(said) == 1, done.stderr
    assert ("the repository has no Cargo.lock, and the toolchain's cargo 1.81.0 cannot write one outside the "
            "read-only /repo (cargo 1.82 or newer can): commit a Cargo.lock, or use a newer toolchain") in said[0]
