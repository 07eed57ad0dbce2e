"""agent.defaults is the one place the built-in defaults live: the models agree with it."""

from __future__ import annotations

from typing import get_args

from agent import defaults
from agent.config import CodeboxSettings
from agent.containers.config import SandboxConfig
from agent.containers.spec import CONFIG_FIELDS, PlainSandboxConfig, same_config
from agent.protocol import PolicyName, TaskSpec


def test_the_task_defaults_come_from_agent_defaults() -> None:
    fields = TaskSpec.model_fields
    assert fields["policy"].default == defaults.DEFAULT_POLICY
    assert fields["max_steps"].default == defaults.DEFAULT_MAX_STEPS
    assert fields["timeout_s"].default == defaults.DEFAULT_TIMEOUT_S
    assert get_args(PolicyName) == defaults.POLICY_NAMES == ("read-only", "workspace-write", "ask")


def test_the_sandbox_limits_come_from_agent_defaults() -> None:
    config = SandboxConfig()
    assert (config.image, config.memory, config.pids_limit, config.cpus) == (
        defaults.DEFAULT_IMAGE, defaults.DEFAULT_MEMORY, defaults.DEFAULT_PIDS, defaults.DEFAULT_CPUS)
    assert SandboxConfig.model_fields["pids_limit"].metadata[0].ge == defaults.MIN_PIDS


def test_the_plain_config_has_sandbox_configs_fields_and_defaults() -> None:
    """The early start's pydantic-free config is the same config: same names, same defaults."""
    assert tuple(SandboxConfig.model_fields) == CONFIG_FIELDS
    assert tuple(PlainSandboxConfig()) == tuple(getattr(SandboxConfig(), name) for name in CONFIG_FIELDS)
    assert same_config(PlainSandboxConfig(memory=" 2g ", cpus=0.5), SandboxConfig(memory=" 2g ", cpus=0.5))
    assert not same_config(PlainSandboxConfig(memory="2g"), SandboxConfig())


def test_the_settings_without_any_source_are_the_defaults() -> None:
    s = CodeboxSettings()
    assert (s.policy, s.max_steps, s.timeout, s.memory, s.pids, s.cpus, s.jobs) == (
        "read-only", 30, 900.0, "1g", 256, 1.0, 2)
