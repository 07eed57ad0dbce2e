"""`codebox eval` on two rows of one version: their dependencies are read at the version's environment_setup_commit
(one environment, shared), and each row is validated on its own: the candidate that passes one row's PASS_TO_PASS
and fails the other's is kept for the first, the next one for the second, and the second row's notes say so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.cli.parser import main
from tests.agent.eval.repos import diff_of, make_repo
from tests.e2e.installed_wheels import two_betas_offline
from tests.repos import sh

pytestmark = pytest.mark.docker

SRC = "import beta\n\n\ndef add(a, b):\n    return a - b\n"
ANY_BETA = "import beta\n\n\ndef test_import():\n    assert beta.VALUE\n"
NEW_BETA = "import beta\n\n\ndef test_beta():\n    assert beta.VALUE == 'beta'\n"
NEW_TEST = "from valpkg import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"


def test_rows_of_a_version_share_the_setup_commits_environment_and_each_gets_its_best_candidate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    two_betas_offline(tmp_path, monkeypatch)
    repo = tmp_path / "repos" / "acme__valpkg"
    # The base declares no pin; the version's setup commit (later) pins beta 1.0 in its test requirements.
    base = make_repo(repo, {"pyproject.toml": '[project]\nname = "valpkg"\nversion = "1.0"\ndependencies = ["beta"]\n',
                            "requirements-test.txt": "pytest\n", "src/valpkg/__init__.py": SRC,
                            "tests/test_any.py": ANY_BETA, "tests/test_new_beta.py": NEW_BETA})
    (repo / "requirements-test.txt").write_text("beta==1.0\npytest\n")
    sh("git", "commit", "-qam", "pin beta for the tests", cwd=repo)
    setup = sh("git", "rev-parse", "HEAD", cwd=repo)
    sh("git", "checkout", "-q", base, cwd=repo)
    gold = diff_of(repo, {"src/valpkg/__init__.py": SRC.replace("a - b", "a + b")})
    test_patch = diff_of(repo, {"tests/test_new.py": NEW_TEST})
    common = {"repo": "acme/valpkg", "base_commit": base, "test_patch": test_patch, "version": "1.0",
              "environment_setup_commit": setup, "FAIL_TO_PASS": ["tests/test_new.py::test_add"]}
    rows = [{"instance_id": "acme__valpkg-1", **common, "PASS_TO_PASS": ["tests/test_any.py::test_import"]},
            {"instance_id": "acme__valpkg-2", **common, "PASS_TO_PASS": ["tests/test_new_beta.py::test_beta"]}]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "p.jsonl").write_text("".join(json.dumps({"instance_id": r["instance_id"], "model_patch": gold})
                                              + "\n" for r in rows))
    out = tmp_path / "out"
    code = main(["eval", "--tasks", str(tmp_path / "d.jsonl"), "--predictions", str(tmp_path / "p.jsonl"),
                 "--out", str(out), "--repos", str(tmp_path / "repos"), "--jobs", "1"])
    first: dict[str, Any] = json.loads((out / "acme__valpkg-1" / "eval.json").read_text())
    second: dict[str, Any] = json.loads((out / "acme__valpkg-2" / "eval.json").read_text())
    try:
        assert code == 0 and first["status"] == second["status"] == "resolved", (first["notes"], second["notes"])
        # Row 1: the setup commit's pin (read there, not at the base) passes its PASS_TO_PASS.
        assert "beta==1.0" in first["env"]["installed"] and first["env"]["candidate"] == 1
        assert any(n.startswith(f"dependencies declared at environment_setup_commit {setup[:10]}")
                   for n in first["env"]["notes"]), first["env"]["notes"]
        # Row 2: the same candidate fails its PASS_TO_PASS; the next (the project's own dependencies) passes.
        assert "beta==2.0" in second["env"]["installed"] and second["env"]["candidate"] == 2
        split = [n for n in second["notes"] if n.startswith("rows of version 1.0 differ")]
        assert split == ["rows of version 1.0 differ: candidate 1 passes acme__valpkg-1's PASS_TO_PASS and fails "
                         "acme__valpkg-2's (1 failing); acme__valpkg-1 uses candidate 1, this row candidate 2 (each "
                         "row gets the best candidate for it)"], second["notes"]
        summary = json.loads((out / "results.json").read_text())["environment"]
        assert summary["acme__valpkg-1"] == "candidate 1 of 2"
        assert summary["acme__valpkg-2"] == f"candidate 2 of 2; {split[0]}"
    finally:  # the images this test built, through codebox's own record
        from agent.env.install import images

        for tag in {e.tag for e in images.entries() if e.kind == "env" and e.repo == str(repo)}:
            main(["env", "rm", tag])
