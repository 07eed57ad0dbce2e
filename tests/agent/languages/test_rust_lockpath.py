"""Where cargo writes the lock of a repository without one, by the toolchain's cargo version (lockpath.py): the
option of cargo test up to 1.93 (and 1.94's nightlies), the config key in the image's variables from 1.94 on,
neither before 1.82.
What each cargo takes was tried on the cargos of this machine (1.85 Debian's, 1.95 and 1.97-nightly rustup's);
the release each form came and went in is the version of cargo's own source where it changed."""

from __future__ import annotations

import pytest

from agent.languages.rust import lockpath
from agent.languages.rust.env import BUILD_CACHE

CONFIG = lockpath.LockPath((), lockpath.CONFIG)
FLAG = lockpath.LockPath(lockpath.FLAG, {})


@pytest.mark.parametrize(("line", "form"), [
    ("cargo 1.85.1 (d73d2caf9 2024-12-31)", FLAG),  # Debian trixie's
    ("cargo 1.82.0 (000000000 2024-10-17)", FLAG),  # the first release with --lockfile-path
    ("cargo 1.93.1 (000000000 2026-01-22)", FLAG),
    ("cargo 1.94.0-nightly (000000000 2026-01-09)", FLAG),  # a 1.94 nightly may predate the config key
    ("cargo 1.94.0 (000000000 2026-03-05)", CONFIG),  # the flag is deprecated there: the config key
    ("cargo 1.94.0-beta.3 (000000000 2026-02-01)", CONFIG),
    ("cargo 1.95.0 (f2d3ce0bd 2026-03-21)", CONFIG),  # rustup's stable here: the flag is gone
    ("cargo 1.97.0-nightly (4d1f98451 2026-05-15)", CONFIG),  # the key is stable; the unstable variable ignored
    ("cargo 2.0.0", CONFIG),
    ("", CONFIG),  # not asked: the form today's cargo takes
])
def test_each_cargo_gets_the_form_it_takes(line: str, form: lockpath.LockPath) -> None:
    assert lockpath.lock_path(line) == form


def test_the_config_form_names_the_lock_in_the_build_cache_and_enables_the_key() -> None:
    assert f"{BUILD_CACHE}/Cargo.lock" == lockpath.LOCK
    assert lockpath.CONFIG == {"CARGO_UNSTABLE_LOCKFILE_PATH": "true", "CARGO_RESOLVER_LOCKFILE_PATH": lockpath.LOCK}
    assert lockpath.FLAG == ("-Zunstable-options", "--lockfile-path", lockpath.LOCK)
    form = lockpath.lock_path("cargo 1.95.0")
    assert form is not None
    form.env["CARGO_RESOLVER_LOCKFILE_PATH"] = "/elsewhere"  # each answer is its own copy
    assert lockpath.CONFIG["CARGO_RESOLVER_LOCKFILE_PATH"] == lockpath.LOCK


def test_a_cargo_older_than_the_flag_gets_none_and_a_one_line_reason() -> None:
    line = "cargo 1.81.0 (000000000 2024-09-05)"
    assert lockpath.lock_path(line) is None
    why = lockpath.refusal(line)
    assert why == ("the repository has no Cargo.lock, and the toolchain's cargo 1.81.0 cannot write one outside the "
                   "read-only /repo (cargo 1.82 or newer can): commit a Cargo.lock, or use a newer toolchain")
    # the host's rustup toolchain, codebox's choice: Debian's cargo is the other one
    assert lockpath.refusal(line, "CODEBOX_RUST_TOOLCHAIN=debian chooses Debian trixie's cargo 1.85") == (
        f"{why} (CODEBOX_RUST_TOOLCHAIN=debian chooses Debian trixie's cargo 1.85)")


@pytest.mark.parametrize("line", ["cargo-nightly 1.95", "rustc 1.95.0 (abc 2026-03-21)", "cargo version unknown",
                                  "cargo 1.x.0"])
def test_a_line_that_is_no_version_gets_none_and_says_what_it_was(line: str) -> None:
    assert lockpath.parse(line) is None and lockpath.lock_path(line) is None
    assert lockpath.refusal(line) == ("the repository has no Cargo.lock, and the toolchain's `cargo -V` said "
                                      f"{line!r}, not a version")


def test_a_version_line_reads_its_release_and_channel() -> None:
    assert lockpath.parse("cargo 1.85.1 (d73d2caf9 2024-12-31)") == (1, 85, False)
    assert lockpath.parse("  cargo 1.97.0-nightly (4d1f98451 2026-05-15)\n") == (1, 97, True)
    assert lockpath.parse("cargo 1.94.0-beta.3 (000000000 2026-02-01)") == (1, 94, False)
