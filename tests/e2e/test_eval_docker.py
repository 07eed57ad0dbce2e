"""`codebox eval` as a user runs it, with real containers: a dataset file with owner/name repositories and
--repos, the environments of batch, resume, a regrade of a kept run, a flagged conftest, errors that name their
cause, the repository under test never shadowed by the image's own copy of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent.cli.parser import main
from tests.agent.eval.repos import diff_of, make_repo
from tests.e2e.eval_fixtures import CALC, build, dataset_line, write_inputs
from tests.e2e.installed_wheels import pytest_wheelhouse
from tests.repos import fingerprint, sh

pytestmark = pytest.mark.docker


def evaluate(*args: str) -> int:
    return main(["eval", "--jobs", "2", *args])


def verdict(out: Path, iid: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((out / iid / "eval.json").read_text())
    return result


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str, str, dict[str, Any]]:
    repos = tmp_path / "repos"
    base, test_patch, cases = build(repos / "acme" / "calc")
    return repos, base, test_patch, {k: cases[k] for k in ("gold", "wrong", "empty", "spoof", "broken", "minversion")}


def test_a_dataset_with_owner_name_repos_a_regrade_and_a_flagged_conftest(
        tmp_path: Path, project: tuple[Path, str, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    repos, base, test_patch, cases = project
    sh("git", "clone", "-q", "--mirror", str(repos / "acme" / "calc"), str(repos / "acme__mirror"), cwd=tmp_path)
    tasks, preds = write_inputs(tmp_path, base, test_patch, cases)
    mirrored = dataset_line("mirrored", cases["gold"], base, test_patch, repo="acme/mirror")
    with tasks.open("a") as f:
        f.write(json.dumps(mirrored) + "\n" + json.dumps(dataset_line("absent", cases["gold"], base, test_patch,
                                                                      repo="acme/absent")) + "\n")
    with preds.open("a") as f:
        f.write(json.dumps({"instance_id": "mirrored", "model_patch": cases["gold"].patch}) + "\n")
    before = fingerprint(repos / "acme" / "calc")
    out = tmp_path / "out"
    code = evaluate("--tasks", str(tasks), "--predictions", str(preds), "--out", str(out), "--repos", str(repos))
    printed = capsys.readouterr()
    assert code == 1  # the line with no clone is named, the rest ran
    assert "dataset.jsonl line 8: repo 'acme/absent': no clone at" in printed.err
    results = json.loads((out / "results.json").read_text())
    assert results["resolved"] == ["gold", "spoof", "mirrored"] and results["patch_failed"] == ["broken"]
    assert results["unresolved"] == ["wrong", "empty", "minversion"] and results["error"] == []
    assert results["flagged"] == {"spoof": ["tests/conftest.py"], "minversion": ["pytest.ini"]}
    assert "'minversion' requires pytest-99" in printed.err  # the cause, on the console as it happened
    gold = verdict(out, "gold")
    assert gold["model_patch"]["command"] == "git apply --verbose" and gold["image_id"].startswith("sha256:")
    assert gold["reset_files"] == ["tests/test_add.py", "tests/test_mul.py"] and gold["files"]["log"]
    assert (out / "gold" / "junit.xml").read_text().startswith("<?xml")
    assert json.loads((out / "report.json").read_text())["resolved_ids"] == ["gold", "mirrored", "spoof"]
    assert fingerprint(repos / "acme" / "calc") == before

    # --regrade: every verdict again from what was kept; --strict turns the flagged one down.
    assert main(["eval", "--regrade", str(out)]) == 0
    assert json.loads((out / "results.json").read_text()) == results
    assert main(["eval", "--regrade", str(out), "--strict"]) == 0
    strict = json.loads((out / "results.json").read_text())
    assert strict["unresolved"] == ["wrong", "empty", "spoof", "minversion"] and strict["strict"] is True
    assert "--strict" in verdict(out, "spoof")["error"]
    # The kept JUnit report is the evidence: change it, and the regrade says what it now says.
    junit = out / "wrong" / "junit.xml"
    junit.write_text(junit.read_text().replace("<failure", "<skipped type=\"pytest.xfail\"").replace(
        "</failure>", "</skipped>"))
    assert main(["eval", "--regrade", str(out)]) == 0
    assert verdict(out, "wrong")["fail_to_pass"] == {"tests/test_add.py::test_add": "xfail"}


def test_resume_skips_finished_instances_and_runs_changed_ones(
        tmp_path: Path, project: tuple[Path, str, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    repos, base, test_patch, cases = project
    tasks, preds = write_inputs(tmp_path, base, test_patch, {k: cases[k] for k in ("gold", "wrong", "empty")})
    out = tmp_path / "out"
    args = ["--tasks", str(tasks), "--predictions", str(preds), "--out", str(out), "--repos", str(repos)]
    assert evaluate(*args) == 0
    capsys.readouterr()
    (out / "wrong" / "eval.json").unlink()  # killed before its verdict was written
    first_gold = verdict(out, "gold")
    assert evaluate(*args) == 0
    err = capsys.readouterr().err
    assert "gold: resolved (kept from an earlier run)" in err and "empty: unresolved (kept" in err
    assert "wrong: unresolved (" in err and "wrong: unresolved (kept" not in err
    assert verdict(out, "gold") == first_gold
    lines = [{"instance_id": i, "model_name_or_path": "acme/model-1", "model_patch": cases["gold"].patch}
             for i in ("gold", "wrong", "empty")]
    preds.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert evaluate(*args) == 0
    err = capsys.readouterr().err
    assert "wrong: resolved (" in err and "empty: resolved (" in err  # a prediction that changed: again
    assert "gold: resolved (kept" in err and "wrong: resolved (kept" not in err


def test_the_repository_under_test_is_never_shadowed_by_the_image_s_own_copy(tmp_path: Path) -> None:
    """The sandbox image's Debian pytest comes with Debian's `packaging`; a project named packaging must test itself."""
    files = {"src/packaging/__init__.py": "WHO = 'debian'\n",
             "tests/test_who.py": "import packaging\n\n\ndef test_who():\n    assert packaging.WHO == 'repo'\n"}
    base = make_repo(tmp_path / "repos" / "pypa" / "packaging", files)
    fix = diff_of(tmp_path / "repos" / "pypa" / "packaging", {"src/packaging/__init__.py": "WHO = 'repo'\n"})
    line = {"repo": "pypa/packaging", "instance_id": "pypa__packaging-1", "base_commit": base,
            "FAIL_TO_PASS": ["tests/test_who.py::test_who"], "PASS_TO_PASS": [], "test_patch": ""}
    (tmp_path / "d.jsonl").write_text(json.dumps(line) + "\n")
    (tmp_path / "p.jsonl").write_text(json.dumps({"instance_id": line["instance_id"], "model_patch": fix}) + "\n")
    out = tmp_path / "out"
    assert evaluate("--tasks", str(tmp_path / "d.jsonl"), "--predictions", str(tmp_path / "p.jsonl"),
                    "--out", str(out), "--repos", str(tmp_path / "repos")) == 0
    result = verdict(out, "pypa__packaging-1")
    assert result["status"] == "resolved", result["error"]


def test_tests_that_write_into_the_repository_run_again_in_a_copy_of_it(tmp_path: Path) -> None:
    """SWE-bench's /testbed is writable; /repo is not. inflect's addopts start pytest-cov, whose .coverage in the
    repository stopped pytest before any test (unresolved, gold patch and all); a test that writes its own file
    failed. Both run again in a copy of the repository, and the verdict says so."""
    files = {"calc.py": CALC,
             "tests/test_add.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
             "tests/test_file.py": "from pathlib import Path\n\n\ndef test_writes():\n"
                                   "    Path(__file__).with_name('out.txt').write_text('x')\n"}
    starts = {**files, "conftest.py": "from pathlib import Path\n\n\ndef pytest_configure(config):\n"
                                      "    (Path(__file__).parent / '.coverage').write_text('data')\n"}
    lines, preds = [], []
    for iid, tree in (("starts", starts), ("writes", files)):
        repo = tmp_path / "repos" / "acme" / iid
        base = make_repo(repo, tree)
        fix = diff_of(repo, {"calc.py": CALC.replace("a - b", "a + b")})
        lines.append({"repo": f"acme/{iid}", "instance_id": iid, "base_commit": base, "test_patch": "",
                      "FAIL_TO_PASS": ["tests/test_add.py::test_add"],
                      "PASS_TO_PASS": ["tests/test_file.py::test_writes"]})
        preds.append({"instance_id": iid, "model_patch": fix})
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))
    out = tmp_path / "out"
    assert evaluate("--tasks", str(tmp_path / "d.jsonl"), "--predictions", str(tmp_path / "p.jsonl"),
                    "--out", str(out), "--repos", str(tmp_path / "repos")) == 0
    for iid in ("starts", "writes"):
        result = verdict(out, iid)
        assert result["status"] == "resolved", result["error"]
        assert any("ran again in a copy" in note for note in result["notes"]), result["notes"]
        assert not (tmp_path / "repos" / "acme" / iid / "tests" / "out.txt").exists()


def test_the_environment_is_batch_s_and_recorded_with_its_image_id_and_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """env auto builds the project's environment (here from a local wheelhouse holding the pytest this suite runs
    on: pytest >= 8.3 folds no skip); --env none runs the image as it is; both are recorded."""
    monkeypatch.setenv("CODEBOX_FIND_LINKS", str(pytest_wheelhouse(tmp_path / "wheels")))
    monkeypatch.setenv("CODEBOX_NO_INDEX", "1")
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path / "cache"))
    files = {"pyproject.toml": '[project]\nname = "calcpkg"\nversion = "1.0"\n\n'
                               '[project.optional-dependencies]\ntest = ["pytest>=8.3"]\n',
             "src/calcpkg/__init__.py": CALC, "tests/test_calc.py":
             "import pytest\nfrom calcpkg import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
             "@pytest.mark.skip(reason='later')\ndef test_later():\n    pass\n"}
    repo = tmp_path / "repos" / "acme__calcpkg"
    base = make_repo(repo, files)
    fix = diff_of(repo, {"src/calcpkg/__init__.py": CALC.replace("a - b", "a + b")})
    line = {"repo": "acme/calcpkg", "base_commit": base, "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
            "PASS_TO_PASS": ["tests/test_calc.py::test_later"]}
    (tmp_path / "d.jsonl").write_text(json.dumps({**line, "instance_id": "auto"}) + "\n"
                                      + json.dumps({**line, "instance_id": "plain", "env": "none"}) + "\n")
    (tmp_path / "p.jsonl").write_text("".join(json.dumps({"instance_id": i, "model_patch": fix}) + "\n"
                                              for i in ("auto", "plain")))
    out = tmp_path / "out"
    code = evaluate("--tasks", str(tmp_path / "d.jsonl"), "--predictions", str(tmp_path / "p.jsonl"),
                    "--out", str(out), "--repos", str(tmp_path / "repos"),
                    "--trust-dataset", str(tmp_path / "d.jsonl"))  # the second line sets env: a setting
    auto, plain = verdict(out, "auto"), verdict(out, "plain")
    built = auto["env"]["image"]
    try:
        assert code == 0 and auto["status"] == "resolved", auto["error"]
        assert built.startswith("codebox-env:") and "pytest==9" in auto["env"]["lock"]
        assert auto["image_id"].startswith("sha256:") and auto["pass_to_pass"] == {
            "tests/test_calc.py::test_later": "skipped"}
        from agent.eval.store import read_log

        assert "SKIPPED tests/test_calc.py::test_later - Skipped: later" in (read_log(out / "auto") or "")
        assert plain["env"] is None and plain["image_id"] and plain["status"] == "resolved"  # src/ on sys.path
        from agent.env.install import images

        # built on a throwaway workspace, recorded under the repository it came from (`codebox env ls` shows it)
        assert [e.repo for e in images.entries() if e.tag == built] == [str(repo)]
    finally:
        if auto["env"] and auto["env"]["built"]:  # the image this test built, through codebox's own record
            main(["env", "rm", built])


def test_a_model_cannot_pre_empt_a_test_file_the_test_patch_creates(tmp_path: Path) -> None:
    """SWE-bench resets only the files the test_patch finds at the base; codebox also removes the ones it creates,
    so the test_patch applies and the real test runs (the model's version is flagged)."""
    base, test_patch, cases = build(tmp_path / "repos" / "acme" / "calc")
    cheat = diff_of(tmp_path / "repos" / "acme" / "calc", {"tests/test_add.py": "def test_add():\n    pass\n"})
    gold = cases["gold"]
    tasks, preds = write_inputs(tmp_path, base, test_patch, {"cheat": gold.__class__(cheat, "unresolved")})
    out = tmp_path / "out"
    assert evaluate("--tasks", str(tasks), "--predictions", str(preds), "--out", str(out),
                    "--repos", str(tmp_path / "repos")) == 0
    result = verdict(out, "cheat")
    assert result["status"] == "unresolved" and result["flagged"] == ["tests/test_add.py"]
    assert result["fail_to_pass"] == {"tests/test_add.py::test_add": "failed"}


def test_the_warm_pool_prepares_the_next_instance_while_one_runs(
        tmp_path: Path, project: tuple[Path, str, str, dict[str, Any]]) -> None:
    repos, base, test_patch, cases = project
    many = {f"gold{n}": cases["gold"] for n in range(3)}
    tasks, preds = write_inputs(tmp_path, base, test_patch, many)
    out = tmp_path / "out"
    assert main(["eval", "--jobs", "1", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(out),
                 "--repos", str(repos)]) == 0
    timings = [verdict(out, f"gold{n}")["timings"] for n in range(3)]
    assert timings[0]["workspace"] > 0
    assert timings[1]["workspace"] == timings[2]["workspace"] == 0.0  # made ahead, while the one before ran
    assert timings[1]["env"] == timings[2]["env"] == 0.0
    for each in timings:  # the test command's own time (the sandbox's server timed it) is part of the tests step;
        # every container's create to first answer is kept, the ones the pool started ahead included
        assert 0 < each["test_process"] < each["tests"] and each["container_start"] > 0
    shutil.rmtree(out)


def test_a_cancel_stops_a_test_run_under_way_and_the_next_run_evaluates_it(tmp_path: Path) -> None:
    import threading
    import time

    from agent.cancel import CancelToken
    from agent.eval.dataset import load_dataset
    from agent.eval.predictions import load_predictions
    from agent.eval.run import EvalOptions, run_eval

    slow = {"calc.py": CALC, "tests/test_slow.py": "import time\n\n\ndef test_slow():\n    time.sleep(120)\n"}
    base = make_repo(tmp_path / "repos" / "acme" / "slow", slow)
    line = {"repo": "acme/slow", "instance_id": "slow", "base_commit": base,
            "FAIL_TO_PASS": ["tests/test_slow.py::test_slow"]}
    (tmp_path / "d.jsonl").write_text(json.dumps(line) + "\n")
    (tmp_path / "p.jsonl").write_text(json.dumps({"instance_id": "slow", "model_patch": ""}) + "\n")
    instances = load_dataset(tmp_path / "d.jsonl", repos_dir=tmp_path / "repos").instances
    predictions = load_predictions(tmp_path / "p.jsonl")[0]
    cancel = CancelToken()
    timer = threading.Timer(8, cancel.cancel, args=("the test cancels",))
    timer.start()
    started = time.monotonic()
    try:
        [result] = run_eval(instances, predictions, tmp_path / "out", EvalOptions(timeout_s=300), cancel)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 60  # not the test's 120 s
    assert result.status == "error" and result.cancelled
    assert result.instance_id not in json.loads((tmp_path / "out" / "report.json").read_text())["completed_ids"]
    again = EvalOptions(timeout_s=5)  # the next run evaluates it again (here: its timeout ends it)
    [second] = run_eval(instances, predictions, tmp_path / "out", again, CancelToken())
    assert not second.cancelled and second.error_kind == "timeout" and "timed out after 5 s" in (second.error or "")


def test_a_dataset_image_on_this_machine_is_the_environment(tmp_path: Path, sandbox_image: str,
                                                            docker_client: Any) -> None:
    """SWE-bench 5.x's `image`, allowed by a --dataset-image glob: used as it is when it is here (its testbed env
    first on PATH, the repo first on sys.path); recorded as not here otherwise, and the environment is built from
    the repository."""
    base, test_patch, cases = build(tmp_path / "repos" / "acme" / "calc")
    tag = f"codebox-evaltest/sweb.eval.x86_64.acme__calc-{tmp_path.name[-6:].lower()}:latest"
    docker_client.tag_image(sandbox_image, *tag.rsplit(":", 1))  # a local "instance image" (a tag: removed below)
    try:
        tasks, preds = write_inputs(tmp_path, base, test_patch, {"here": cases["gold"], "away": cases["gold"]})
        lines = [json.loads(line) for line in tasks.read_text().splitlines()]
        lines[0]["image"], lines[1]["image"] = tag, "swebench/sweb.eval.x86_64.nowhere:latest"
        tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
        out = tmp_path / "out"
        assert evaluate("--tasks", str(tasks), "--predictions", str(preds), "--out", str(out),
                        "--repos", str(tmp_path / "repos"), "--dataset-image", "sweb.eval.*") == 0
        here, away = verdict(out, "here"), verdict(out, "away")
        assert here["status"] == away["status"] == "resolved"
        assert here["dataset"]["image_used"] and here["env"] is None
        assert here["image_id"] == docker_client.inspect_image(sandbox_image)["Id"]
        assert not away["dataset"]["image_used"] and any("not on this machine" in n for n in away["notes"])
    finally:
        docker_client.remove_image(tag)
