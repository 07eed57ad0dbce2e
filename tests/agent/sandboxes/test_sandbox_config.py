"""SandboxConfig: the one model of the sandbox settings. It refuses what the engine would, in one
line naming the field, whether made directly (the early start) or inside a pydantic model (a batch job)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from agent.sandboxes.config import SandboxConfig, SandboxConfigError, memory_limit, size_bytes


@pytest.mark.parametrize(("text", "expected"), [("1g", 2**30), ("512m", 512 * 2**20), ("1.5g", 3 * 2**29),
                                                 ("100", 100), ("2gb", 2 * 2**30), ("64K", 64 * 1024)])
def test_sizes_in_dockers_syntax(text: str, expected: int) -> None:
    assert size_bytes(text) == expected


BAD = [
    ({"memory": "lots"}, 'memory: a size is a number with a unit b, k, m or g, e.g. 512m or 2g (got "lots")'),
    ({"memory": "1m"}, 'memory: Docker needs at least 6m of memory (got "1m")'),
    ({"memory": ""}, "memory: a size is"),
    ({"memory": "5000k"}, "memory: Docker needs at least 6m"),
    ({"tmpfs_size": "big"}, "tmpfs_size: the size 'big' is not a size"),
    ({"pids_limit": 15}, "pids_limit: must be at least 16 (got 15)"),
    ({"pids_limit": True}, "pids_limit: must be an integer (got True)"),
    ({"pids_limit": "64"}, 'pids_limit: must be an integer (got "64")'),
    ({"cpus": 0.0}, "cpus: must be more than 0 (got 0)"),
    ({"cpus": -1.0}, "cpus: must be more than 0"),
    ({"cpus": float("inf")}, "cpus: must be a finite number"),
    ({"lifetime_s": 0.0}, "lifetime_s: must be more than 0"),
    ({"output_limit": 0}, "output_limit: must be more than 0"),
    ({"call_grace_s": -1.0}, "call_grace_s: must be at least 0"),
    ({"default_timeout_s": 0.0}, "default_timeout_s: must be more than 0"),
    ({"image": " "}, "image: must not be empty"),
    ({"user": 0}, "user: must be a string"),
    ({"allow_shell": "yes"}, "allow_shell: must be true or false"),
]


@pytest.mark.parametrize(("options", "message"), BAD, ids=[str(o) for o, _ in BAD])
def test_a_bad_setting_is_one_line_naming_the_field(options: dict[str, Any], message: str) -> None:
    with pytest.raises(SandboxConfigError) as caught:
        SandboxConfig(**options)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    assert caught.value.field == next(iter(options))


class _Job(BaseModel):
    sandbox: SandboxConfig = SandboxConfig()


def test_inside_a_pydantic_model_the_same_rules_hold_and_it_round_trips() -> None:
    job = _Job(sandbox=SandboxConfig(memory=" 2g ", cpus=0.5))
    assert job.sandbox.memory == "2g"
    assert _Job.model_validate_json(job.model_dump_json()) == job
    assert pickle.loads(pickle.dumps(job)) == job
    with pytest.raises(ValidationError, match="Docker needs at least 6m"):
        _Job.model_validate({"sandbox": {"memory": "1m"}})


def test_equal_configs_make_the_same_sandbox_and_replace_checks_again() -> None:
    assert SandboxConfig(memory=" 2g ") == SandboxConfig(memory="2g") != SandboxConfig()
    assert SandboxConfig().replace(image="other:tag").image == "other:tag"
    with pytest.raises(SandboxConfigError, match="pids_limit"):
        SandboxConfig().replace(pids_limit=1)
    assert memory_limit(" 512m ") == SandboxConfig(memory=" 512m ").memory == "512m"
