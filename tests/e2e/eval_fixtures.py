"""The fixture project of the eval e2e and parity tests, its fix and its instances: one instance per grading rule."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.agent.eval.repos import diff_of, make_repo

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
MISC = '''import pytest


@pytest.mark.skip(reason="not here")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


@pytest.mark.xfail(reason="known")
def test_xpass():
    pass


@pytest.fixture
def broken():
    yield
    raise RuntimeError("teardown")


def test_teardown_error(broken):
    pass


@pytest.mark.parametrize("v", ["a b", "a c"])
def test_p(v):
    assert v.startswith("a")
'''
TEST_MUL = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
TEST_ADD = ("import pytest\nfrom calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
            "@pytest.mark.parametrize('x', [1, 2])\ndef test_add_zero(x):\n    assert add(x, 0) == x\n")
SPOOF_CONFTEST = '''import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
'''
EXIT_3_CONFTEST = "def pytest_sessionfinish(session):\n    session.exitstatus = 3\n"
F2P = ["tests/test_add.py::test_add"]
P2P = ["tests/test_mul.py::test_mul", "tests/test_add.py::test_add_zero[1]"]


@dataclass
class Case:
    """One instance: its patch, its tests, and codebox's expected status."""

    patch: str
    expected: str
    f2p: list[str] = field(default_factory=lambda: list(F2P))
    p2p: list[str] = field(default_factory=lambda: list(P2P))
    eval_type: str = "pass_and_fail"
    flagged: bool = False


def build(root: Path) -> tuple[str, str, dict[str, Case]]:
    """The project at ``root`` (acme/calc under a --repos folder); its base commit, test_patch and cases."""
    base = make_repo(root, {"calc.py": CALC, "tests/__init__.py": "", "tests/test_mul.py": TEST_MUL,
                            "tests/test_misc.py": MISC})
    gold = diff_of(root, {"calc.py": CALC.replace("a - b", "a + b")})
    wrong = diff_of(root, {"calc.py": CALC.replace("a * b", "b * a")})
    test_patch = diff_of(root, {"tests/test_add.py": TEST_ADD, "tests/test_mul.py": TEST_MUL + "\n\ndef test_one():\n"
                                "    assert mul(1, 1) == 1\n"})
    fixed = CALC.replace("a - b", "a + b")
    edits_tests = diff_of(root, {"calc.py": fixed, "tests/test_mul.py": "def test_mul():\n    assert 0\n"})
    misc = "tests/test_misc.py::"
    cases = {
        "gold": Case(gold, "resolved"),
        "wrong": Case(wrong, "unresolved"),
        "empty": Case("", "unresolved"),
        "xfail_passes": Case(gold, "resolved", p2p=[*P2P, misc + "test_xfail"]),
        "skip_maintained": Case(gold, "resolved", p2p=[*P2P, misc + "test_skipped"]),
        "skip_is_no_fix": Case(gold, "unresolved", f2p=[*F2P, misc + "test_skipped"]),
        "xpass_fails": Case(gold, "unresolved", p2p=[*P2P, misc + "test_xpass"]),
        "teardown_error": Case(gold, "unresolved", p2p=[*P2P, misc + "test_teardown_error"]),
        "test_file_reset": Case(edits_tests, "resolved", flagged=True),
        "fuzz": Case(gold.replace(" def add(a, b):", " def add(a,  b):"), "resolved"),
        "cut_id": Case(gold, "resolved", p2p=[*P2P, misc + "test_p[a"]),
        "fail_only": Case(wrong, "resolved", f2p=[misc + "test_teardown_error", "tests/test_add.py::test_nothing"],
                          eval_type="fail_only"),
        "exit_status": Case(diff_of(root, {"calc.py": fixed, "conftest.py": EXIT_3_CONFTEST}), "unresolved",
                            flagged=True),
        "collection": Case(diff_of(root, {"calc.py": "def add(a, b:\n"}), "unresolved"),
        "minversion": Case(diff_of(root, {"calc.py": fixed, "pytest.ini": "[pytest]\nminversion = 99\n"}),
                           "unresolved", flagged=True),
        "spoof": Case(diff_of(root, {"tests/conftest.py": SPOOF_CONFTEST}), "resolved", flagged=True),
        "broken": Case("this is not a diff", "patch_failed"),
        # pytest's rootdir is tests/ (rich's tests/pytest.ini): JUnit names test_add, the summary (and
        # so SWE-bench's ids) tests/test_add.py::test_add; codebox found none of the named tests
        "rootdir": Case(diff_of(root, {"calc.py": fixed, "tests/pytest.ini": "[pytest]\n"}), "resolved",
                        p2p=[*P2P, misc + "test_skipped"], flagged=True),
    }
    return base, test_patch, cases


def dataset_line(iid: str, case: Case, base: str, test_patch: str, repo: str = "acme/calc") -> dict[str, Any]:
    """A SWE-bench 5.x line (JSON-encoded test lists, as the data sets ship them)."""
    return {"repo": repo, "instance_id": iid, "base_commit": base, "patch": "", "test_patch": test_patch,
            "problem_statement": "add subtracts", "version": "1.0", "FAIL_TO_PASS": json.dumps(case.f2p),
            "PASS_TO_PASS": json.dumps(case.p2p), "eval_type": case.eval_type, "log_parser": "parse_log_pytest",
            "created_at": "2024-01-01T00:00:00Z", "environment_setup_commit": base}


def write_inputs(folder: Path, base: str, test_patch: str, cases: dict[str, Case]) -> tuple[Path, Path]:
    tasks, preds = folder / "dataset.jsonl", folder / "preds.jsonl"
    tasks.write_text("".join(json.dumps(dataset_line(i, c, base, test_patch)) + "\n" for i, c in cases.items()))
    preds.write_text("".join(json.dumps({"instance_id": i, "model_name_or_path": "acme/model-1",
                                         "model_patch": c.patch}) + "\n" for i, c in cases.items()))
    return tasks, preds
