"""Resolving on the host with uv for the sandbox's Python and platform, from a local wheelhouse."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.env.read.reqlines import parse_requirement
from agent.env.resolve.fetch import make_wheelhouse
from agent.env.resolve.resolve import IndexConfig, Target, check_python, resolve

TARGET = Target(python="3.11.2", platform="x86_64-manylinux_2_36")


def test_a_lock_pins_every_package_with_its_sha256(local_index: IndexConfig) -> None:
    lock = resolve([parse_requirement("alpha", "x")], TARGET, local_index)
    assert lock.installed() == ["alpha==1.0", "beta==2.0"]
    assert all(len(p.sha256) == 64 and p.url.startswith("file://") for p in lock.pins)


def test_the_wheelhouse_holds_exactly_the_locked_wheels(local_index: IndexConfig, tmp_path: Path) -> None:
    lock = resolve([parse_requirement("gamma", "x"), parse_requirement("beta<2", "y")], TARGET, local_index)
    folder = make_wheelhouse(lock, tmp_path / "wh")
    assert sorted(p.name for p in folder.iterdir()) == ["beta-1.0-py3-none-any.whl", "gamma-3.0-py3-none-any.whl"]


def test_an_unresolvable_requirement_is_named_with_where_it_was_declared(local_index: IndexConfig) -> None:
    reqs = [parse_requirement("alpha", "pyproject.toml [project] dependencies"),
            parse_requirement("no-such-thing>=1", "requirements-test.txt:3")]
    with pytest.raises(EnvError) as info:
        resolve(reqs, TARGET, local_index)
    message = str(info.value)
    assert "no-such-thing>=1 (declared in requirements-test.txt:3)" in message
    assert "alpha" not in message.split(":")[0] and info.value.usage and "\n" not in message


def test_a_package_whose_requires_python_excludes_the_sandbox_is_unresolvable(local_index: IndexConfig) -> None:
    with pytest.raises(EnvError, match="needs-future"):
        resolve([parse_requirement("needs-future", "setup.py")], TARGET, local_index)


def test_requires_python_of_the_project_is_checked_against_the_image() -> None:
    assert check_python(">=3.9", TARGET, "img") is None
    with pytest.raises(EnvError, match=r"requires Python >=3.12, but the sandbox image img has Python 3.11.2.*--image"):
        check_python(">=3.12", TARGET, "img")
    # semver's 2022 setup.cfg: no valid specifier today (a wildcard after >=); ignored with a note, as pip does
    assert check_python(">=3.7.*", TARGET, "img") == ("requires-python '>=3.7.*' is not a valid version specifier: "
                                                      "ignored, as pip ignores it")


def test_resolving_needs_no_interpreter_of_the_targets_version(local_index: IndexConfig, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """uv is told which interpreter to run (codebox's own): it does not search for a Python 3.11.2
    (without ``--python``, uv finds none here and fails: "No interpreter found for Python 3.11.2")."""
    empty = tmp_path / "no-python-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("UV_PYTHON_DOWNLOADS", "never")
    monkeypatch.setenv("UV_PYTHON_INSTALL_DIR", str(empty))
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("UV_PYTHON", raising=False)
    monkeypatch.chdir(empty)
    lock = resolve([parse_requirement("alpha", "x")], TARGET, local_index)
    assert lock.installed() == ["alpha==1.0", "beta==2.0"]


def test_a_missing_wheel_is_named_not_the_declared_package_that_pulls_it_in(tmp_path: Path) -> None:
    """Flask 2.0 as of May 2021 on 3.11: Jinja2 has a py3 wheel, the MarkupSafe it needs only cp36-cp39 ones."""
    from tests.agent.env.wheels import make_wheel

    folder = tmp_path / "wh"
    make_wheel(folder, "jinja2", "3.0.0", {"jinja2/__init__.py": ""}, ("MarkupSafe>=2.0.0rc2",))
    built = make_wheel(folder, "markupsafe", "2.0.0", {"markupsafe/__init__.py": ""})
    built.rename(folder / "MarkupSafe-2.0.0-cp39-cp39-manylinux2010_x86_64.whl")
    index = IndexConfig(find_links=[str(folder)], no_index=True)
    with pytest.raises(EnvError) as info:
        resolve([parse_requirement("Jinja2>=3.0", "setup.py install_requires")], TARGET, index)
    head = str(info.value).split(": Because")[0]
    assert head.startswith("no usable wheel of markupsafe ")
    assert "(needed by Jinja2>=3.0 (declared in setup.py install_requires))" in head
