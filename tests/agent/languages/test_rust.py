"""Rust's answers to the language seam: detection from Cargo.toml, the model's cargo test arguments, libtest's
JSON events read per test, the manifests codebox refuses to fetch for, and the vendored crates' layer."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.env.info import EnvInfo
from agent.languages.base import TestArgsError
from agent.languages.registry import argv_for, check_test_args, detect, failing_tests, for_command, outcomes
from agent.languages.rust import CARGO_TEST, RUST, crates, lockpath, manifest

EVENTS = "\n".join([
    '   Compiling demo v0.1.0 (/repo)',
    '{ "type": "suite", "event": "started", "test_count": 3 }',
    '{ "type": "test", "event": "started", "name": "tests::adds" }',
    '{ "type": "test", "name": "tests::adds", "event": "ok" }',
    '{ "type": "test", "name": "tests::subtracts", "event": "failed", "stdout": "panicked at src/lib.rs:9" }',
    '{ "type": "test", "name": "tests::slow", "event": "ignored" }',
    '{ "type": "suite", "event": "failed", "passed": 1, "failed": 1, "ignored": 1, "measured": 0, '
    '"filtered_out": 0, "exec_time": 0.01 }',
    "error: test failed, to rerun pass `--lib`",
])


def test_a_crate_and_a_workspace_are_rust_with_cargo_test_and_its_json_events(tmp_path: Path) -> None:
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "demo"\nversion = "0.1.0"\n')
    (tmp_path / "Cargo.lock").write_text("version = 4\n")
    found = detect(tmp_path)
    assert found is not None and found.language == "rust" and found.command == CARGO_TEST
    assert found.evidence == "Cargo.toml [package]"
    (tmp_path / "Cargo.lock").unlink()  # cargo writes the lock it resolves into the build cache, not /repo
    debian = EnvInfo(image="env", base_image="base", toolchain="cargo 1.85.1 (d73d2caf9 2024-12-31)")
    rustup = EnvInfo(image="env", base_image="base", toolchain="cargo 1.95.0 (f2d3ce0bd 2026-03-21)")
    found = detect(tmp_path, debian)  # an option of cargo test, up to 1.93
    assert found is not None and found.command == ["cargo", "test", *lockpath.FLAG, *CARGO_TEST[2:]]
    for env in (rustup, None):  # the image's variables, from 1.94 on (and where the toolchain is not known)
        found = detect(tmp_path, env)
        assert found is not None and found.command == CARGO_TEST
    run = RUST.named_tests_run(tmp_path, ["tests::adds"], debian)
    assert run.shown == ["cargo", "test", *lockpath.FLAG, "--no-fail-fast", *CARGO_TEST[2:]]
    assert f"--lockfile-path {lockpath.LOCK} --no-fail-fast -- " in run.argv[-1]
    (tmp_path / "Cargo.toml").write_text('[workspace]\nmembers = ["a"]\n')
    found = detect(tmp_path)
    assert found is not None and found.evidence == "Cargo.toml [workspace]"


def test_a_cargo_toml_that_is_no_manifest_is_not_rust(tmp_path: Path) -> None:
    (tmp_path / "Cargo.toml").write_text("[badges]\n")
    assert detect(tmp_path) is None


def test_the_events_say_each_outcome_and_the_failing_names_never_the_prose() -> None:
    assert RUST.outcomes(EVENTS) == {"tests::adds": "passed", "tests::subtracts": "failed", "tests::slow": "skipped"}
    assert failing_tests(EVENTS, CARGO_TEST) == ["tests::subtracts"]
    assert outcomes(EVENTS, CARGO_TEST) is not None
    assert outcomes(EVENTS, ["make", "test"]) is None


@pytest.mark.parametrize(("args", "argv"), [
    (["tests::adds"], [*CARGO_TEST, "tests::adds"]),
    (["--lib", "adds", "--exact"], ["cargo", "test", "--lib", "--", "-Z", "unstable-options", "--format", "json",
                                    "adds", "--exact"]),
    (["--test", "integration", "--skip", "slow"], ["cargo", "test", "--test", "integration", *CARGO_TEST[2:],
                                                  "--skip", "slow"]),
    (["-p", "core", "--test-threads=1"], ["cargo", "test", "-p", "core", *CARGO_TEST[2:], "--test-threads=1"]),
])
def test_cargo_s_choices_go_before_the_dash_dash_and_libtest_s_after(args: list[str], argv: list[str]) -> None:
    check_test_args(CARGO_TEST, args)
    assert argv_for(CARGO_TEST, args) == argv
    assert for_command(CARGO_TEST) is RUST


def test_a_plain_cargo_test_gets_the_dash_dash_only_when_libtest_options_come() -> None:
    assert argv_for(["cargo", "test"], ["--lib"]) == ["cargo", "test", "--lib"]
    assert argv_for(["cargo", "test"], ["--lib", "x"]) == ["cargo", "test", "--lib", "--", "x"]


@pytest.mark.parametrize("args", [["--config", "build.rustc-wrapper='/bin/sh'"], ["-Z", "unstable-options"],
                                  ["--manifest-path", "/etc/Cargo.toml"], ["--target-dir", "/repo"], ["+nightly"],
                                  ["--test", "../x"], ["--test"], ["--test-threads", "9999"], ["--logfile", "/x"],
                                  ["--skip", "--format"], ["a\x1b[2J"]])
def test_anything_but_choosing_tests_is_refused_in_one_line(args: list[str]) -> None:
    with pytest.raises(TestArgsError) as caught:
        check_test_args(CARGO_TEST, args)
    assert "\n" not in str(caught.value) and "allowed:" in str(caught.value)


def test_git_path_outside_and_other_registries_are_refused_naming_manifest_and_crate(tmp_path: Path) -> None:
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "a"\nversion = "0.1.0"\n[dependencies]\n'
                                         'inner = { path = "inner" }\nserde = "1"\n')
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "Cargo.toml").write_text('[package]\nname = "inner"\nversion = "0.1.0"\n'
                                                   '[dev-dependencies]\nhost = { path = "../../elsewhere" }\n')
    why = manifest.refusal(tmp_path)
    assert why is not None and why.startswith("inner/Cargo.toml: [dev-dependencies] 'host'") and "outside" in why
    (tmp_path / "inner" / "Cargo.toml").write_text('[package]\nname = "inner"\nversion = "0.1.0"\n'
                                                   '[target.\'cfg(unix)\'.dependencies]\n'
                                                   'x = { git = "https://example.com/x" }\n')
    why = manifest.refusal(tmp_path)
    assert why is not None and "'x' comes from git" in why
    (tmp_path / "inner" / "Cargo.toml").write_text('[package]\nname = "inner"\nversion = "0.1.0"\n')
    assert manifest.refusal(tmp_path) is None


def _crate_file(tmp_path: Path, name: str, version: str, members: dict[str, bytes]) -> tuple[crates.Crate, Path]:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    packed = gzip.compress(raw.getvalue())
    path = tmp_path / f"{name}-{version}.crate"
    path.write_bytes(packed)
    return crates.Crate(name, version, hashlib.sha256(packed).hexdigest()), path


def test_the_layer_holds_each_crate_under_its_folder_and_nothing_outside(tmp_path: Path) -> None:
    crate, path = _crate_file(tmp_path, "itoa", "1.0.0", {"itoa-1.0.0/Cargo.toml": b"[package]\n",
                                                          "itoa-1.0.0/src/lib.rs": b"",
                                                          "other/evil.rs": b"", "itoa-1.0.0/../../etc/x": b""})
    layer = crates.write_layer(tmp_path / "layer.tar", {crate: path})
    with tarfile.open(layer) as tar:
        names = tar.getnames()
        checksum = json.loads(tar.extractfile("opt/codebox-cargo/vendor/itoa-1.0.0/.cargo-checksum.json")
                              .read())  # type: ignore[union-attr]
    assert "opt/codebox-cargo/config.toml" in names and "opt/codebox-cargo/vendor/itoa-1.0.0/src/lib.rs" in names
    assert all(n.startswith("opt") and ".." not in n and "evil" not in n for n in names)
    assert checksum == {"files": {}, "package": crate.checksum}


def test_a_lock_naming_a_git_source_is_refused_naming_the_crate(tmp_path: Path) -> None:
    (tmp_path / "Cargo.lock").write_text('version = 4\n[[package]]\nname = "a"\nversion = "0.1.0"\n'
                                         '[[package]]\nname = "x"\nversion = "1.0.0"\n'
                                         'source = "git+https://example.com/x#abc"\n')
    with pytest.raises(EnvError, match=r"the crate x 1\.0\.0 comes from git"):
        crates.read_lock(tmp_path)
