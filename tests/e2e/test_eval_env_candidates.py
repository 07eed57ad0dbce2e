"""`codebox eval` validates its environment as SWE-bench validated its rows: at the base commit with the test_patch,
the PASS_TO_PASS must pass; a candidate environment where they do not is dropped for the next one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.cli.parser import main
from tests.agent.eval.repos import diff_of, make_repo
from tests.e2e.installed_wheels import two_betas_offline

pytestmark = pytest.mark.docker

SRC = "import beta\n\n\ndef add(a, b):\n    return a - b\n"
OLD_TESTS = "import beta\n\n\ndef test_beta():\n    assert beta.VALUE == 'beta'\n"
NEW_TEST = "from valpkg import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"


def test_a_candidate_that_fails_pass_to_pass_at_base_is_dropped_for_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first candidate (a pinned test file: beta 1.0) resolves and installs, but its beta is not the one the
    tests know: PASS_TO_PASS fails at base. The next (the project's own dependencies: beta 2.0) passes; the gold
    patch is graded in it."""
    two_betas_offline(tmp_path, monkeypatch)
    repo = tmp_path / "repos" / "acme__valpkg"
    base = make_repo(repo, {"pyproject.toml": '[project]\nname = "valpkg"\nversion = "1.0"\ndependencies = ["beta"]\n',
                            "requirements-test.txt": "beta==1.0\npytest\n", "src/valpkg/__init__.py": SRC,
                            "tests/test_old.py": OLD_TESTS})
    gold = diff_of(repo, {"src/valpkg/__init__.py": SRC.replace("a - b", "a + b")})
    test_patch = diff_of(repo, {"tests/test_new.py": NEW_TEST})
    row = {"instance_id": "acme__valpkg-1", "repo": "acme/valpkg", "base_commit": base, "test_patch": test_patch,
           "FAIL_TO_PASS": ["tests/test_new.py::test_add"], "PASS_TO_PASS": ["tests/test_old.py::test_beta"]}
    (tmp_path / "d.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "p.jsonl").write_text(json.dumps({"instance_id": row["instance_id"], "model_patch": gold}) + "\n")
    out = tmp_path / "out"
    code = main(["eval", "--tasks", str(tmp_path / "d.jsonl"), "--predictions", str(tmp_path / "p.jsonl"),
                 "--out", str(out), "--repos", str(tmp_path / "repos")])
    result: dict[str, Any] = json.loads((out / row["instance_id"] / "eval.json").read_text())
    try:
        assert code == 0 and result["status"] == "resolved", (result["error"], result["notes"])
        assert "beta==2.0" in result["env"]["installed"] and result["env"]["candidate"] == 2
        notes = result["notes"]
        assert any(n.startswith("environment candidate 1 of 2 (requirements-test.txt): 1 of 1 PASS_TO_PASS fail "
                                "at base with the test_patch (first: tests/test_old.py::test_beta)") for n in notes)
        assert any(n.startswith("environment candidate 2 of 2 (the project's own dependencies): the PASS_TO_PASS "
                                "pass") for n in notes), notes
    finally:  # the images this test built (both candidates'), through codebox's own record
        from agent.env.install import images

        for tag in {e.tag for e in images.entries() if e.kind == "env" and e.repo == str(repo)}:
            main(["env", "rm", tag])
