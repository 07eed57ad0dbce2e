"""End-to-end scenarios: a scripted model, the real agent loop, a real Docker sandbox."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.cancel import CancelToken
from agent.model.scripted import ScriptedModel
from agent.protocol import AgentEvent, TaskSpec
from agent.sandboxes.config import SandboxConfig
from agent.task.events import CallbackSink, FanoutSink, MemorySink
from tests.e2e.scenarios.support import Run

DEMO_REPO = Path(__file__).resolve().parents[3] / "agent" / "cli" / "demo_data" / "repo"
TEST_CMD = ["python3", "-m", "pytest", "-q"]


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    from agent.containers.image import ensure_sandbox_image

    return ensure_sandbox_image()


@pytest.fixture
def scenario_config(sandbox_image: str) -> SandboxConfig:
    """The sandbox the scenarios run in (tests/conformance runs them in every backend and runtime)."""
    return SandboxConfig(image=sandbox_image)


@pytest.fixture
def demo_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_REPO, repo)
    return repo


@pytest.fixture
def run_scenario(scenario_config: SandboxConfig) -> Callable[..., Run]:
    def run(
        repo: Path,
        turns: list[dict[str, Any]],
        *,
        policy: str = "read-only",
        allow: list[str] | None = None,
        deny: list[str] | None = None,
        test_cmd: list[str] | None = None,
        cancel: CancelToken | None = None,
        on_event: Callable[[AgentEvent], None] | None = None,
        config: SandboxConfig | None = None,
        task_id: str | None = None,
        test_in_copy: bool = False,
    ) -> Run:
        from agent.task.runner import run_task

        memory = MemorySink()
        sinks: list[Any] = [memory]
        if on_event:
            sinks.append(CallbackSink(on_event))
        model = ScriptedModel(turns)
        task = TaskSpec(
            repo=str(repo),
            goal="scenario",
            policy=policy,  # type: ignore[arg-type]
            allow=allow or [],
            deny=deny or [],
            test_cmd=test_cmd if test_cmd is not None else TEST_CMD,
            test_in_copy=test_in_copy,
            max_steps=20,
            timeout_s=120,
            **({"id": task_id} if task_id else {}),
        )
        report = run_task(
            task,
            model,
            FanoutSink(*sinks),
            sandbox_config=config or scenario_config,
            cancel=cancel,
        )
        return Run(report=report, events=memory.events, model=model)

    return run
