"""Rust, Go and Node under `codebox run --backend podman`, with real Docker and Podman and no network in the box
(required in CI with CODEBOX_REQUIRE_PODMAN=1): the toolchain image made in Docker reaches Podman's store (the
rustup copy is made there, on the linker image copied in), the crate's environment is built in Podman's store,
and the run names the failing test from the runner's machine output as it does under Docker. The environment
images a run builds are removed after it (`codebox env rm --all --backend podman` of its own cache)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.agent.eval.repos import make_repo
from tests.e2e.rust_fixtures import demo_crate
from tests.e2e.test_go_node_runs import GO_MOD, GO_SRC, GO_TEST, calc_repo
from tests.e2e.test_rust_runs import codebox, run_test, script

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]  # a toolchain image's first build and copy: minutes


@pytest.fixture(autouse=True)
def _podman() -> None:
    if shutil.which("podman") is None:
        assert os.environ.get("CODEBOX_REQUIRE_PODMAN") != "1", "podman is required here and not installed"
        pytest.skip("podman is not installed (apt-get install podman)")
    from agent.backends.podman import copy_image_from_docker
    from agent.containers.image import ensure_sandbox_image

    copy_image_from_docker(ensure_sandbox_image())  # `codebox image build --backend podman`, as a user runs it


def _run(tmp_path: Path, repo: Path) -> tuple[dict[str, object], str]:
    report = tmp_path / "report.json"
    try:
        done = codebox(tmp_path / "cache", "run", "--backend", "podman", "--repo", str(repo), "--report", str(report),
                       "--model", script(tmp_path / "s.json", [run_test(), {"message": "looked"}]), "--no-diff", "look")
    finally:
        codebox(tmp_path / "cache", "env", "rm", "--all", "--backend", "podman")
    assert report.is_file(), done.stderr
    return json.loads(report.read_text()), done.stderr


@pytest.mark.parametrize("language", ["rust", "go", "node"])
def test_a_repository_runs_on_its_toolchain_under_podman(language: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    if language == "rust":
        demo_crate(repo, tmp_path / "cache")
        failing = "tests::adds"
    elif language == "go":
        make_repo(repo, {"go.mod": GO_MOD, "calc.go": GO_SRC, "calc_test.go": GO_TEST})
        failing = "TestAdd"
    else:
        calc_repo(repo, {"name": "calc", "version": "1.0.0", "scripts": {"test": "node --test"}})
        failing = "adds"
    report, said = _run(tmp_path, repo)
    assert report["backend"] == "podman", said
    last = report["last_test"]
    assert isinstance(last, dict) and last["failed_tests"] == [failing], said
    env = report.get("env")
    assert isinstance(env, dict), said
    image = str(env["image"])
    if language == "rust":
        assert "rust toolchain: " in said and image.startswith("codebox-env:rust-"), said
    else:
        assert image.startswith(f"codebox-toolchain-{language}:trixie-"), said
