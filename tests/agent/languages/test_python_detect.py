"""Which repositories show pytest (agent.languages.python.detect): read, never run, and never hung by a hostile file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.languages.python.detect import lock_has_pytest, pytest_evidence


def write(repo: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return repo


@pytest.mark.parametrize(
    ("files", "evidence"),
    [
        ({"pytest.ini": "[pytest]\n"}, "pytest.ini"),
        ({"pyproject.toml": "[project]\nname = 'x'\n\n[tool.pytest.ini_options]\naddopts = '-q'\n"},
         "pyproject.toml [tool.pytest]"),
        ({"setup.cfg": "[metadata]\nname = x\n[tool:pytest]\ntestpaths = t\n"}, "setup.cfg [tool:pytest]"),
        ({"tox.ini": "[tox]\nenvlist = py3\n[pytest]\n"}, "tox.ini [pytest]"),
        ({"conftest.py": ""}, "conftest.py"),
        ({"tests/conftest.py": "", "tests/test_a.py": ""}, "tests/conftest.py"),
        ({"tests/unit/test_calc.py": ""}, "tests/unit/test_calc.py"),
        ({"test/calc_test.py": ""}, "test/calc_test.py"),
        ({"test_calc.py": "", "calc.py": ""}, "test_calc.py"),
        ({"simplejson/__init__.py": "", "simplejson/tests/test_dump.py": ""}, "simplejson/tests/test_dump.py"),
        ({"src/pkg/__init__.py": "", "src/pkg/tests/unit/test_x.py": ""}, "src/pkg/tests/unit/test_x.py"),
    ],
)
def test_pytest_shows_in_settings_conftests_and_test_modules(
    tmp_path: Path, files: dict[str, str], evidence: str
) -> None:
    assert pytest_evidence(write(tmp_path, files)) == evidence


@pytest.mark.parametrize(
    "files",
    [
        {},
        {"calc.py": "", "README.md": "run the tests with pytest"},
        {"pyproject.toml": "[project]\nname = 'x'\n# [tool.pytest.ini_options] is not here\n"},
        {"setup.cfg": "[flake8]\n", "tox.ini": "[tox]\n", "docs/test_conf.py": ""},
        {"tests/helpers.py": "", "tests/a/b/c/test_deep.py": ""},  # deeper than two levels: not searched
    ],
)
def test_a_repository_that_shows_no_pytest_gets_none(tmp_path: Path, files: dict[str, str]) -> None:
    assert pytest_evidence(write(tmp_path, files)) is None


def test_hostile_files_are_neither_read_whole_nor_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pytest.ini")  # reading a FIFO would block for ever
    (tmp_path / "pyproject.toml").write_text("#" * (2 << 20) + "\n[tool.pytest.ini_options]\n")  # over the cap
    (tmp_path / "setup.cfg").symlink_to("/dev/zero")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    write(outside, {"test_elsewhere.py": "", "pytest.ini": "[pytest]\n"})
    os.symlink(outside, tmp_path / "tests")  # a folder outside the repository is not searched
    (tmp_path / "tox.ini").symlink_to(outside / "pytest.ini")
    assert pytest_evidence(tmp_path) is None


def test_a_lock_installs_pytest_or_not() -> None:
    assert lock_has_pytest("iniconfig==2.0.0 --hash=sha256:aa\npytest==8.3.4 --hash=sha256:bb\n")
    assert lock_has_pytest("PyTest == 7.4.0\n")
    assert not lock_has_pytest("pytest-cov==5.0.0\npytest_mock==3.14.0\nhypothesis==6.0.0\n")


def test_a_task_takes_pytest_only_where_the_environment_has_it(tmp_path: Path) -> None:
    from agent.env.info import EnvInfo
    from agent.task.found_tests import find_tests, given, tests_line

    def env(lock: str) -> EnvInfo:
        return EnvInfo(image="env", base_image="base", lock=lock)


    repo = write(tmp_path / "repo", {"tests/test_\x1b[31mred.py": ""})
    found = find_tests(repo, None)
    assert found.command == ["python3", "-m", "pytest", "-q"] and found.missing is None
    line = tests_line(found, "--test-cmd to change")
    assert line is not None and line.startswith("python3 -m pytest -q (found tests/test_") and "\x1b" not in line
    assert line.endswith("; --test-cmd to change)")
    assert find_tests(repo, env("pytest==8.3.4 --hash=sha256:aa\n")).command
    assert find_tests(repo, env("")).command  # an image's environment: no lock to read
    without = find_tests(repo, env("attrs==24.2.0 --hash=sha256:aa\n"))
    assert without.command == [] and without.missing and "does not install pytest: --pip pytest" in without.missing
    message = without.no_tests_message()  # what run_test answers: the reason, not "no test command configured"
    assert message is not None and message.startswith("No test command: tests/test_") and "\x1b" not in message
    plain = find_tests(write(tmp_path / "plain", {"calc.py": ""}), None)
    assert plain.command == [] and tests_line(plain, "x") is None
    assert (plain.no_tests_message() or "").startswith("No test command: the task names none and the repository")
    assert given([]).no_tests_message() is None  # nothing looked for: run_test's own message


def test_run_says_the_test_command_it_found_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agent.cli.commands.run import _say_found_tests
    from agent.task.found_tests import find_tests

    repo = write(tmp_path / "repo", {"tests/test_a.py": ""})
    _say_found_tests(quiet=False)(find_tests(repo, None))
    said = capsys.readouterr().err
    assert said == "codebox: tests: python3 -m pytest -q (found tests/test_a.py; --test-cmd to change)\n"
    _say_found_tests(quiet=True)(find_tests(repo, None))
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("files", "command"),
    [
        ({"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-q\"\ntestpaths = [\"tests\"]\n"},
         ["python3", "-m", "pytest"]),  # cleo: ours too would be -qq, and pytest prints no counts
        ({"pyproject.toml": "[tool.pytest.ini_options]\naddopts = [\"--strict-markers\", \"--quiet\"]\n"},
         ["python3", "-m", "pytest"]),
        ({"pytest.ini": "[pytest]\naddopts=\n\t--doctest-modules\n\t-q\nfilterwarnings=\n\tdefault\n"},
         ["python3", "-m", "pytest"]),
        ({"pytest.ini": "[pytest]\naddopts = --doctest-modules --quiet-ish\n"}, ["python3", "-m", "pytest", "-q"]),
        ({"setup.cfg": "[tool:pytest]\ntestpaths = t\n[other]\naddopts = -q\n"}, ["python3", "-m", "pytest", "-q"]),
        ({"tests/test_a.py": ""}, ["python3", "-m", "pytest", "-q"]),
    ],
)
def test_the_command_gives_no_second_quiet(tmp_path: Path, files: dict[str, str], command: list[str]) -> None:
    from agent.languages.python.detect import pytest_command

    assert pytest_command(write(tmp_path / "repo", files)) == command

