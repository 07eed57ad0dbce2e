"""The host's rustup toolchain copied into an image, with real Docker and real cargo: the image carries the
host rustc's version and commit, a crate's environment stands on it by default (said in one line), cargo test
runs in the box with no network and links with Debian's cc, a second run compiles nothing again, and the
environment's cache hit is found offline. Without rustup, Debian's toolchain is chosen, and said."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from agent.languages.rust import rustup
from tests.e2e.rust_fixtures import demo_crate

FOUND, WHY = rustup.find_host_toolchain()
pytestmark = [pytest.mark.docker, pytest.mark.timeout(1200)]  # a toolchain image's first build: minutes
needs_rustup = pytest.mark.skipif(FOUND is None, reason=f"no rustup toolchain on this machine: {WHY}")
CLOSED = "http://127.0.0.1:9"


@needs_rustup
def test_the_image_carries_the_host_rustc_and_runs_it_with_no_network() -> None:
    from agent.containers.image import image_labels
    from agent.languages.rust.env import toolchain_image

    assert FOUND is not None
    tag = toolchain_image(None, lambda _: None, prefer="rustup")
    assert tag.startswith(f"{rustup.REPOSITORY}:rustup-")
    host = subprocess.run([str(FOUND.root / "bin" / "rustc"), "-vV"], capture_output=True, text=True, check=True)
    labels = image_labels(tag) or {}
    assert labels[rustup.LABEL_VERSION] == host.stdout.splitlines()[0]
    assert labels[rustup.LABEL_COMMIT] in host.stdout
    assert len(labels[rustup.LABEL_FILES]) == 64
    boxed = subprocess.run(["docker", "run", "--rm", "--network", "none", tag, "sh", "-c",
                            "rustc -vV && command -v cc && ls /usr/local/bin"],
                           capture_output=True, text=True, timeout=300, check=False)
    assert boxed.returncode == 0, boxed.stderr
    assert boxed.stdout.startswith(host.stdout)
    assert "/usr/bin/cc" in boxed.stdout
    assert "rustfmt" not in boxed.stdout and "cargo-clippy" not in boxed.stdout  # only what cargo test needs


@needs_rustup
def test_a_crate_tests_on_it_offline_and_a_second_run_compiles_nothing_again(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from agent.containers.image import ensure_sandbox_image
    from agent.containers.sandbox import Sandbox
    from agent.env.cancel import NEVER
    from agent.languages.registry import detect
    from agent.languages.rust.env import ensure_rust_env
    from agent.sandboxes.config import SandboxConfig

    ensure_sandbox_image()
    cache = tmp_path / "cache"
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(cache))
    monkeypatch.delenv("CODEBOX_RUST_TOOLCHAIN", raising=False)
    repo = tmp_path / "demo"
    demo_crate(repo, cache)
    said: list[str] = []
    env = ensure_rust_env(repo, None, "docker", said.append, NEVER, "demo")
    chosen = [line for line in said if line.startswith("rust toolchain:")]
    assert len(chosen) == 1 and "the host's rustup" in chosen[0] and "because rustup's default toolchain" in chosen[0]
    assert env.built and env.installed == ["tinydep==0.1.0"]

    for key in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(key, CLOSED)
    started = time.perf_counter()
    again = ensure_rust_env(repo, None, "docker", lambda _: None, NEVER, "demo")
    took = time.perf_counter() - started
    assert not again.built and again.image == env.image
    assert env.notes[-1] == again.notes[-1] == chosen[0]  # the report says the choice, hit or build
    assert took < 5, f"a cache hit took {took:.1f} s"  # bench/rust_speed.py measures it (a few ms here)

    found = detect(repo)
    assert found is not None
    with Sandbox(repo, SandboxConfig(image=env.run_image), task_id="test-rustup-toolchain") as sandbox:
        first = sandbox.call("run_test", {"argv": found.command, "timeout_s": 900}, timeout_s=900)
        second = sandbox.call("run_test", {"argv": found.command, "timeout_s": 900}, timeout_s=900)
    for reply in (first, second):
        assert reply.outcome == "failed", reply.output[-2000:]  # the demo's known bug: tests::adds
        assert '"name": "tests::adds", "event": "failed"' in reply.output
        assert '"name": "tests::doubles", "event": "ok"' in reply.output
    assert "Compiling tinydep" in first.output and "Compiling demo" in first.output
    assert "Compiling" not in second.output, second.output[-2000:]
    assert os.environ["HTTP_PROXY"] == CLOSED


def test_without_rustup_debian_s_toolchain_is_chosen_and_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent.env.install.images import EngineImages
    from agent.languages.rust.toolchain import choose

    monkeypatch.setenv("RUSTUP_HOME", str(tmp_path / "no-rustup"))
    monkeypatch.delenv("RUSTUP_TOOLCHAIN", raising=False)
    monkeypatch.delenv("CODEBOX_RUST_TOOLCHAIN", raising=False)
    engine = EngineImages.connect("docker")
    try:
        chosen = choose(None, engine, lambda _: None)
    finally:
        engine.close()
    assert chosen.image.startswith("codebox-toolchain-rust:trixie-")
    assert chosen.note == ("rust toolchain: Debian trixie's rustc and cargo, because this machine has no rustup "
                           f"({tmp_path / 'no-rustup'} has no settings.toml)")
    boxed = subprocess.run(["docker", "run", "--rm", "--network", "none", chosen.image, "rustc", "-V"],
                           capture_output=True, text=True, timeout=300, check=False)
    assert boxed.returncode == 0 and boxed.stdout.startswith("rustc 1.85"), boxed.stdout + boxed.stderr
