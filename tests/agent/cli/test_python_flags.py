"""The registered images of each Python: `codebox image python X.Y --image NAME`'s file and the python_images
setting (which wins); their mistakes are one line."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agent.cli.parser import main
from agent.cli.python_flags import PythonFlags, registered_images, registrations_file
from agent.containers.pythons import PythonUnavailable
from agent.env.errors import EnvError
from agent.env.python.requires import in_folder
from agent.protocol import TaskSpec


@pytest.fixture(autouse=True)
def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("CODEBOX_PYTHON_IMAGES", raising=False)


def test_the_command_registers_and_forgets_and_the_setting_wins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["image", "python", "3.9", "--image", "mine/py:3.9"]) == 0
    assert main(["image", "python", "3.10.4", "--image", "mine/py:3.10"]) == 0
    assert registered_images([]) == {"3.9": "mine/py:3.9", "3.10": "mine/py:3.10"}
    assert registered_images(["3.9=other:1"]) == {"3.9": "other:1", "3.10": "mine/py:3.10"}
    assert main(["image", "python", "3.10", "--forget"]) == 0
    assert registered_images([]) == {"3.9": "mine/py:3.9"}
    assert registrations_file().is_file()
    assert "Python 3.9: mine/py:3.9" in capsys.readouterr().out


def test_mistakes_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["image", "python", "three", "--image", "x"]) == 2
    assert main(["image", "python", "--image", "x"]) == 2
    assert main(["image", "python", "2.7", "--build"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["codebox: image python 'three': expected a Python version such as 3.9",
                   "codebox: image python: --image, --forget and --build need the version (X.Y)",
                   "codebox: no Debian suite here ships Python 2.7 (bullseye 3.9, bookworm 3.11, trixie 3.13) and this "
                   "machine has no build of it under pyenv, uv or /usr/local"]
    with pytest.raises(EnvError, match=r"python_images: '3\.9' is not X\.Y=IMAGE"):
        registered_images(["3.9"])


def _flags() -> PythonFlags:
    args = argparse.Namespace(python=None, image=None, python_images=[], python_pull="no", backend="docker")
    return PythonFlags(args, log=lambda _line: None)


def test_a_rust_go_or_node_repository_gets_no_python_by_its_date(tmp_path: Path) -> None:
    """An old Rust crate would otherwise want the Python of 2016 (3.5, nowhere here) and be skipped: its tests
    run in its toolchain's image, so nothing is chosen unless a Python is asked."""
    task = TaskSpec(id="t", repo=str(tmp_path), goal="g")
    for manifest in ("Cargo.toml", "go.mod", "package.json"):
        (tmp_path / manifest).write_text("")
        chosen = _flags().apply(task, in_folder(tmp_path), "2016-03-01T00:00:00Z")
        assert chosen.python_choice is None and chosen.image is None
        (tmp_path / manifest).unlink()
    (tmp_path / "package.json").write_text("{}")
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='x')\n")  # Python beside it
    with pytest.raises(PythonUnavailable, match=r"no Python 3\.5 here"):
        _flags().apply(task, in_folder(tmp_path), "2016-03-01T00:00:00Z")
