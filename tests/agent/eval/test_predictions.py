"""Predictions as SWE-bench takes them: JSONL, a JSON list, SWE-agent's object by id, one object, `gold`."""

from __future__ import annotations

import json
from pathlib import Path

from agent.eval.predictions import Prediction, gold_predictions, load_predictions, match


def test_every_bad_line_is_named_and_the_rest_load(tmp_path: Path) -> None:
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
    assert sorted(found) == ["a"]
    assert [e.where for e in errors] == ["p.jsonl line 2", "p.jsonl line 3", "p.jsonl line 4", "p.jsonl line 5",
                                         "p.jsonl line 6"]
    assert "instance_id" in errors[1].message and "duplicate" in errors[2].message
    assert "'extra'" in errors[3].message and "--trust-dataset" in errors[3].message
    trusted, errors = load_predictions(path, trusted=True)  # the user named the file: its other keys pass, ignored
    assert sorted(trusted) == ["a", "b"] and trusted["b"].model_patch is None and trusted["b"].empty
    assert [e.where for e in errors] == ["p.jsonl line 2", "p.jsonl line 3", "p.jsonl line 4", "p.jsonl line 6"]


def test_json_list_object_by_id_and_a_single_object(tmp_path: Path) -> None:
    as_list = tmp_path / "l.json"
    as_list.write_text(json.dumps([{"instance_id": "z", "model_patch": ""}, {"instance_id": "y"}]))
    assert list(load_predictions(as_list)[0]) == ["z", "y"]
    by_id = tmp_path / "d.json"  # SWE-agent's preds.json
    by_id.write_text(json.dumps({"z": {"instance_id": "z", "model_patch": "d"}, "w": {"instance_id": "w"}}))
    assert list(load_predictions(by_id)[0]) == ["z", "w"]
    one = tmp_path / "one.jsonl"  # a JSONL file of one line is one JSON object too
    one.write_text(json.dumps({"instance_id": "x", "model_patch": "d"}) + "\n")
    assert list(load_predictions(one)[0]) == ["x"]
    bad = tmp_path / "bad.json"
    bad.write_text("[42]")
    [error] = load_predictions(bad)[1]
    assert str(error) == "bad.json item 1: a prediction is a JSON object (instance_id, model_patch, ...)"


def test_gold_and_matching() -> None:
    gold = gold_predictions({"a": "diff", "b": None})
    assert gold["a"].model_patch == "diff" and gold["a"].model_name_or_path == "gold" and gold["b"].empty
    paired, orphans, unpredicted = match(["a", "b", "c"], {"a": Prediction(instance_id="a"),
                                                          "x": Prediction(instance_id="x")})
    assert paired == ["a"] and orphans == ["x"] and unpredicted == ["b", "c"]
