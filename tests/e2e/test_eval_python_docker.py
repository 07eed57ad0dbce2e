"""`codebox eval` with a Python per instance: the dataset's spec (a --specs file, relative to here) asks for one, the
nearest newer one runs and the results say so; a recipes file's python; a version nobody has is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.cli.parser import main
from tests.agent.eval.repos import diff_of, make_repo

pytestmark = pytest.mark.docker
TEST = ("import sys\nfrom calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
        "def test_python():\n    print(sys.version_info[:2])\n")


def _inputs(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repos" / "acme" / "old"
    base = make_repo(repo, {"calc.py": "def add(a, b):\n    return a - b\n", "tests/test_calc.py": TEST})
    gold = diff_of(repo, {"calc.py": "def add(a, b):\n    return a + b\n"})
    rows = [{"repo": "acme/old", "instance_id": f"acme__old-{n}", "base_commit": base, "version": version,
             "created_at": "2024-06-01T00:00:00Z", "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
             "PASS_TO_PASS": ["tests/test_calc.py::test_python"], "test_patch": "", "patch": gold}
            for n, version in ((1, "1.0"), (2, "2.0"))]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "specs.json").write_text(json.dumps({"acme/old": {"1.0": {"python": "3.8"}}}))
    (tmp_path / "wheels").mkdir()
    return tmp_path / "d.jsonl", tmp_path / "out"


def _result(out: Path, iid: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / iid / "eval.json").read_text())
    return data


def test_the_spec_s_python_or_its_nearest_newer_runs_and_is_recorded(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    tasks, out = _inputs(tmp_path)
    monkeypatch.chdir(tmp_path)  # --specs, --recipes and --find-links relative to here
    (tmp_path / "recipes.json").write_text(json.dumps({"acme/old": {"versions": {"2.0": {"python": "3.9"}}}}))
    assert main(["eval", "--tasks", str(tasks), "--predictions", "gold", "--out", "out", "--repos", "repos",
                 "--specs", "specs.json", "--recipes", "recipes.json", "--find-links", "wheels", "--jobs", "1"]) == 0
    spec = _result(out, "acme__old-1")
    assert spec["status"] == "resolved", spec["error"]
    assert spec["python"]["wanted"] == "3.8" and spec["python"]["ran"] == "3.9"
    assert spec["python"]["source"] == "dataset" and spec["python"]["image"] == "codebox-sandbox:py3.9"
    recipe = _result(out, "acme__old-2")
    assert recipe["status"] == "resolved", recipe["error"]
    assert (recipe["python"]["ran"], recipe["python"]["source"]) == ("3.9", "recipe")
    lines = json.loads((out / "results.json").read_text())["python"]
    assert lines["acme__old-1"].startswith("python 3.9 (spec 3.8, ran 3.9: the nearest newer one here): --specs "
                                           "specs.json's spec for acme/old 1.0; from Debian bullseye")


def test_a_python_nobody_has_is_one_line_naming_the_links_tried(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    tasks, out = _inputs(tmp_path)
    assert main(["eval", "--tasks", str(tasks), "--predictions", "gold", "--out", str(out), "--repos",
                 str(tmp_path / "repos"), "--specs", "none", "--python", "2.7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("codebox: no Python 2.7 here: tried registered image for 2.7 (none); Debian suite")
    assert not out.exists()


def test_run_on_an_old_project_gets_the_python_of_its_day_and_its_report_says_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "old"
    files = {"setup.cfg": "[options]\npython_requires = >=3.6\n",
             "check.py": "import sys\nsys.exit(0 if sys.version_info[:2] == (3, 9) else 3)\n"}
    make_repo(repo, files)  # committed now: HEAD's date is today's, so the date is given
    script = tmp_path / "script.json"
    call = {"name": "run_test", "arguments": {}}  # the --test-cmd
    script.write_text(json.dumps({"turns": [{"tool_calls": [call]}, {"message": "done"}]}))
    report = tmp_path / "report.json"
    assert main(["run", "look", "--repo", str(repo), "--model", f"scripted:{script}", "--as-of", "2021-03-01",
                 "--env", "none",
                 "--test-cmd", "python3 check.py", "--report", str(report), "--quiet", "--no-diff"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("codebox: python ")]
    assert said == ["codebox: python 3.9: the Python current on 2021-03-01 (requires-python '>=3.6'); from Debian "
                    "bullseye, built offline (codebox-sandbox:py3.9)"]
    data = json.loads(report.read_text())
    assert data["python"]["ran"] == "3.9" and data["python"]["source"] == "project", data
    assert data["last_test"]["exit_code"] == 0  # the tools ran on 3.9
