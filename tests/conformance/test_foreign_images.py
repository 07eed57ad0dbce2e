"""The conformance suite on images that are not codebox's (tests/foreign_images.py): busybox-only
``FROM scratch``, a musl one, Debian bullseye (CPython 3.9) and one whose python3 is PyPy, each
under runc and runsc. The server runs on codebox's injected runtime in every one of them.

What runs where (CI's time): the whole suite (test_backend.py, test_hostile.py, test_env.py) runs
on codebox's own image in every backend x runtime, which starts every sandbox on the injected
runtime too; here, on each foreign image x {runc, runsc} of Docker (and busybox in Podman), a
representative subset: every
tool and the write box, the tests' own programs and environment, one limit (a timeout that kills
the tree), one refusal and one hostile case (escape sequences in a path, links into /proc, /dev),
and a whole run from first call to final message.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent.backends.registry import backend_for
from agent.errors import SandboxError
from agent.sandboxes.base import Session
from agent.sandboxes.config import SandboxConfig
from tests.conformance.conftest import _unavailable, target_checked
from tests.e2e.scenarios.support import Run
from tests.e2e.scenarios.test_hardening import (  # noqa: F401 -- collected here, in each foreign image
    test_1_a_path_with_escape_sequences_is_refused,
    test_7_links_into_pseudo_filesystems_are_refused_as_escapes,
)
from tests.foreign_images import FOREIGN, Unbuildable, foreign_image

pytestmark = pytest.mark.docker

RUNTIMES = ("runc", "runsc")
# Docker x {runc, runsc} for every image; Podman (whose sandboxes mount the runtime the same way) with one.
TARGETS = [(name, "docker", runtime) for name in FOREIGN for runtime in RUNTIMES] + [("busybox", "podman", "runc")]


@pytest.fixture(scope="session", params=TARGETS, ids=[f"{n}-{b}-{r}" for n, b, r in TARGETS])
def foreign(request: pytest.FixtureRequest) -> tuple[str, SandboxConfig]:
    """(image name, its sandbox config); the image built the first time (cached by its builder's key)."""
    name, backend, runtime = request.param
    if backend == "podman" and shutil.which("podman") is None:
        _unavailable(backend, runtime, "podman is not installed (apt-get install podman)")
    try:
        tag = foreign_image(name)
    except Unbuildable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the foreign image {name} cannot be built here: {exc}")
        pytest.skip(f"the foreign image {name} cannot be built here: {exc}")
    config = SandboxConfig(backend=backend, runtime=runtime, image=tag)
    try:
        backend_for(config).preflight(config)
    except SandboxError as exc:
        if backend != "podman" or "is not there" not in str(exc):
            _unavailable(backend, runtime, str(exc))
        from agent.backends.podman import copy_image_from_docker

        copy_image_from_docker(tag)  # the same image, into Podman's store
        config = target_checked(config)
    return name, config


@pytest.fixture
def scenario_config(foreign: tuple[str, SandboxConfig]) -> SandboxConfig:
    """The hostile scenarios imported above run in the foreign sandbox."""
    return foreign[1]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "README.md").write_text("hello conformance\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_text("def needle():\n    return 42\n")
    (repo / "check.sh").write_text("grep -q 'return 42' pkg/mod.py && echo CHECKED\n")
    repo.chmod(0o755)
    return repo


@pytest.fixture
def session(foreign: tuple[str, SandboxConfig], repo: Path, request: pytest.FixtureRequest) -> Iterator[Session]:
    box = backend_for(foreign[1]).session(repo, foreign[1], task_id=f"foreign-{request.node.name[:30]}")
    try:
        box.start()
        yield box
    finally:
        box.close()


def sh(session: Session, script: str, timeout_s: float = 30) -> tuple[str, str, dict[str, object]]:
    result = session.call("run_test", {"argv": ["sh", "-c", script], "timeout_s": timeout_s})
    return result.outcome, result.output, result.data


def test_every_tool_and_the_write_box(session: Session, repo: Path, foreign: tuple[str, SandboxConfig]) -> None:
    read = session.call("read_file", {"path": "README.md"})
    assert read.ok and "hello conformance" in read.output
    found = session.call("search", {"query": "needle"})
    assert found.ok and found.data["count"] == 1 and "pkg/mod.py" in found.output
    regex = session.call("search", {"query": "need+le", "regex": True})
    assert regex.ok and regex.output == found.output
    # the injected runtime's ripgrep, which no foreign image has (a literal search under gVisor: the walk)
    gvisor = foreign[1].runtime == "runsc"
    assert (found.data["engine"], regex.data["engine"]) == ("python" if gvisor else "rg", "rg")
    assert session.call("read_file", {"path": "nope.txt"}).outcome == "error"
    assert sh(session, "exit 3")[0] == "failed"
    (repo / "pkg").chmod(0o777)  # anyone may write here: only the read-only mount stops the write
    outcome, output, _ = sh(session, "echo x > /repo/pkg/x")
    assert outcome == "failed" and "Read-only file system" in output, output
    add = "*** Begin Patch\n*** Add File: new.txt\n+written\n*** End Patch\n"
    patched = session.call("apply_patch", {"patch": add})
    assert patched.ok and (repo / "new.txt").read_text() == "written\n"
    hook = session.call("apply_patch", {"patch": "*** Begin Patch\n*** Add File: .git/hooks/x\n+x\n*** End Patch\n"})
    assert not hook.ok and not (repo / ".git" / "hooks" / "x").exists()
    assert "written" in session.call("read_file", {"path": "new.txt"}).output


PYTHON_SEEN = {  # what `python3` is for the tests, in each image: the image's own, never codebox's 3.11
    "busybox": "not found",
    "musl": "not found",
    "bullseye": "3.9.",
    "pypy": "PyPy",
}


def test_the_tests_run_the_images_own_programs_and_see_no_codebox_runtime(
    session: Session, foreign: tuple[str, SandboxConfig]
) -> None:
    name = foreign[0]
    outcome, output, _ = sh(session, "env; echo MAPS; cat /proc/self/maps")
    assert outcome == "ok", output
    env, _, maps = output.partition("MAPS")
    for leaked in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONHOME", "PYTHONPATH", "/.codebox"):
        assert leaked not in env, (leaked, env)
    assert "/.codebox" not in maps  # the shell runs on the image's own libraries (or none)
    _, output, _ = sh(session, "python3 -c 'import sys; print(sys.version)' 2>&1 || echo python3 not found")
    assert PYTHON_SEEN[name] in output, output
    if name == "musl":
        _, output, _ = sh(session, "/lib/ld-musl-x86_64.so.1 2>&1; true")
        assert "musl libc" in output, output


def test_a_timeout_kills_the_whole_tree(session: Session) -> None:
    outcome, _, data = sh(session, "sleep 300 & (sleep 301 &) ; sleep 302", timeout_s=2)
    assert outcome == "timeout" and data["timed_out"] and int(str(data["killed_count"])) >= 3, data
    # no ps in every image, and GNU ls cannot list gVisor's /proc: the shell's own glob
    outcome, output, _ = sh(session, "for f in /proc/[0-9]*/comm; do cat $f; done 2>/dev/null; echo LISTED")
    assert outcome == "ok" and "LISTED" in output and "sh" in output and "sleep" not in output, output


def test_a_run_goes_from_first_call_to_final_message(
    run_scenario: Callable[..., Run], repo: Path, foreign: tuple[str, SandboxConfig]
) -> None:
    run = run_scenario(repo, [{"tool_calls": [{"name": "run_test", "arguments": {}}]}, {"message": "done"}],
                       test_cmd=["sh", "check.sh"])
    (result,) = run.results()
    assert not result.is_error and "CHECKED" in result.content, result.content
    assert run.report.stop_reason == "final_message", run.report.error
