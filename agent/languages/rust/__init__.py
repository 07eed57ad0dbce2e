"""Rust: a repository with a Cargo.toml (a crate or a workspace) is tested with ``cargo test``, its per-test
outcomes read from libtest's JSON events; its crates are vendored on the host from Cargo.lock and its
toolchain is the host's rustup one, Debian's or the user's image: env.py."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from agent.languages.base import Detection, Log, NamedTestsRun
from agent.languages.rust import args, libtest, lockpath, manifest

if TYPE_CHECKING:
    from agent.env.cancel import Cancel
    from agent.env.info import EnvInfo

# libtest's machine output: JSON events, one a line (RUSTC_BOOTSTRAP=1 in the environment lets a stable
# toolchain take -Z unstable-options).
EVAL_EVENTS = "/tmp/codebox-eval-libtest.json"
_TEST_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$")  # tests::adds
_DOC_TEST = re.compile(r"^\S+\.rs - .+ \(line \d+\)$")  # src/lib.rs - add (line 3)
CARGO_TEST = ["cargo", "test", "--", "-Z", "unstable-options", "--format", "json"]


def cargo_test(repo: Path, env: EnvInfo | None = None) -> list[str]:
    """The test command of ``repo`` in ``env``: cargo test with libtest's JSON events. A repository without a
    Cargo.lock: cargo resolves offline from the vendored crates (those the host's lock named) and writes the lock
    into the build cache, not into the read-only /repo, told so as the environment's cargo takes it (lockpath.py:
    an option of cargo test up to cargo 1.93, the image's variables from 1.94 on)."""
    if (repo / manifest.LOCK).is_file():
        return list(CARGO_TEST)
    form = lockpath.lock_path(env.toolchain if env is not None else "")
    return [*CARGO_TEST[:2], *(form.test_args if form is not None else ()), *CARGO_TEST[2:]]


class Rust:
    """The Rust ecosystem's answers to the language seam (agent.languages.base.Language)."""

    name = "rust"

    def detect(self, repo: Path, env: EnvInfo | None) -> Detection | None:
        kind = manifest.root_kind(repo)
        if kind is None:
            return None
        return Detection(self.name, cargo_test(repo, env), f"{manifest.MANIFEST} {kind}")

    def runs(self, test_cmd: list[str]) -> bool:
        return args.is_cargo_test(test_cmd)

    def check_test_args(self, test_cmd: list[str], arguments: list[str], repo: Path | None) -> None:
        args.check(arguments)

    def test_argv(self, test_cmd: list[str], arguments: list[str]) -> list[str]:
        return args.arrange(test_cmd, arguments)

    def failing_tests(self, output: str) -> list[str]:
        return libtest.failing_tests(output)

    def outcomes(self, output: str) -> dict[str, str]:
        return libtest.outcomes(output)

    def is_test_id(self, name: str) -> bool:
        return bool(_TEST_NAME.match(name) or _DOC_TEST.match(name))

    def named_tests_run(self, repo: Path, names: list[str], env: EnvInfo | None) -> NamedTestsRun:
        # Every test of every target (--no-fail-fast: a failing binary does not hide the next ones); libtest's
        # events go to a file, read back whole, cargo's own prose stays on stderr.
        command = args.arrange(cargo_test(repo, env), ["--no-fail-fast"])
        script = f"{shlex.join(command)} > {EVAL_EVENTS}"
        return NamedTestsRun(["sh", "-c", script], EVAL_EVENTS, command)

    def environment(self, repo: Path, image: str | None, backend: str, log: Log, cancel: Cancel,
                    repo_name: str) -> EnvInfo:
        from agent.languages.rust.env import ensure_rust_env

        return ensure_rust_env(repo, image, backend, log, cancel, repo_name)


RUST = Rust()
