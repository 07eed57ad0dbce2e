"""Datasets as shipped: every SWE-bench version's lines, SWE-Gym and SWE-smith lines, JSONL / JSON / parquet,
owner/name repositories under --repos; every bad line named with its number, the rest still load. A line is
data: a setting in it is refused unless the file is trusted, its image used only when a glob allows it, its
repo only under --repos or the dataset's folder."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent.eval.dataset import NOT_RUN_SCRIPT, LineRules, load_dataset
from tests.agent.eval.repos import calc_repo
from tests.repos import sh

F2P = ["tests/test_add.py::test_add"]


@pytest.fixture
def repos(tmp_path: Path) -> tuple[Path, str]:
    """--repos DIR holding acme/calc as DIR/acme/calc (a clone) and DIR/acme__mirror (a bare mirror)."""
    root = tmp_path / "repos"
    base = calc_repo(root / "acme" / "calc")
    sh("git", "clone", "-q", "--mirror", str(root / "acme" / "calc"), str(root / "acme__mirror"), cwd=tmp_path)
    return root, base


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def swe_bench_4(base: str, **more: Any) -> dict[str, Any]:
    line = {"repo": "acme/calc", "instance_id": "acme__calc-1", "base_commit": base, "patch": "", "test_patch": "",
            "problem_statement": "add subtracts", "hints_text": "", "created_at": "2024-01-01T00:00:00Z",
            "version": 1.0, "FAIL_TO_PASS": json.dumps(F2P), "PASS_TO_PASS": "[]", "environment_setup_commit": base}
    return {**line, **more}


def test_swe_bench_lines_of_every_version(tmp_path: Path, repos: tuple[Path, str]) -> None:
    root, base = repos
    five = swe_bench_4(base, instance_id="acme__calc-5", eval_script="#!/bin/bash\npytest -rA", eval_type="fail_only",
                       log_parser="parse_log_pytest", image_assets='{"test_patch": []}', split="test",
                       image="swebench/sweb.eval.x86_64.acme__calc-5:latest")
    gym = {**swe_bench_4(base, instance_id="gym-1"), "FAIL_TO_PASS": F2P, "PASS_TO_PASS": []}  # lists, not JSON
    extra = swe_bench_4(base, instance_id="extra-1", meta={"has_test_patch": True})  # SWE-bench-extra's meta
    loaded = load_dataset(write(tmp_path / "d.jsonl", [swe_bench_4(base), five, gym, extra]), repos_dir=root)
    assert loaded.errors == []
    one, v5, g, e = loaded.instances
    assert one.task.repo == str((root / "acme" / "calc").resolve()) and one.task.FAIL_TO_PASS == F2P
    assert one.task.goal == "add subtracts" and one.task.env == "auto" and one.dataset.eval_type == "pass_and_fail"
    assert v5.dataset.eval_type == "fail_only" and v5.dataset.log_parser == "parse_log_pytest"
    assert v5.dataset.eval_script and NOT_RUN_SCRIPT in v5.dataset.notes and v5.dataset.split == "test"
    assert v5.dataset.image_assets and not v5.dataset.image_used and v5.task.image is None
    assert any("matches no --dataset-image glob" in n for n in v5.dataset.notes)
    assert g.task.FAIL_TO_PASS == F2P and e.dataset.ignored_keys == ["meta"]


def test_a_local_image_is_the_environment_and_env_precedence(tmp_path: Path, repos: tuple[Path, str]) -> None:
    root, base = repos
    rows = [swe_bench_4(base, instance_id="img", image="here:1"),
            swe_bench_4(base, instance_id="own-env", image="here:1", env="auto"),
            swe_bench_4(base, instance_id="plain")]
    path = write(tmp_path / "d.jsonl", rows)
    here = LineRules(trusted=True)  # a line's env is a setting: only a trusted file's counts
    img, own, plain = load_dataset(path, repos_dir=root, image_exists=lambda name: name == "here:1",
                                   rules=here).instances
    assert img.task.image == "here:1" and img.dataset.image_used and img.task.env == "none"
    assert own.task.env == "auto" and plain.task.env == "auto"
    flagged = load_dataset(path, repos_dir=root, env="none", image_exists=lambda name: True, rules=here).instances
    assert [i.task.env for i in flagged] == ["none", "none", "none"]


def test_a_line_image_is_used_only_when_a_glob_the_user_gave_matches(tmp_path: Path, repos: tuple[Path, str]) -> None:
    root, base = repos
    rows = [swe_bench_4(base, instance_id="sweb", image="swebench/sweb.eval.x86_64.acme__calc-1:latest"),
            swe_bench_4(base, instance_id="private", image="private/secrets:1")]
    path = write(tmp_path / "d.jsonl", rows)
    sweb, private = load_dataset(path, repos_dir=root, image_exists=lambda name: True,
                                 rules=LineRules(image_globs=["sweb.eval.*"])).instances
    assert sweb.task.image == "swebench/sweb.eval.x86_64.acme__calc-1:latest" and sweb.dataset.image_used
    assert private.task.image is None and not private.dataset.image_used and private.task.env == "auto"
    none = load_dataset(path, repos_dir=root, image_exists=lambda name: True).instances
    assert [i.task.image for i in none] == [None, None]


def test_a_line_that_sets_a_setting_is_refused_unless_the_file_is_trusted(
        tmp_path: Path, repos: tuple[Path, str]) -> None:
    root, base = repos
    rows = [swe_bench_4(base, instance_id="runtime", runtime="runc"),
            swe_bench_4(base, instance_id="env", env={"pre_install": ["curl evil"]}, timeout_s=1),
            swe_bench_4(base, instance_id="data", test_in_copy=True, difficulty="<15 min fix")]
    path = write(tmp_path / "d.jsonl", rows)
    loaded = load_dataset(path, repos_dir=root)
    assert [i.task.id for i in loaded.instances] == ["data"] and loaded.instances[0].task.test_in_copy
    found = {e.where: e.message for e in loaded.errors}
    assert "'runtime'" in found["d.jsonl line 1"] and "--trust-dataset" in found["d.jsonl line 1"]
    assert "'env'" in found["d.jsonl line 2"] and "timeout_s" in found["d.jsonl line 2"]
    trusted = load_dataset(path, repos_dir=root, rules=LineRules(trusted=True))
    assert trusted.errors == [] and trusted.instances[0].task.runtime == "runc"


def test_a_repo_folder_must_be_inside_repos_or_the_datasets_folder(tmp_path: Path, repos: tuple[Path, str]) -> None:
    root, base = repos
    (tmp_path / "data").mkdir()
    sh("git", "clone", "-q", str(root / "acme" / "calc"), str(tmp_path / "data" / "calc"), cwd=tmp_path)
    (tmp_path / "data" / "out").symlink_to(root.parent.parent)
    rows = [swe_bench_4(base, repo=".", instance_id="dot"),
            swe_bench_4(base, repo=str(tmp_path), instance_id="outside"),
            swe_bench_4(base, repo="out", instance_id="link"),
            swe_bench_4(base, repo="calc", instance_id="beside"),
            swe_bench_4(base, repo=str(root / "acme" / "calc"), instance_id="in-repos")]
    loaded = load_dataset(write(tmp_path / "data" / "d.jsonl", rows), repos_dir=root)
    assert [i.task.id for i in loaded.instances] == ["beside", "in-repos"]
    assert loaded.instances[0].task.repo == str((tmp_path / "data" / "calc").resolve())
    assert sorted(e.where for e in loaded.errors) == [f"d.jsonl line {n}" for n in (1, 2, 3)]
    assert all("is not owner/name under --repos nor a folder inside" in e.message for e in loaded.errors)


def test_swe_smith_lines_start_from_the_branch_named_for_the_instance(tmp_path: Path, repos: tuple[Path, str]) -> None:
    root, base = repos
    clone = root / "acme" / "calc"
    sh("git", "checkout", "-q", "-b", "acme__calc.abc.lm_rewrite__x1", cwd=clone)
    (clone / "calc.py").write_text("def add(a, b):\n    return 0\n")
    sh("git", "commit", "-qam", "Bug Patch", cwd=clone)
    bug = sh("git", "rev-parse", "HEAD", cwd=clone)
    smith = {"instance_id": "acme__calc.abc.lm_rewrite__x1", "repo": "acme/calc", "patch": "diff ...",
             "FAIL_TO_PASS": F2P, "PASS_TO_PASS": [], "image_name": "jyangballin/swesmith.x86_64.acme_1776_calc.abc",
             "problem_statement": "add is broken"}
    loaded = load_dataset(write(tmp_path / "s.jsonl", [smith, {**smith, "instance_id": "no-branch"}]), repos_dir=root)
    [instance] = loaded.instances
    assert instance.task.base_commit == bug and instance.dataset.image == smith["image_name"]
    assert any("the branch" in n for n in instance.dataset.notes)
    assert "no branch 'no-branch'" in loaded.errors[0].message and base


def test_owner_name_resolves_through_repos_both_layouts_and_says_what_to_do(
        tmp_path: Path, repos: tuple[Path, str]) -> None:
    root, base = repos
    rows = [swe_bench_4(base, repo="acme/mirror", instance_id="m"),
            swe_bench_4(base, repo="acme/absent", instance_id="a"),
            swe_bench_4(base, repo=str(root / "acme" / "calc"), instance_id="path")]  # a folder inside --repos
    loaded = load_dataset(write(tmp_path / "d.jsonl", rows), repos_dir=root)
    assert [i.task.id for i in loaded.instances] == ["m", "path"]
    assert loaded.instances[0].task.repo == str((root / "acme__mirror").resolve())
    [absent] = loaded.errors
    assert absent.where == "d.jsonl line 2" and "no clone at" in absent.message and "acme__absent" in absent.message
    without = load_dataset(write(tmp_path / "e.jsonl", rows[:1]))
    assert "--repos DIR" in without.errors[0].message and "\n" not in without.errors[0].message


def test_every_bad_line_is_one_line_with_its_number(tmp_path: Path, repos: tuple[Path, str]) -> None:
    root, base = repos
    rows: list[Any] = [
        swe_bench_4(base, instance_id="ok"),
        "{torn",
        "[1, 2]",
        swe_bench_4(base, instance_id="bad id/x"),
        swe_bench_4(base, instance_id="ok"),
        swe_bench_4(base, instance_id="gone", base_commit="f" * 40),
        swe_bench_4(base, instance_id="typed", FAIL_TO_PASS="not json"),
        swe_bench_4(base, instance_id="kind", eval_type="sometimes"),
        swe_bench_4(base, instance_id="ok2"),
    ]
    loaded = load_dataset(write(tmp_path / "d.jsonl", ["# a comment", *rows]), repos_dir=root)
    assert [i.task.id for i in loaded.instances] == ["ok", "ok2"]
    found = {e.where: e.message for e in loaded.errors}
    assert set(found) == {f"d.jsonl line {n}" for n in (3, 4, 5, 6, 7, 8, 9)}
    assert "not JSON" in found["d.jsonl line 3"] and "JSON object" in found["d.jsonl line 4"]
    assert "names a folder" in found["d.jsonl line 5"] and "duplicate" in found["d.jsonl line 6"]
    assert "is not a commit" in found["d.jsonl line 7"] and "git -C" in found["d.jsonl line 7"]
    assert "JSON list" in found["d.jsonl line 8"] and "eval_type" in found["d.jsonl line 9"]
    assert all("\n" not in m for m in found.values())


def test_json_array_filters_and_split(tmp_path: Path, repos: tuple[Path, str]) -> None:
    root, base = repos
    rows = [swe_bench_4(base, instance_id=f"acme-{n}", split="test" if n % 2 else "dev") for n in range(4)]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(rows))
    assert [i.task.id for i in load_dataset(path, repos_dir=root).instances] == [f"acme-{n}" for n in range(4)]
    tests = load_dataset(path, repos_dir=root, split="test")
    assert [i.task.id for i in tests.instances] == ["acme-1", "acme-3"] and tests.skipped_split == 2
    assert [i.task.id for i in load_dataset(path, repos_dir=root, pattern="[23]$").instances] == ["acme-2", "acme-3"]


def test_parquet_needs_pyarrow_and_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def no_pyarrow(name: str, *args: Any) -> Any:
        if name.startswith("pyarrow"):
            raise ImportError("No module named 'pyarrow'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_pyarrow)
    loaded = load_dataset(tmp_path / "d.parquet")
    assert [str(e) for e in loaded.errors] == [
        "d.parquet: reading parquet needs pyarrow (pip install pyarrow), or give the dataset as JSONL"]


def test_parquet_rows_load_like_lines(tmp_path: Path, repos: tuple[Path, str]) -> None:
    if os.environ.get("CI"):  # .ci/run installs the parquet extra: required there
        pa = importlib.import_module("pyarrow")
    else:
        pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'codebox-agent[parquet]')")
    pq = importlib.import_module("pyarrow.parquet")
    root, base = repos
    rows = [{**swe_bench_4(base, instance_id=f"p-{n}"), "FAIL_TO_PASS": F2P, "PASS_TO_PASS": []} for n in range(2)]
    pq.write_table(pa.Table.from_pylist(rows), str(tmp_path / "d.parquet"))
    loaded = load_dataset(tmp_path / "d.parquet", repos_dir=root)
    assert loaded.errors == [] and [i.task.id for i in loaded.instances] == ["p-0", "p-1"]
    assert loaded.instances[0].task.FAIL_TO_PASS == F2P
