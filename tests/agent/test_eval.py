"""codebox eval without Docker: predictions files, node ids to JUnit keys, outcomes, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.cli import main
from agent.eval import Prediction, evaluate, junit_key, junit_outcomes, load_predictions, match, node_file
from agent.protocol import TaskSpec
from agent.sandboxes.config import SandboxConfig

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_a" name="test_ok" file="tests/test_a.py"/>
<testcase classname="tests.test_a.TestC" name="test_m[x::y-1]"><failure message="boom"/></testcase>
<testcase classname="tests.test_a" name="test_skip"><skipped/></testcase>
<testcase classname="tests.test_a" name="test_teardown"/>
<testcase classname="tests.test_a" name="test_teardown"><error message="teardown"/></testcase>
</testsuite></testsuites>"""


def test_node_ids_map_to_what_pytest_writes_in_junit_xml() -> None:
    outcomes = junit_outcomes(JUNIT)
    assert outcomes[junit_key("tests/test_a.py::test_ok")] == "passed"
    assert outcomes[junit_key("tests/test_a.py::TestC::test_m[x::y-1]")] == "failed"
    assert outcomes[junit_key("tests/test_a.py::test_skip")] == "skipped"
    assert outcomes[junit_key("tests/test_a.py::test_teardown")] == "error"  # the worse of two entries
    assert junit_key("tests/test_a.py::test_nope") not in outcomes
    assert node_file("tests/test_a.py::TestC::test_m[x::y-1]") == "tests/test_a.py"
    assert node_file("test_m (mod.Class)") is None


def test_predictions_file_problems_are_reported_per_line(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join([
        json.dumps({"instance_id": "a", "model_patch": "diff", "model_name_or_path": "m"}),
        "{not json",
        json.dumps({"model_patch": "x"}),
        json.dumps({"instance_id": "a", "model_patch": "again"}),
        json.dumps({"instance_id": "b", "model_patch": None, "extra": 1}),
        json.dumps({"instance_id": "c", "model_patch": 5}),
    ]) + "\n")
    found, errors = load_predictions(path)
    assert sorted(found) == ["a", "b"] and found["b"].model_patch is None
    assert [e.where for e in errors] == ["p.jsonl line 2", "p.jsonl line 3", "p.jsonl line 4", "p.jsonl line 6"]
    assert "instance_id" in errors[1].message and "duplicate" in errors[2].message
    as_list = tmp_path / "p.json"
    as_list.write_text(json.dumps([{"instance_id": "z", "model_patch": ""}]))
    assert list(load_predictions(as_list)[0]) == ["z"]


def test_match_names_orphans_and_unpredicted_tasks(tmp_path: Path) -> None:
    tasks = [TaskSpec(instance_id=i, repo=str(tmp_path), goal="g") for i in ("a", "b")]
    pairs, orphans, unpredicted = match(tasks, {"a": Prediction(instance_id="a"), "x": Prediction(instance_id="x")})
    assert [t.id for t, _ in pairs] == ["a"] and orphans == ["x"] and unpredicted == ["b"]


def test_instances_that_cannot_be_evaluated_say_why(tmp_path: Path) -> None:
    config = SandboxConfig()
    no_tests = TaskSpec(id="t", repo=str(tmp_path), goal="g")
    assert "names no FAIL_TO_PASS" in (evaluate(no_tests, Prediction(instance_id="t"), config, 10).error or "")
    not_pytest = no_tests.model_copy(update={"FAIL_TO_PASS": ["test_x (mod.Class)"]})
    result = evaluate(not_pytest, Prediction(instance_id="t"), config, 10)
    assert result.status == "error" and "not pytest node ids" in (result.error or "")


def test_cli_eval_refuses_inputs_that_match_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps({"instance_id": "a", "repo": str(tmp_path), "problem_statement": "p"}) + "\n")
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"instance_id": "zzz", "model_patch": ""}) + "\n")
    assert main(["eval", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "'zzz' matches no task" in err and "no prediction" in err
    preds.write_text("nope\n")
    assert main(["eval", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(tmp_path / "o")]) == 2
    assert "p.jsonl line 1" in capsys.readouterr().err
