"""The hostile-repository scenarios of tests/e2e/scenarios, run in every backend x runtime: the
fixtures of this folder (tests/conformance/conftest.py) put them in the target sandbox."""

from __future__ import annotations

import pytest

from agent.sandboxes.config import SandboxConfig
from tests.e2e.scenarios.test_hardening import (  # noqa: F401 -- collected here, in each target
    test_1_a_path_with_escape_sequences_is_refused,
    test_2_run_test_args_cannot_change_what_pass_means,
    test_3_a_test_run_cannot_forge_the_next,
    test_4_hooks_and_host_run_files_are_not_writable_and_patches_add_no_exec_bit,
    test_5_fifo_and_sparse_files_answer_at_once,
    test_6_the_tool_container_never_runs_as_root,
    test_7_links_into_pseudo_filesystems_are_refused_as_escapes,
)
from tests.e2e.scenarios.test_scenarios import test_8_hostile_repository_cannot_break_out  # noqa: F401

pytestmark = pytest.mark.docker


@pytest.fixture(autouse=True)
def _lean(target: SandboxConfig) -> None:
    """docker-runc runs these in tests/e2e/scenarios already; podman-runsc runs the backend tests only
    (CI's time: each combination here costs about 40 s)."""
    if (target.backend, target.runtime) in (("docker", "runc"), ("podman", "runsc")):
        pytest.skip(f"{target.backend}-{target.runtime}: the scenarios run elsewhere (kept lean)")
