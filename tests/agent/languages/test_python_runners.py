"""Python's test runners on real output of real runs (runner_logs/): each test's outcome, the dataset's ids in
the runner's form, SWE-bench's test directives, and which runner a repository's rows run with."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.languages.base import TestArgsError
from agent.languages.python.runners import DJANGO, PYTEST, SYMPY, UNITTEST, choose
from agent.languages.python.runners.pytest import repo_parser, rewrite
from agent.languages.python.runners.unittest import label, same_test
from agent.languages.registry import check_test_args, detect, failing_tests

LOGS = Path(__file__).with_name("runner_logs")


def log(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def test_sympy_reads_each_test_by_its_bare_name() -> None:
    found = SYMPY.statuses(log("sympy-1.8-py3.11.txt"))
    assert found["test_convert_to"] == "FAILED" and found["test_str_repr"] == "PASSED"
    assert "test_factor_and_dimension_with_Abs" not in found  # "f": expected to fail, not a pass
    assert found["test_deprecated_quantity_methods"] == "PASSED"  # the file's last test, before its [FAIL] mark
    old = SYMPY.statuses(log("sympy-1.0-py3.9.txt"))
    assert old["test_ccode_Relational"] == old["test_ccode_sinc"] == "FAILED" and len(old) == 32


def test_sympy_failing_names_for_codebox_run() -> None:
    where = "sympy/printing/tests/test_ccode.py"
    assert failing_tests(log("sympy-1.0-py3.9.txt"), ["python3", "bin/test", "-C"]) == [
        f"{where}:test_ccode_Relational", f"{where}:test_ccode_sinc"]


def test_django_reads_descriptions_docstrings_and_late_outcomes() -> None:
    found = DJANGO.statuses(log("django-3.2-py3.9.txt"))
    assert found["test_fails (codebox_runner.tests.OutcomeTests)"] == "FAILED"
    assert found["test_errors (codebox_runner.tests.OutcomeTests)"] == "ERROR"
    assert found["test_skipped (codebox_runner.tests.OutcomeTests)"] == "SKIPPED"
    assert found["test_prints (codebox_runner.tests.OutcomeTests)"] == "PASSED"  # "ok" on the line after its output
    assert found["The first line of a docstring names this test."] == "FAILED"
    assert found["A documented test that passes."] == "PASSED"
    assert found["gettext_lazy objects work when saving model instances"] == "PASSED"  # a system check line between
    assert "test_expected_failure (codebox_runner.tests.OutcomeTests)" not in found
    assert "test_unexpected_success (codebox_runner.tests.OutcomeTests)" not in found
    assert found["setUpClass"] == "ERROR"  # ERROR: setUpClass (...): keyed by its bare name, as SWE-bench's


def test_django_ids_of_python_3_9_and_3_11_are_one_key() -> None:
    old, new = DJANGO.statuses(log("django-3.2-py3.9.txt")), DJANGO.statuses(log("django-3.2-py3.11.txt"))
    assert old == new
    assert DJANGO.key("test_eq (basic.tests.ModelTest.test_eq)") == DJANGO.key("test_eq (basic.tests.ModelTest)")
    assert same_test("Docstring (with parentheses.test)") == "Docstring (with parentheses.test)"


def test_django_runs_swebench_directives() -> None:
    files = ["tests/model_fields/test_jsonfield.py", "tests/model_fields/models.py", "tests/fixtures/data.json",
             "django/test/testcases.py"]
    assert DJANGO.targets([], files) == ["model_fields.test_jsonfield", "model_fields.models", "django.test.testcases"]
    assert DJANGO.targets(["test_x (a.tests.T)", "Some docstring"], []) == ["a.tests.T.test_x"]
    assert DJANGO.command(["a.tests"])[:2] == ["python3", "tests/runtests.py"]
    assert not DJANGO.is_test_id("[100%]") and DJANGO.is_test_id("A docstring's first line.")


def test_unittest_labels() -> None:
    assert label("test_x (pkg.tests.T)") == label("test_x (pkg.tests.T.test_x)") == "pkg.tests.T.test_x"
    assert label("pkg.tests.T.test_x") == "pkg.tests.T.test_x" and label("a docstring") is None
    assert UNITTEST.targets(["test_x (pkg.tests.T)"], []) == ["pkg.tests.T.test_x"]
    assert UNITTEST.targets(["test_x (pkg.tests.T)"], ["pkg/tests.py", "pkg/data.json"]) == ["pkg.tests"]


def _tree(root: Path, *files: str) -> Path:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    return root


def test_a_repository_runs_its_rows_with_its_own_runner(tmp_path: Path) -> None:
    sympy = _tree(tmp_path / "sympy", "bin/test", "sympy/utilities/runtests.py", "conftest.py")
    django = _tree(tmp_path / "django", "tests/runtests.py", "django/__init__.py", "tests/test_sqlite.py")
    plain = _tree(tmp_path / "plain", "pkg/tests.py")
    assert choose(sympy, ["test_Mod"])[0] is SYMPY
    assert choose(sympy, ["sympy/core/tests/test_arit.py::test_Mod"])[0] is PYTEST  # node ids: pytest's rows
    assert choose(django, ["test_x (a.tests.T)", "A docstring."])[0] is DJANGO
    assert choose(plain, ["test_x (pkg.tests.T)"])[0] is UNITTEST
    assert choose(plain, ["[100%]"])[0] is PYTEST
    found = detect(django)
    assert found is not None and found.command[:2] == ["python3", "tests/runtests.py"]
    assert found.evidence == "tests/runtests.py"


def test_a_link_is_no_evidence(tmp_path: Path) -> None:
    real = _tree(tmp_path / "elsewhere", "runtests.py")
    repo = _tree(tmp_path / "repo", "django/__init__.py")
    (repo / "tests").mkdir()
    (repo / "tests" / "runtests.py").symlink_to(real / "runtests.py")
    assert DJANGO.evidence(repo) is None


def test_only_the_runners_own_paths_make_a_command_python_s() -> None:
    from agent.languages.python import own_runner

    assert own_runner(["python3", "./bin/test", "-C"]) and own_runner(["./tests/runtests.py"])
    assert not own_runner(["/usr/bin/test", "-f", "x"]) and not own_runner(["python3", "runtests.py"])


def test_own_runners_take_test_paths_or_labels_only() -> None:
    check_test_args(["python3", "tests/runtests.py"], ["model_fields.test_jsonfield", "basic"])
    check_test_args(["python3", "bin/test"], ["sympy/core/tests/test_arit.py"])
    for bad in (["--settings=evil"], ["../../etc"], ["/abs"]):
        with pytest.raises(TestArgsError):
            check_test_args(["python3", "tests/runtests.py"], bad)


def test_pytest_ids_as_swebench_parsers_rewrite_them_per_repository() -> None:
    options = rewrite(repo_parser("pylint-dev/pylint", None))
    assert options is not None
    assert options("test_functional[/repo/tests/functional/r/recursion_error_3152.py]") == (
        "test_functional[/recursion_error_3152.py]")
    assert options("test_x[//server/share]") == "test_x[//server/share]" and options("test_x[a/b]") == "test_x[a/b]"
    assert options("test_x[/tmp/*.py]") == "test_x[/tmp/*.py]"
    assert rewrite(repo_parser("pallets/flask", None)) is None
    assert rewrite(repo_parser("acme/x", "parse_log_pytest_options")) is not None
    buttons = rewrite(repo_parser("matplotlib/matplotlib", None))
    assert buttons is not None and buttons("test_click[MouseButton.LEFT]") == "test_click[1]"
