"""agent.defaults is the one place the built-in defaults live: the models agree with it."""

from __future__ import annotations

from typing import get_args

import pytest

from agent import defaults
from agent.protocol import PolicyName, TaskSpec
from agent.sandboxes.config import SandboxConfig, SandboxConfigError
from agent.settings.sources import CodeboxSettings


def test_the_task_defaults_come_from_agent_defaults() -> None:
    fields = TaskSpec.model_fields
    assert fields["policy"].default == defaults.DEFAULT_POLICY
    assert fields["max_steps"].default == defaults.DEFAULT_MAX_STEPS
    assert fields["timeout_s"].default == defaults.DEFAULT_TIMEOUT_S
    assert get_args(PolicyName) == defaults.POLICY_NAMES == ("read-only", "workspace-write", "ask")


def test_the_sandbox_settings_come_from_agent_defaults() -> None:
    config = SandboxConfig()
    assert (config.image, config.memory, config.pids_limit, config.cpus) == (
        defaults.DEFAULT_IMAGE, defaults.DEFAULT_MEMORY, defaults.DEFAULT_PIDS, defaults.DEFAULT_CPUS)
    with pytest.raises(SandboxConfigError, match=f"at least {defaults.MIN_PIDS}"):
        SandboxConfig(pids_limit=defaults.MIN_PIDS - 1)


def test_the_settings_without_any_source_are_the_defaults() -> None:
    s = CodeboxSettings()
    assert (s.policy, s.max_steps, s.timeout, s.memory, s.pids, s.cpus, s.jobs) == (
        "read-only", 30, 900.0, "1g", 256, 1.0, 2)
