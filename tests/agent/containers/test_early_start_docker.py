"""The pydantic-free launch and `codebox run`'s early start, against real containers: a Sandbox
adopts a container launched ahead and only pings it; a launch nobody claims is removed (closed,
a claim with other limits, a usage error, Ctrl-C); flags the early start doubts start nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agent.backends.pool import LABEL_POOL, PlannedTask, WarmPool
from agent.containers.launch import PendingLaunch
from agent.errors import SandboxError
from agent.sandboxes.config import SandboxConfig
from tests.agent.containers.labelled import task_containers, wait_no_containers

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[3]
TASK = f"pytest-early-{os.getpid()}"
SCRIPT = {"turns": [
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
    {"message": "done"},
]}


def _repo(path: Path, marker: str) -> Path:
    path.mkdir(parents=True)
    (path / "README.md").write_text(f"repo {marker}\n")
    return path.resolve()


# --- the launch and its adoption ---------------------------------------------------------------


def test_a_sandbox_adopts_a_launched_container_and_only_pings_it(
    docker_client: Any, sandbox_image: str, tmp_path: Path
) -> None:
    from agent.containers.sandbox import Sandbox

    repo, task_id = _repo(tmp_path / "a", "adopted"), f"{TASK}-adopt"
    pending = PendingLaunch(SandboxConfig(image=sandbox_image), repo, task_id, {LABEL_POOL: "warm"}).begin()
    assert pending.wait_sent(30) and pending.wait(60) and pending.error is None
    [launched] = task_containers(docker_client, task_id)
    assert launched["State"] == "running" and launched["Labels"][LABEL_POOL] == "warm"
    info = docker_client.inspect_container(launched["Id"])
    assert info["Config"]["OpenStdin"] and info["Config"]["StdinOnce"] and info["HostConfig"]["AutoRemove"]

    sandbox = Sandbox(repo, SandboxConfig(image=sandbox_image), task_id=task_id, launched=pending)
    try:
        assert sandbox.container_ids == []  # not adopted before its first start
        read = sandbox.call("read_file", {"path": "README.md"})
        assert read.ok and "repo adopted" in read.output
        assert sandbox.container_ids == [launched["Id"]] and sandbox.startup_s is not None
        assert [c["Id"] for c in task_containers(docker_client, task_id)] == [launched["Id"]]  # no second one
        pending.close()  # handed over: closing the launch leaves the sandbox's container alone
        assert sandbox.call("search", {"query": "adopted"}).ok
    finally:
        sandbox.close()
    assert wait_no_containers(docker_client, task_id)


def test_a_closed_launch_leaves_no_container(docker_client: Any, sandbox_image: str, tmp_path: Path) -> None:
    from agent.containers.sandbox import Sandbox

    repo = _repo(tmp_path / "c", "closed")
    # Closed while it runs (before, during or after the create: whichever the thread reached).
    for n in range(3):
        task_id = f"{TASK}-close-{n}"
        pending = PendingLaunch(SandboxConfig(image=sandbox_image), repo, task_id).begin()
        if n == 1:
            pending.wait_sent(30)
        if n == 2:
            pending.wait(60)
        pending.close()
        assert pending.wait(60)
        with pytest.raises(SandboxError, match="closed"):
            pending.take()
        assert wait_no_containers(docker_client, task_id), n
    # A sandbox closed before its first start removes the container it was to adopt.
    task_id = f"{TASK}-close-sandbox"
    pending = PendingLaunch(SandboxConfig(image=sandbox_image), repo, task_id).begin()
    sandbox = Sandbox(repo, SandboxConfig(image=sandbox_image), task_id=task_id, launched=pending)
    pending.wait(60)
    sandbox.close()
    assert wait_no_containers(docker_client, task_id)
    with pytest.raises(SandboxError, match="closed"):
        sandbox.start()


def test_a_failed_launch_is_the_sandboxs_start_error(docker_client: Any, tmp_path: Path) -> None:
    from agent.containers.sandbox import Sandbox

    repo, task_id = _repo(tmp_path / "f", "failed"), f"{TASK}-noimage"
    config = SandboxConfig(image="codebox-no-such-image:none")
    pending = PendingLaunch(config, repo, task_id).begin()
    assert pending.wait(60) and pending.error is not None and "codebox image build" in str(pending.error)
    sandbox = Sandbox(repo, SandboxConfig(image=config.image), task_id=task_id, launched=pending)
    with pytest.raises(SandboxError, match="codebox image build"):
        sandbox.start()
    sandbox.close()
    assert wait_no_containers(docker_client, task_id)


def test_a_launched_container_goes_with_its_sigkilled_owner(
    docker_client: Any, sandbox_image: str, tmp_path: Path
) -> None:
    """Attached before it started, with StdinOnce: the owner's death is the server's EOF."""
    repo, task_id = _repo(tmp_path / "k", "killed"), f"{TASK}-killed"
    script = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from agent.containers.launch import PendingLaunch
        from agent.sandboxes.config import SandboxConfig
        pending = PendingLaunch(SandboxConfig(image={sandbox_image!r}), Path({str(repo)!r}), {task_id!r}).begin()
        print("started" if pending.wait(60) and pending.error is None else pending.error, flush=True)
        time.sleep(120)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
        [launched] = task_containers(docker_client, task_id)
        assert launched["State"] == "running"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)
        assert wait_no_containers(docker_client, task_id), "a launched container outlived its SIGKILLed owner"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --- the pool's early launch -------------------------------------------------------------------


def test_the_pool_hands_a_launched_container_only_to_the_same_repo_and_limits(
    docker_client: Any, sandbox_image: str, tmp_path: Path
) -> None:
    repo = _repo(tmp_path / "p", "pool")
    same, other = f"{TASK}-pool-same", f"{TASK}-pool-other"
    with WarmPool(2) as pool:
        assert pool.launch(PlannedTask(same, repo, SandboxConfig(image=sandbox_image)), sent_timeout_s=30)
        assert pool.launch(PlannedTask(other, repo, SandboxConfig(image=sandbox_image)), sent_timeout_s=30)
        assert not pool.launch(PlannedTask(f"{TASK}-pool-full", repo, SandboxConfig(image=sandbox_image)))
        assert pool.wait_started(same, 60) and pool.wait_started(other, 60)
        [launched] = task_containers(docker_client, same)

        sandbox = pool.claim(same, repo, SandboxConfig(image=sandbox_image))
        assert sandbox is not None and pool.hits == 1
        try:
            assert sandbox.call("read_file", {"path": "README.md"}).ok
            assert sandbox.container_ids == [launched["Id"]]
        finally:
            sandbox.close()

        assert task_containers(docker_client, other)
        assert pool.claim(other, repo, SandboxConfig(image=sandbox_image, memory="512m")) is None
        assert wait_no_containers(docker_client, other)  # other limits: removed, the task starts its own
    assert wait_no_containers(docker_client, same)


def test_closing_the_pool_removes_an_unclaimed_launch(docker_client: Any, sandbox_image: str, tmp_path: Path) -> None:
    repo, task_id = _repo(tmp_path / "u", "unclaimed"), f"{TASK}-unclaimed"
    pool = WarmPool(1)
    pool.launch(PlannedTask(task_id, repo, SandboxConfig(image=sandbox_image)), sent_timeout_s=30)
    pool.close()
    assert wait_no_containers(docker_client, task_id)


# --- `codebox run` ---------------------------------------------------------------------------


def _run_cli(tmp_path: Path, argv: list[str], before_main: str = "") -> dict[str, Any]:
    """`codebox run` in a fresh interpreter, every create request recorded: whether pydantic was
    imported when it was sent, the container's id, and whether that container still exists after."""
    code = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from agent.containers.engine_api import EngineClient, NotFound
        created = []
        real = EngineClient.create_container
        def create(self, *args, **kwargs):
            pydantic = "pydantic" in sys.modules
            cid = real(self, *args, **kwargs)
            created.append((cid, pydantic))
            return cid
        EngineClient.create_container = create
        from agent.cli.parser import main
        {before_main}
        err = io.StringIO()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = main({argv!r})
        except KeyboardInterrupt:
            code = "interrupted"
        def exists(cid):
            try:
                EngineClient().inspect_container(cid)
            except NotFound:
                return False
            return True
        print(json.dumps({{"code": code, "stderr": err.getvalue(), "pydantic_at_create": [p for _, p in created],
                          "left": [cid for cid, _ in created if exists(cid)]}}))
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("CODEBOX_")}
    env.update(PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(tmp_path / "no-config"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _run_argv(tmp_path: Path, *flags: str) -> list[str]:
    repo = tmp_path / "repo"
    if not repo.exists():
        _repo(repo, "cli")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    return ["run", "--quiet", "--repo", str(repo), "--model", f"scripted:{script}", *flags, "read it"]


def test_the_run_claims_its_early_container(sandbox_image: str, tmp_path: Path) -> None:
    found = _run_cli(tmp_path, _run_argv(tmp_path, "--image", sandbox_image))
    assert found == {"code": 0, "stderr": "", "pydantic_at_create": [False], "left": []}


def test_an_early_container_the_run_never_claims_is_removed(sandbox_image: str, tmp_path: Path) -> None:
    # A usage error found after the early start (a cost limit without prices).
    found = _run_cli(tmp_path, _run_argv(tmp_path, "--image", sandbox_image, "--max-cost", "1"))
    assert found["code"] == 2 and "a cost limit needs the prices" in found["stderr"]
    assert found["pydantic_at_create"] == [False] and found["left"] == []
    # Ctrl-C once the early container runs, before the run claims it.
    interrupt = textwrap.dedent(
        """
        import agent.cli.commands.run as run_command
        def interrupted(args, task_id, warm):
            assert warm is not None and warm.wait_started(task_id, 60)
            raise KeyboardInterrupt
        run_command._cmd_run = interrupted
        """
    ).replace("\n", "\n        ")
    found = _run_cli(tmp_path, _run_argv(tmp_path, "--image", sandbox_image), before_main=interrupt)
    assert found["code"] == "interrupted" and found["pydantic_at_create"] == [False] and found["left"] == []


@pytest.mark.parametrize(("flags", "message"), [
    (["--memory", "lots"], 'codebox: --memory: a size is a number with a unit b, k, m or g, e.g. 512m or 2g '
                           '(got "lots")\n'),
    (["--memory", "1m"], 'codebox: --memory: Docker needs at least 6m of memory (got "1m")\n'),
    (["--pids", "3"], "codebox: --pids: must be at least 16 (got 3)\n"),
])
def test_flags_the_early_start_doubts_start_no_container(tmp_path: Path, flags: list[str], message: str) -> None:
    found = _run_cli(tmp_path, _run_argv(tmp_path, *flags))
    assert found == {"code": 2, "stderr": message, "pydantic_at_create": [], "left": []}
