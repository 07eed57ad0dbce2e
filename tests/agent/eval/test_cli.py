"""`codebox eval` without Docker: inputs that match nothing, flags that cannot work, an instance that cannot run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.cancel import CancelToken
from agent.cli.parser import main
from agent.eval.instance import evaluate, invalid_task
from agent.eval.job import EvalJob
from agent.eval.predictions import Prediction
from agent.protocol import TaskSpec
from agent.sandboxes.config import SandboxConfig
from tests.agent.eval.repos import calc_repo


def test_inputs_that_match_nothing_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = calc_repo(tmp_path / "repo")
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps({"instance_id": "a", "repo": str(tmp_path / "repo"), "base_commit": base,
                                 "problem_statement": "p", "FAIL_TO_PASS": ["tests/test_mul.py::test_mul"]}) + "\n")
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"instance_id": "zzz", "model_patch": ""}) + "\n")
    assert main(["eval", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "'zzz' matches no instance" in err and "no prediction in" in err
    preds.write_text("nope\n")
    assert main(["eval", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(tmp_path / "o")]) == 2
    assert "p.jsonl line 1" in capsys.readouterr().err
    tasks.write_text("{broken\n")
    assert main(["eval", "--tasks", str(tasks), "--predictions", "gold", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "t.jsonl line 1: not JSON" in err and "has no instance to evaluate" in err


def test_flags_that_cannot_work_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--tasks", "t.jsonl"]) == 2
    assert "eval needs --predictions, --out" in capsys.readouterr().err
    assert main(["eval", "--regrade", str(tmp_path), "--tasks", "t.jsonl"]) == 2
    assert "drop --tasks" in capsys.readouterr().err
    assert main(["eval", "--regrade", str(tmp_path)]) == 2
    assert "not the --out of a codebox eval run" in capsys.readouterr().err
    args = ["eval", "--tasks", "t", "--predictions", "p", "--out", str(tmp_path)]
    assert main([*args, "--jobs", "0"]) == 2 and "--jobs" in capsys.readouterr().err
    assert main([*args, "--filter", "(("]) == 2 and "bad --filter" in capsys.readouterr().err
    assert main([*args, "--repos", str(tmp_path / "nope")]) == 2 and "not a directory" in capsys.readouterr().err
    assert main([*args, "--trust-dataset", str(tmp_path / "other.jsonl")]) == 2
    assert "--trust-dataset" in capsys.readouterr().err  # it names a file of this run, or nothing is trusted


def test_instances_that_cannot_be_evaluated_say_why(tmp_path: Path) -> None:
    no_tests = TaskSpec(id="t", repo=str(tmp_path), goal="g")
    assert "names no FAIL_TO_PASS" in (invalid_task(no_tests) or "")
    no_ids = no_tests.model_copy(update={"FAIL_TO_PASS": ["[100%]"], "PASS_TO_PASS": ["["]})
    job = EvalJob(prediction=Prediction(instance_id="t"), timeout_s=10)
    evidence = evaluate(no_ids, job, SandboxConfig(), tmp_path, CancelToken())
    assert "no test id any runner reads among the named tests: [100%], [" in (evidence.error or "")
    unittest_ids = no_tests.model_copy(update={"FAIL_TO_PASS": ["test_x (mod.Class)"]})
    assert invalid_task(unittest_ids) is None  # unittest's form: graded by the unittest runner


def test_no_docker_is_one_line_before_any_instance_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    base = calc_repo(tmp_path / "repo")
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps({"instance_id": "a", "repo": str(tmp_path / "repo"), "base_commit": base,
                                 "FAIL_TO_PASS": ["tests/test_mul.py::test_mul"], "image": "anything:1"}) + "\n")
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"instance_id": "a", "model_patch": ""}) + "\n")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    assert main(["eval", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("codebox: Docker is not answering") and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_a_tool_server_error_in_the_test_run_is_the_harness_s_not_the_patch_s(tmp_path: Path) -> None:
    """A crash inside codebox's own run_test (outcome 'error') was graded 'unresolved, no report';
    it is an infrastructure error, which --retry-errors runs again."""
    from agent.eval.instance import _Run
    from agent.eval.job import INFRASTRUCTURE, EvalEvidence

    job = EvalJob(prediction=Prediction(instance_id="t"), timeout_s=10)
    run = _Run(TaskSpec(id="t", repo=str(tmp_path), goal="g"), job, EvalEvidence(), CancelToken())
    crash = "internal error in run_test: AttributeError: 'Context' object has no attribute 'root_fd'"
    run._read_run("", "error", crash, {})
    assert run.evidence.error_kind in INFRASTRUCTURE and crash in (run.evidence.error or "")
    assert run.evidence.no_report is None
    failed = _Run(TaskSpec(id="t", repo=str(tmp_path), goal="g"), job, EvalEvidence(), CancelToken())
    failed._read_run("E   ImportError: no module named x\n", "failed", None, {"exit_code": 2})
    assert failed.evidence.error is None and "ImportError" in (failed.evidence.no_report or "")  # the patch's
    # multidict fea968f9 at base: the C extension's SIGSEGV killed pytest before it wrote the bundle
    crashed = _Run(TaskSpec(id="t", repo=str(tmp_path), goal="g"), job, EvalEvidence(), CancelToken())
    output = "killed by SIGSEGV after 1.05 s\n--- stderr (38 bytes) ---\nFatal Python error: Segmentation fault"
    crashed._read_run(output, "failed", "command killed by SIGSEGV",
                      {"exit_code": None, "signal": "SIGSEGV",
                       "report_file_error": "/tmp/codebox-eval-bundle.txt: No such file or directory"})
    assert crashed.evidence.no_report == ("pytest wrote no report (killed by SIGSEGV): "
                                          "Fatal Python error: Segmentation fault")
