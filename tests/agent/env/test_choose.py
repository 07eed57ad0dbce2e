"""choose_for_task: the one place run, batch and eval get a task's environment from."""

from __future__ import annotations

from pathlib import Path

from agent.env.choose import choose_for_task
from agent.protocol import TaskSpec
from agent.sandboxes.config import SandboxConfig


def test_another_backend_than_docker_runs_its_image_as_it_is_and_the_log_says_so(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\ndependencies = ["attrs"]\n')
    config = SandboxConfig(backend="podman", image="codebox-sandbox:latest")
    lines: list[str] = []
    for env in ("auto", "codebox-env:abc", {"pip": ["x"]}):
        assert choose_for_task(TaskSpec(repo=str(tmp_path), goal="g", env=env), tmp_path, config, lines.append) is None
    assert lines == ["environments are built with Docker only: the podman sandbox runs codebox-sandbox:latest "
                     "as it is"] * 3
    lines.clear()
    assert choose_for_task(TaskSpec(repo=str(tmp_path), goal="g", env="none"), tmp_path, config, lines.append) is None
    assert lines == []  # nothing was asked for: nothing to say
