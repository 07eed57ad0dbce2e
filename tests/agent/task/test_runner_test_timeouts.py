"""run_test's timeouts are settings: the run's limits reach the tool (the model's own ask is capped by them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.model.scripted import ScriptedModel
from agent.protocol import TaskSpec
from agent.task import runner
from agent.task.events import MemorySink
from agent.task.loop import Limits
from tests.fakes import FakeSandbox


class _Sandbox(FakeSandbox):
    def start(self) -> None:
        pass


class _Backend:
    def __init__(self, sandbox: _Sandbox) -> None:
        self.sandbox = sandbox

    def preflight(self, config: Any) -> None:
        pass

    def session(self, repo: Path, config: Any, task_id: str) -> _Sandbox:
        return self.sandbox


def test_the_runs_test_timeouts_reach_run_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sandbox = _Sandbox()
    monkeypatch.setattr(runner, "backend_for", lambda config: _Backend(sandbox))
    model = ScriptedModel([{"tool_calls": [{"name": "run_test", "arguments": {}}]},
                           {"tool_calls": [{"name": "run_test", "arguments": {"timeout_s": 99999}}]},
                           {"message": "done"}])
    task = TaskSpec(repo=str(tmp_path), goal="g", env="none", test_cmd=["pytest"])
    report = runner.run_task(task, model, MemorySink(), limits=Limits(test_timeout_s=7, max_test_timeout_s=20))
    assert report.stop_reason == "final_message"
    assert [args["timeout_s"] for tool, args in sandbox.calls if tool == "run_test"] == [7, 20]
