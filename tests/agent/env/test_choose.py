"""choose_for_task: the one place run, batch and eval get a task's environment from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.env import choose
from agent.env.choose import choose_for_task
from agent.env.info import EnvInfo
from agent.env.install import ensure, images
from agent.protocol import TaskSpec
from agent.sandboxes.config import SandboxConfig


class Store:
    """A backend's image store that has one image, ``mine:1``."""

    def __init__(self, backend: str) -> None:
        self.name = backend

    def inspect(self, name: str) -> dict[str, Any] | None:
        return {"Id": "sha256:" + "1" * 64} if name == "mine:1" else None

    def close(self) -> None:
        pass


@pytest.mark.parametrize("backend", ["docker", "podman"])
def test_the_environment_is_built_and_found_in_the_sandboxs_own_backend(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\ndependencies = ["attrs"]\n')
    asked: list[str] = []
    monkeypatch.setattr(ensure, "ensure_env", lambda request, log, cancel: (
        asked.append(request.backend), EnvInfo(image="codebox-env:x", base_image=request.base_image))[1])
    connect = classmethod(lambda cls, name: asked.append(name) or Store(name))
    monkeypatch.setattr(images.EngineImages, "connect", connect)
    config = SandboxConfig(backend=backend, image="codebox-sandbox:latest")
    for env in ("auto", {"pip": ["x"]}):
        found = choose_for_task(TaskSpec(repo=str(tmp_path), goal="g", env=env), tmp_path, config)
        assert found is not None and found.image == "codebox-env:x"
    named = choose_for_task(TaskSpec(repo=str(tmp_path), goal="g", env="mine:1"), tmp_path, config)
    assert named is not None and named.image == "mine:1"
    assert asked == [backend] * 3
    with pytest.raises(choose.EnvError, match=f"no such image in {backend}'s store"):
        choose_for_task(TaskSpec(repo=str(tmp_path), goal="g", env="other:2"), tmp_path, config)
    assert choose_for_task(TaskSpec(repo=str(tmp_path), goal="g", env="none"), tmp_path, config) is None
