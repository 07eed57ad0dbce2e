"""`codebox eval` with Python's other runners, as SWE-bench runs and reads them, in real containers: Django's own
tests/runtests.py (the 3.2 sdist from the package index), plain unittest, and pytest ids that SWE-bench's pylint
parser rewrites; the `swebench` package's own parser and grading judge the kept logs and agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.cli.parser import main
from agent.eval.store import read_log
from tests.e2e.eval_fixtures import Case, dataset_line
from tests.e2e.runner_fixtures import deps_dockerfile, django_downloads, django_repo, pylint_repo, unittest_repo
from tests.e2e.swebench_referee import Referee, referee_or_skip
from tests.engine import build, docker, image_id

pytestmark = pytest.mark.docker

# repo -> SWE-bench's parser for it (the referee's choice, as its MAP_REPO_TO_PARSER_PY makes it)
PARSERS = {"django/django": "parse_log_django", "acme/plain": "parse_log_django",
           "pylint-dev/pylint": "parse_log_pylint"}
NO_IDS = ("[100%]", "[")  # a shipped row's junk entries: codebox grades the rest (with a note)
ONLY_CODEBOX_READS = {"dj_py39_ids"}  # Python 3.9's ids on 3.11's output: codebox reads them as one test, SWE-bench not


@pytest.fixture(scope="module")
def referee() -> Referee:
    return referee_or_skip()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[str, Case]]]:
    folder = tmp_path_factory.mktemp("runners")
    downloads = django_downloads()
    wheels = sorted(p.name for p in downloads.glob("*.whl"))
    image = "codebox-test-django-deps:" + str(abs(hash(tuple(wheels))) % 10**12)
    if image_id(docker(), image) is None:
        build(docker(), deps_dockerfile(downloads, folder / "image"), image)
    repos = folder / "repos"
    projects = {"django/django": django_repo(downloads, repos / "django" / "django"),
                "acme/plain": unittest_repo(repos / "acme" / "plain"),
                "pylint-dev/pylint": pylint_repo(repos / "pylint-dev" / "pylint")}
    cases: dict[str, tuple[str, Case]] = {}
    lines, preds = [], []
    for repo, (base, test_patch, repo_cases) in projects.items():
        for iid, case in repo_cases.items():
            cases[iid] = (repo, case)
            line = dataset_line(iid, case, base, test_patch, repo=repo)
            lines.append(json.dumps({**line, "log_parser": PARSERS[repo]}))
            preds.append(json.dumps({"instance_id": iid, "model_name_or_path": "m", "model_patch": case.patch}))
    (folder / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "preds.jsonl").write_text("\n".join(preds) + "\n")
    code = main(["eval", "--tasks", str(folder / "tasks.jsonl"), "--predictions", str(folder / "preds.jsonl"),
                 "--out", str(folder / "out"), "--repos", str(repos), "--jobs", "2", "--env", image])
    assert code == 0
    return folder / "out", cases


def verdict(out: Path, iid: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((out / iid / "eval.json").read_text())
    return result


def test_each_repository_runs_with_its_runner_and_is_judged_as_expected(
        run: tuple[Path, dict[str, tuple[str, Case]]]) -> None:
    out, cases = run
    for iid, (_repo, case) in cases.items():
        result = verdict(out, iid)
        assert result["status"] == case.expected, (iid, result["error"], result["fail_to_pass"], result["notes"])
    runners = {iid: verdict(out, iid)["runner"] for iid in cases}
    assert {runners[i] for i in ("dj_gold", "dj_junk")} == {"django"} and runners["ut_gold"] == "unittest"
    assert runners["pl_gold"] == "pytest"
    gold = verdict(out, "dj_gold")
    assert gold["test_command"] == ["python3", "tests/runtests.py", "--verbosity", "2", "--settings=test_sqlite",
                                    "--parallel", "1", "calc_tests.__init__", "calc_tests.tests"]
    assert gold["pass_to_pass"]["test_later (calc_tests.tests.CalcTests.test_later)"] == "skipped"
    junk = verdict(out, "dj_junk")
    assert junk["pass_to_pass"]["[100%]"] == "not_a_test" and any("'[100%]', '['" in n for n in junk["verdict_notes"])
    assert verdict(out, "ut_wrong")["pass_to_pass"] == {"test_mul (tests.test_calc.AddTests.test_mul)": "failed"}


def test_a_regrade_reads_the_kept_logs_the_same(run: tuple[Path, dict[str, tuple[str, Case]]]) -> None:
    out, cases = run
    before = {iid: verdict(out, iid)["tests_status"] for iid in cases}
    assert main(["eval", "--regrade", str(out)]) == 0
    assert {iid: verdict(out, iid)["tests_status"] for iid in cases} == before


def test_swebench_grades_the_kept_logs_the_same(run: tuple[Path, dict[str, tuple[str, Case]]], referee: Referee,
                                                tmp_path: Path) -> None:
    out, cases = run
    disagreements: list[str] = []
    for iid, (repo, case) in cases.items():
        if iid in ONLY_CODEBOX_READS:
            continue
        result = verdict(out, iid)
        log_path = tmp_path / f"{iid}.txt"
        log_path.write_text(read_log(out / iid) or "")
        f2p, p2p = ([t for t in tests if t not in NO_IDS] for tests in (case.f2p, case.p2p))
        theirs = referee.grade(iid, f2p, p2p, case.eval_type, case.patch or "empty", log_path, repo=repo,
                               log_parser=PARSERS[repo])
        if theirs["resolved"] != (result["resolution"] == "RESOLVED_FULL"):
            disagreements.append(f"{iid}: swebench resolved={theirs['resolved']}, codebox {result['resolution']}")
        for label in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            for side in ("success", "failure"):
                mine = sorted(result["tests_status"].get(label, {}).get(side, []))
                their = sorted(theirs.get("tests_status", {}).get(label, {}).get(side, []))
                if mine != their:
                    disagreements.append(f"{iid} {label} {side}: swebench {their}, codebox {mine}")
    assert disagreements == []
