"""The local engine's warm start against real containers: later tasks find workspace and sandbox ready."""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.backends.pool import LABEL_POOL, PlannedTask, WarmPool
from agent.batch import run_batch
from agent.cancel import CancelToken
from agent.console.batch_view import BatchView
from agent.console.render import summary_text
from agent.containers.leftovers import LABEL_TASK
from agent.engines import TaskJob, execute_job
from agent.engines.base import PreparedJob
from agent.protocol import AgentEvent, Report, TaskSpec
from agent.sandboxes.config import SandboxConfig
from agent.task.events import CallbackSink, EventSink
from agent.task.workspace import create_workspace
from tests.repos import sh

pytestmark = pytest.mark.docker

PREFIX = f"pytest-warm-{os.getpid()}"


# docker_client and sandbox_image: tests/conftest.py


@pytest.fixture
def ws_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every workspace of the test goes here, so the test sees whether one was left."""
    root = tmp_path / "workspaces"
    root.mkdir()
    monkeypatch.setenv("CODEBOX_WORKSPACE_ROOT", str(root))
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    sh("git", "init", "-q", cwd=path)
    (path / "README.md").write_text("hello\n")
    sh("git", "add", ".", cwd=path)
    sh("git", "commit", "-qm", "init", cwd=path)
    return path


def scripted(tmp_path: Path, name: str) -> str:
    """Reads README.md first, then adds <name>.txt: each task's patch names its own file."""
    patch = f"*** Begin Patch\n*** Add File: {name}.txt\n+{name}\n*** End Patch\n"
    turns = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {"tool_calls": [{"name": "apply_patch", "arguments": {"patch": patch}}]},
        {"message": "done"},
    ]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def tasks_for(tmp_path: Path, repo: Path, ids: list[str], **extra: Any) -> list[TaskSpec]:
    fields: dict[str, Any] = {"policy": "workspace-write", "env": "none", **extra}
    return [TaskSpec(id=t, repo=str(repo), goal="g", model=scripted(tmp_path, t), **fields) for t in ids]


def containers(client: Any, task_id: str) -> list[dict[str, Any]]:
    return list(client.containers(all=True, filters={"label": [f"{LABEL_TASK}={task_id}"]}))


def wait_for(check: Any, timeout_s: float = 60) -> Any:
    deadline = time.monotonic() + timeout_s
    value = check()
    while not value and time.monotonic() < deadline:
        time.sleep(0.1)
        value = check()
    return value


def warm_container(client: Any, task_id: str) -> str | None:
    """The id of this task's running pool container, if there is one."""
    found = [c for c in containers(client, task_id) if LABEL_POOL in c["Labels"] and c["State"] == "running"]
    return found[0]["Id"] if found else None


class WatchingView(BatchView):
    """The real progress view, plus what Docker shows at a task's start and at its first tool result."""

    def __init__(self, client: Any, total: int, after_finish: Any = None, on_tool: Any = None) -> None:
        super().__init__(total, io.StringIO())
        self.client = client
        self.at_start: dict[str, list[dict[str, Any]]] = {}
        self.at_first_result: dict[str, list[dict[str, Any]]] = {}
        self.after_finish = after_finish
        self.on_tool = on_tool

    def started(self, task_id: str) -> None:
        self.at_start[task_id] = containers(self.client, task_id)
        super().started(task_id)

    def finished(self, report: Report) -> None:
        super().finished(report)
        if self.after_finish is not None:
            self.after_finish(report)

    def on_event(self, task_id: str, event: AgentEvent) -> None:
        if event.type == "tool.end" and task_id not in self.at_first_result:
            self.at_first_result[task_id] = containers(self.client, task_id)
            if self.on_tool is not None:
                self.on_tool(task_id)
        super().on_event(task_id, event)


def test_later_tasks_start_in_a_sandbox_started_before_they_began(
    tmp_path: Path, repo: Path, sandbox_image: str, docker_client: Any, ws_root: Path
) -> None:
    ids = [f"{PREFIX}-a{i}" for i in range(4)]
    warm_ids: dict[str, str] = {}

    def after_finish(report: Report) -> None:
        # jobs=1: the next task starts only after this returns; its sandbox is already coming up.
        following = ids.index(report.task_id) + 1
        if following < len(ids):
            warm_ids[ids[following]] = wait_for(lambda: warm_container(docker_client, ids[following]))

    view = WatchingView(docker_client, len(ids), after_finish=after_finish)
    out = tmp_path / "out"
    reports = run_batch(tasks_for(tmp_path, repo, ids), out, jobs=1, sandbox_config=SandboxConfig(image=sandbox_image),
                        view=view)
    assert [r.status for r in reports] == ["completed"] * 4, [summary_text(r) for r in reports]
    assert view.at_start[ids[0]] == [] and LABEL_POOL not in view.at_first_result[ids[0]][0]["Labels"]
    for task_id in ids[1:]:
        assert warm_ids.get(task_id), f"no warm sandbox came up for {task_id} while the task before it ran"
        # It was there when the task began, and it is the one container that served the first call.
        assert [c["Id"] for c in view.at_start[task_id]] == [warm_ids[task_id]]
        [serving] = view.at_first_result[task_id]
        assert serving["Id"] == warm_ids[task_id] and serving["Labels"][LABEL_POOL] == "warm"
    for task_id in ids:  # each task worked in its own workspace
        patch = (out / task_id / "patch.diff").read_text()
        assert f"+++ b/{task_id}.txt" in patch and patch.count("+++ b/") == 1
    assert not (repo / f"{ids[1]}.txt").exists()
    assert all(wait_for(lambda t=t: not containers(docker_client, t), 15) for t in ids)
    assert list(ws_root.iterdir()) == []


def test_preparation_errors_leave_tasks_to_run_the_normal_way(
    tmp_path: Path, repo: Path, sandbox_image: str, docker_client: Any, ws_root: Path
) -> None:
    """jobs=2: tasks 2.. are prepared; a bad base commit or env fails in preparation and again, the
    same way, in the task itself; the others are served by warm sandboxes."""
    ids = [f"{PREFIX}-e{i}" for i in range(6)]
    tasks = tasks_for(tmp_path, repo, ids)
    tasks[3] = tasks[3].model_copy(update={"base_commit": "0" * 40})
    tasks[4] = tasks[4].model_copy(update={"env": "codebox-no-such-env:none"})
    config = SandboxConfig(image=sandbox_image)
    results: dict[bool, list[tuple[str, str, str | None]]] = {}
    for warm in (False, True):
        view = WatchingView(docker_client, len(ids))
        out = tmp_path / f"out-{warm}"
        reports = run_batch(tasks, out, jobs=2, sandbox_config=config, view=view, warm=warm)
        results[warm] = [(r.task_id, r.stop_reason, r.error) for r in reports]
        pooled = {t for t, found in view.at_first_result.items() if any(LABEL_POOL in c["Labels"] for c in found)}
        assert pooled == ({ids[2], ids[5]} if warm else set())
    statuses = [reason for _, reason, _ in results[True]]
    assert statuses == ["final_message"] * 3 + ["invalid_task", "sandbox_error", "final_message"], results[True]
    assert results[True] == results[False]
    assert all(wait_for(lambda t=t: not containers(docker_client, t), 15) for t in ids)
    assert list(ws_root.iterdir()) == []


def test_cancel_mid_batch_leaves_no_container_and_no_workspace(
    tmp_path: Path, repo: Path, sandbox_image: str, docker_client: Any, ws_root: Path
) -> None:
    ids = [f"{PREFIX}-c{i}" for i in range(4)]
    cancel = CancelToken()
    seen_warm: list[str] = []

    def on_tool(task_id: str) -> None:
        if task_id == ids[1]:  # task 2's sandbox is up, its workspace made: cancel now
            seen_warm.append(wait_for(lambda: warm_container(docker_client, ids[2])))
            cancel.cancel("test cancel")

    view = WatchingView(docker_client, len(ids), on_tool=on_tool)
    out = tmp_path / "out"
    reports = run_batch(tasks_for(tmp_path, repo, ids), out, jobs=1, sandbox_config=SandboxConfig(image=sandbox_image),
                        view=view, cancel=cancel)
    assert seen_warm and seen_warm[0], "task 2's sandbox never came up"
    shown = [summary_text(r) for r in reports]
    assert [r.task_id for r in reports] == ids[:2] and reports[1].status == "cancelled", shown
    assert not (out / ids[2] / "report.json").exists()
    gone = all(wait_for(lambda t=t: not containers(docker_client, t), 15) for t in ids)
    assert gone, "a container outlived the cancel"
    assert list(ws_root.iterdir()) == [], "a prepared workspace outlived the cancel"


@pytest.fixture
def other_image(docker_client: Any, sandbox_image: str) -> Iterator[str]:
    """The sandbox image under a tag of this test's own (removing it removes only the tag)."""
    repository, tag = "codebox-pooltest", str(os.getpid())
    docker_client.tag_image(sandbox_image, repository, tag)
    yield f"{repository}:{tag}"
    docker_client.remove_image(f"{repository}:{tag}")


def test_a_task_whose_env_image_differs_starts_its_own_and_the_warm_one_goes(
    tmp_path: Path, repo: Path, sandbox_image: str, other_image: str, docker_client: Any, ws_root: Path
) -> None:
    task_id = f"{PREFIX}-env"
    [task] = tasks_for(tmp_path, repo, [task_id], env=other_image)
    job = TaskJob(task=task, model=task.model or "", sandbox=SandboxConfig(image=sandbox_image))
    workspace = create_workspace(repo)
    pool = WarmPool(1)
    # Prepared on the base image, but the task's environment is another image.
    pool.prestart(PlannedTask(task_id, workspace.path.resolve(), SandboxConfig(image=sandbox_image)))
    try:
        assert pool.wait_started(task_id, 60)
        warm_id = warm_container(docker_client, task_id)
        assert warm_id
        first: list[list[dict[str, Any]]] = []

        def on_event(event: AgentEvent) -> None:
            if event.type == "tool.end" and not first:
                first.append(containers(docker_client, task_id))

        sink: EventSink = CallbackSink(on_event)
        outcome = execute_job(job, repo, CancelToken(), sink, PreparedJob(workspace, None, pool))
        assert outcome.report.status == "completed", summary_text(outcome.report)
        assert pool.hits == 0
        served = [c for c in first[0] if c["Id"] != warm_id]
        assert [(c["Image"], LABEL_POOL in c["Labels"]) for c in served] == [(other_image, False)]
        # Discarded at the claim, not at the pool's close.
        assert wait_for(lambda: all(c["Id"] != warm_id for c in containers(docker_client, task_id)), 15)
    finally:
        pool.close()
    assert wait_for(lambda: not containers(docker_client, task_id), 15)
    assert not workspace.path.exists()
