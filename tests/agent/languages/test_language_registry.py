"""The language seam: the registry asks each language in turn, and the generic rules hold for any other command."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.env.info import EnvInfo
from agent.languages.base import TestArgsError
from agent.languages.generic import GENERIC
from agent.languages.python import PYTHON
from agent.languages.registry import LANGUAGES, check_test_args, detect, failing_tests, for_command


def test_every_language_has_a_unique_name_and_the_generic_rules_come_last() -> None:
    names = [language.name for language in LANGUAGES]
    assert len(set(names)) == len(names) and GENERIC not in LANGUAGES


def test_a_pytest_repository_is_python_with_its_command_and_evidence(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a(): pass\n")
    found = detect(tmp_path)
    assert found is not None and found.language == "python" and found.missing is None
    assert found.command == ["python3", "-m", "pytest", "-q"] and found.evidence == "tests/test_a.py"


def test_a_lock_without_pytest_says_what_is_missing_and_how_to_mend_it(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("")
    found = detect(tmp_path, EnvInfo(image="env", base_image="base", lock="requests==2.31.0\n"))
    assert found is not None and found.missing is not None and "--pip pytest" in found.missing


def test_a_repository_no_language_claims_has_no_command(tmp_path: Path) -> None:
    (tmp_path / "README").write_text("nothing to test\n")
    assert detect(tmp_path) is None


@pytest.mark.parametrize(("cmd", "language"), [(["python3", "-m", "pytest"], PYTHON), (["pytest", "-x"], PYTHON),
                                               (["make", "test"], GENERIC), (["python3", "-m", "unittest"], PYTHON),
                                               (["python3", "bin/test", "-C"], PYTHON),
                                               (["python3", "tests/runtests.py", "--verbosity", "2"], PYTHON)])
def test_a_command_gets_its_runners_argument_rules(cmd: list[str], language: object) -> None:
    assert for_command(cmd) is language


def test_pytest_options_are_refused_for_a_command_that_is_not_pytest() -> None:
    check_test_args(["python3", "-m", "pytest"], ["-k", "retry"])
    with pytest.raises(TestArgsError, match="not pytest"):
        check_test_args(["make", "test"], ["-k", "retry"])


def test_failing_names_are_read_as_the_commands_language_writes_them() -> None:
    pytest_out = "=== short test summary info ===\nFAILED tests/test_a.py::test_x - boom\n"
    go_out = "--- FAIL: TestAdd (0.00s)\nFAIL\n"
    assert failing_tests(pytest_out, ["python3", "-m", "pytest"]) == ["tests/test_a.py::test_x"]
    assert failing_tests(go_out, ["go", "test", "./..."]) == ["TestAdd"]
    assert failing_tests(go_out) == ["TestAdd"]  # no command: the first language that finds any


@pytest.mark.parametrize(
    ("output", "line"),
    [
        ("ImportError while loading conftest '/repo/tests/conftest.py'.\ntests/conftest.py:9: in <module>\n"
         "    import flask\nE   ModuleNotFoundError: No module named 'flask'\n",
         "ModuleNotFoundError: No module named 'flask'"),
        ("error[E0425]: cannot find value `x` in this scope\n --> src/lib.rs:3:5\n"
         "error: aborting due to 1 previous error\nerror: could not compile `demo` (lib)\n",
         "error[E0425]: cannot find value `x` in this scope"),  # not the summaries after it
        ("goroutine 1 [running]:\npanic: runtime error: index out of range [3] with length 3\n",
         "panic: runtime error: index out of range [3] with length 3"),
        ("Exception in thread \"main\" java.lang.IllegalStateException: boom\n",
         None),  # the exception's name is not at the start of the line: no guess
        ("3 passed, 1 warning in 0.2s\n", None),
    ],
)
def test_the_line_that_says_why_a_run_failed(output: str, line: str | None) -> None:
    from agent.languages.registry import error_line

    assert error_line(output) == line
