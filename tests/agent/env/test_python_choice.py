"""Which Python a task runs on: the chain's order, the calendar, requires-python, the nearest newer minor."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent import python_versions as versions
from agent.env.errors import EnvError
from agent.env.python.choice import PythonChoice, asked_version, want
from agent.env.python.requires import at_commit, in_folder, requires_python


def test_the_python_current_on_a_date_is_the_newest_minor_out_by_then() -> None:
    assert versions.current_on("2020-10-04") == "3.8"
    assert versions.current_on("2020-10-05T00:00:00Z") == "3.9"
    assert versions.current_on("2014-01-01") is None


def test_requires_python_bounds_the_date_s_python() -> None:
    assert versions.newest_allowed_by("<3.9", "2023-01-01") == "3.8"
    assert versions.newest_allowed_by(">=3.6,<3.10", "2022-06-01") == "3.9"
    assert versions.newest_allowed_by(">=3.12", "2021-01-01") is None
    assert versions.allows("not a specifier", "3.9")


def test_the_nearest_newer_minor_stands_in_within_its_series_only() -> None:
    here = {"3.9", "3.11", "3.13"}
    assert [versions.nearest_newer(m, here) for m in ("3.6", "3.8", "3.9", "3.10", "3.12")] == \
        ["3.9", "3.9", "3.9", "3.11", "3.13"]
    assert versions.nearest_newer("3.14", here) is None
    assert versions.nearest_newer("2.7", here) is None  # another series
    assert versions.nearest_newer("3.5", here) is None  # too old for 3.9 to stand in


def test_the_user_s_word_beats_the_dataset_s_spec_which_beats_the_project() -> None:
    spec = ("3.9", "SWE-bench 4.1.0's spec for psf/requests 2.26")
    asked = want(("3.13", "flag", "--python"), spec, ">=3.11", "2019-01-01T00:00:00Z")
    assert (asked.minor, asked.source, asked.why) == ("3.13", "flag", "asked by --python")
    by_spec = want(None, spec, ">=3.11", "2019-01-01T00:00:00Z")
    assert (by_spec.minor, by_spec.source, by_spec.why) == ("3.9", "dataset", spec[1])
    by_date = want(None, None, ">=3.6", "2021-03-01T12:00:00Z")
    assert (by_date.minor, by_date.source) == ("3.9", "project")
    assert "current on 2021-03-01" in by_date.why and ">=3.6" in by_date.why


def test_the_default_image_s_python_serves_whenever_it_was_out_and_allowed() -> None:
    assert want(None, None, ">=3.8", "2024-05-01T00:00:00Z").minor is None  # 3.12 was current; 3.11 is allowed
    assert want(None, None, None, "now").minor is None
    assert want(None, None, None, "2020-10-06T00:00:00Z").minor == "3.9"  # --as-of 2020-10-05: 3.9's day
    assert want(None, None, None, "2020-10-05T00:00:00Z").minor == "3.8"  # --as-of 2020-10-04
    assert want(None, None, "<3.11", "2024-05-01T00:00:00Z").minor == "3.10"  # the project refuses 3.11
    assert want(None, None, ">=3.12", "now").minor == "3.12"  # no date: the oldest one it allows above 3.11
    assert want(None, None, "<3.10", None).minor == "3.9"
    assert want(None, None, None, "2021-12-01T12:00:00Z").minor == "3.10"  # wanted; 3.11 stands in (sources')


def test_a_version_that_is_no_version_is_a_usage_error() -> None:
    assert asked_version(" 3.9.2 ", "--python") == "3.9"
    with pytest.raises(EnvError, match=r"--python 'three': expected a Python version such as 3.9") as caught:
        asked_version("three", "--python")
    assert caught.value.usage


def test_the_choice_says_spec_and_ran_when_a_newer_one_stood_in() -> None:
    chosen = PythonChoice(wanted="3.10", ran="3.11", source="dataset", why="SWE-bench 4.1.0's spec for pydata/xarray "
                          "0.12", image="codebox-sandbox:latest", link="Debian bookworm, built offline")
    assert chosen.line().startswith("python 3.11 (spec 3.10, ran 3.11: the nearest newer one here): SWE-bench")
    same = chosen.model_copy(update={"wanted": "3.11"})
    assert same.line().startswith("python 3.11: SWE-bench")


def test_requires_python_is_read_from_each_file_and_from_a_commit(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='x', python_requires='>=3.5')\n")
    assert requires_python(in_folder(tmp_path)) == ">=3.5"
    (tmp_path / "setup.cfg").write_text("[options]\npython_requires = >=3.6\n")
    assert requires_python(in_folder(tmp_path)) == ">=3.6"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=3.7"\n')
    assert requires_python(in_folder(tmp_path)) == ">=3.7"
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    (tmp_path / "pyproject.toml").write_text("not toml [")  # the worktree changes; the commit does not
    assert requires_python(at_commit(tmp_path, "HEAD")) == ">=3.7"
    assert requires_python(in_folder(tmp_path)) == ">=3.6"  # an unreadable file says nothing
    assert requires_python(at_commit(tmp_path, "0" * 40)) is None


def test_build_requirements_are_never_older_than_the_python_they_run_on() -> None:
    from agent.env.install.python_era import build_date

    assert build_date("2019-08-03T00:00:00Z", "3.9.2") == "2020-10-05T00:00:00Z"  # setuptools 41 breaks on 3.9
    assert build_date("2021-06-01T00:00:00Z", "3.9.2") == "2021-06-01T00:00:00Z"
    assert build_date(None, "3.9.2") is None  # "now": no limit
    assert build_date("2019-08-03T00:00:00Z", "3.99.0") == "2019-08-03T00:00:00Z"  # a minor of no known date


def test_a_recipe_s_exact_pin_is_taken_whatever_the_date() -> None:
    """SWE-bench's specs pin versions newer than their rows (pytest 5.4's attrs==23.1.0 for a 2020 row)."""
    from agent.env.read.reqlines import parse_requirement
    from agent.env.resolve.resolve import RECIPE_PIP, _pinned_whatever_the_date

    requirements = [parse_requirement("attrs==23.1.0", RECIPE_PIP), parse_requirement("py>=1.5", RECIPE_PIP),
                    parse_requirement("pluggy==0.13.1", "setup.cfg [options] install_requires")]
    assert _pinned_whatever_the_date(requirements) == ["--exclude-newer-package", "attrs=false"]


def test_a_dated_choice_offers_the_older_pythons_out_by_then_before_the_newer_ones() -> None:
    cachetools = want(None, None, ">=3.6", "2021-10-14T04:34:02Z")  # 3.10 ten days old
    assert cachetools.minor == "3.10" and cachetools.alternatives[:5] == ["3.9", "3.8", "3.7", "3.6", "3.11"]
    assert "3.5" not in cachetools.alternatives
    assert want(None, None, None, "2018-10-11T00:00:00Z").alternatives[:3] == ["3.6", "3.8", "3.9"]  # 3.7 wanted
    assert want(None, None, None, "2016-03-01T00:00:00Z").alternatives == []  # 3.5: below 3.6 nothing stands in
    assert want(None, None, None, "2024-05-01T00:00:00Z").alternatives == []  # the default image's
    assert want(None, ("3.10", "a spec"), None, "2021-10-14T00:00:00Z").alternatives == []  # a spec: nearest newer
    older = PythonChoice(wanted="3.10", ran="3.9", source="project", why="w", image="i", link="l")
    assert older.line().startswith("python 3.9 (wanted 3.10, ran 3.9: the newest one here that was out by then)")


def test_the_flags_take_the_first_alternative_a_link_here_has(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from agent.cli.python_flags import PythonFlags
    from agent.containers.host_pythons import HostPython

    monkeypatch.setenv("CODEBOX_HOST_PYTHONS", "0")  # this machine's pyenv would have 3.10
    flags = PythonFlags(argparse.Namespace(python=None, python_images=[], python_pull="no"), lambda _: None)
    dated = want(None, None, ">=3.6", "2021-10-14T04:34:02Z")
    assert flags._here(dated) == "3.9"  # bullseye's, out by then; not bookworm's 3.11 of a year later
    assert flags._here(want(None, ("3.10", "a spec"), None, None)) == "3.10"  # provide() stands 3.11 in
    flags.images.pull = True  # a registry may have the exact one
    assert flags._here(dated) == "3.10"
    flags.images.pull = False
    flags.images.host = True
    flags.images._found = {"3.10": HostPython("3.10", "3.10.13", Path("/opt/py"), "pyenv")}  # found: the exact one
    assert flags._here(dated) == "3.10"


def test_a_commit_s_files_are_read_after_one_listing_of_its_top_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The choice asks for eight files per instance (other ecosystems' manifests, then Python's): git lists the
    commit's top folder once, and only the files it holds are read."""
    from agent.cli.python_flags import not_python
    from agent.env.python import requires

    (tmp_path / "setup.py").write_text("setup(python_requires='>=3.8')\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text('[project]\nrequires-python = ">=3.12"\n')
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    calls: list[tuple[str, ...]] = []
    real = requires.read_git

    def counted(repo: Path, *args: str, timeout_s: float) -> bytes | None:
        calls.append(args)
        return real(repo, *args, timeout_s=timeout_s)

    monkeypatch.setattr(requires, "read_git", counted)
    read = requires.at_commit(tmp_path, "HEAD")
    assert not not_python(read) and requires_python(read) == ">=3.8"
    assert [c[0] for c in calls] == ["ls-tree", "cat-file"] and calls[1][-1] == "HEAD:setup.py"
    assert read("pkg/pyproject.toml") is not None  # below the top folder: asked for, not looked up
    calls.clear()
    gone = requires.at_commit(tmp_path, "0" * 40)  # no listing: every file is asked for, and none is there
    assert gone("setup.py") is None and [c[0] for c in calls] == ["ls-tree", "cat-file"]


def test_a_stand_in_python_moves_the_packages_date_up_to_its_release(tmp_path: Path) -> None:
    """xarray 0.12 (spec 3.10, ran 3.11) at a 2020-07 base: toolz 0.10 of that date cannot be imported on 3.11
    (``'TlzSpec' object has no attribute '_uninitialized_submodules'``), so its packages are as of 3.11's release."""
    from agent.env.install.env_build import EnvBuild
    from agent.env.install.inputs import EnvInputs
    from agent.env.install.plan import Backend
    from agent.env.install.project import Project
    from agent.env.install.request import EnvRequest
    from agent.env.read.declared import Declared
    from agent.env.resolve.resolve import Target
    from agent.protocol import TaskSpec

    chosen = PythonChoice(wanted="3.10", ran="3.11", source="dataset", why="spec")
    task = TaskSpec(goal="g", repo=str(tmp_path), python_choice=chosen)
    assert task.python_stands_in_for == "3.10" and task.python_minor == "3.11"
    assert task.model_copy(update={"python_choice": chosen.model_copy(update={"wanted": "3.11"})}
                           ).python_stands_in_for is None
    assert TaskSpec(goal="g", repo=str(tmp_path)).python_stands_in_for is None

    def date_for(stands_in_for: str | None, as_of: str) -> tuple[str | None, list[str]]:
        build = EnvBuild.__new__(EnvBuild)  # the date step alone: no engine, no probe
        build.request = EnvRequest(repo=tmp_path, as_of=as_of, python="3.11", stands_in_for=stands_in_for)
        build.inputs = EnvInputs(declared=Declared(project=Project()), recipe=build.request.recipe, pip=[],
                                 prefer=[], backend=Backend(), build_requires=[], build=False)
        build.target = Target(python="3.11.2", platform="x86_64-manylinux_2_36")
        build.exclude_newer = as_of
        build.log = lambda _: None
        if stands_in_for:
            build._date_of_the_stand_in()
        return build.exclude_newer, build.inputs.declared.notes

    moved, notes = date_for("3.10", "2020-07-22T14:54:03Z")
    assert moved == f"{versions.RELEASED['3.11']}T00:00:00Z"
    assert notes == [f"packages resolved as of {versions.RELEASED['3.11']}, Python 3.11's release: it stands in for "
                     "3.10, and the task's date 2020-07-22 predates it"]
    assert date_for("3.10", "2023-02-01T00:00:00Z") == ("2023-02-01T00:00:00Z", [])  # a later date stays
    assert date_for(None, "2020-07-22T14:54:03Z") == ("2020-07-22T14:54:03Z", [])  # the spec's own Python: its date
