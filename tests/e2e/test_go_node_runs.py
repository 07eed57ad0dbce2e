"""Go and Node end to end with real containers and no network: `codebox run` finds `go test -json ./...` in a
module and `node --test` in a package, with Debian trixie's toolchains, and names the failing test from the
runner's machine output; `codebox eval` grades a Go row by test name; a go.mod replace to a host path is refused
in one line, and a package.json's lifecycle scripts never run on the host."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.agent.eval.repos import diff_of, make_repo
from tests.e2e.test_rust_runs import codebox, run_test, script

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1200)]  # a toolchain image's first build: minutes

GO_MOD = "module example.com/calc\n\ngo 1.22\n"
GO_SRC = "package calc\n\nfunc Add(a, b int) int { return a - b }\n"
GO_TEST = ('package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n'
           '\t\tt.Fatal("add")\n\t}\n}\n\nfunc TestZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n\t\tt.Fatal("zero")\n'
           "\t}\n}\n")


@pytest.fixture(scope="module", autouse=True)
def _images() -> None:
    from agent.containers.image import ensure_sandbox_image
    from agent.containers.toolchain import ensure_toolchain
    from agent.languages import go, node

    ensure_sandbox_image()
    ensure_toolchain("go", go.SUITE, go.PACKAGES, lambda _: None, go.GO_ENV)
    ensure_toolchain("node", node.SUITE, node.PACKAGES, lambda _: None, node.NODE_ENV)


def test_go_run_names_the_failing_test_and_eval_grades_a_row_by_test_name(tmp_path: Path) -> None:
    repo = tmp_path / "repos" / "acme" / "calc"
    base = make_repo(repo, {"go.mod": GO_MOD, "calc.go": GO_SRC, "calc_test.go": GO_TEST})
    done = codebox(tmp_path, "run", "--repo", str(repo), "--model", script(tmp_path / "s.json", [run_test(),
                   run_test("-run", "TestZero"), {"message": "looked"}]), "--no-diff", "look")
    assert "go test -json ./... (found go.mod" in done.stderr, done.stderr
    assert "1 failing: TestAdd" in done.stdout
    assert "last test: go test -run TestZero -json ./... -> ok" in done.stdout
    gold = diff_of(repo, {"calc.go": GO_SRC.replace("a - b", "a + b")})
    row = {"repo": "acme/calc", "base_commit": base, "patch": gold, "test_patch": "", "problem_statement": "add",
           "FAIL_TO_PASS": json.dumps(["TestAdd"]), "PASS_TO_PASS": json.dumps(["TestZero"]), "version": "1"}
    tasks, preds = tmp_path / "rows.jsonl", tmp_path / "preds.jsonl"
    tasks.write_text("".join(json.dumps({**row, "instance_id": iid}) + "\n" for iid in ("gold", "empty")))
    preds.write_text(json.dumps({"instance_id": "gold", "model_patch": gold}) + "\n"
                     + json.dumps({"instance_id": "empty", "model_patch": ""}) + "\n")
    done = codebox(tmp_path, "eval", "--tasks", str(tasks), "--predictions", str(preds), "--out",
                   str(tmp_path / "out"), "--repos", str(tmp_path / "repos"), "--jobs", "1")
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["resolved"] == ["gold"] and results["unresolved"] == ["empty"], done.stderr


def test_a_go_replace_to_a_host_path_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    make_repo(tmp_path / "repo", {"go.mod": GO_MOD + "\nreplace example.com/x => ../outside\n", "calc.go": GO_SRC,
                                  "calc_test.go": GO_TEST})
    done = codebox(tmp_path, "run", "--repo", str(tmp_path / "repo"), "--model",
                   script(tmp_path / "s.json", [run_test(), {"message": "looked"}]), "--no-diff", "look")
    assert done.returncode == 2
    said = [line for line in done.stderr.splitlines() if "names a path outside the repository" in line]
    assert len(said) == 1 and said[0].startswith("codebox: ") and "go.mod: replace" in said[0], done.stderr


CALC_TEST = ("const test = require('node:test');\nconst assert = require('node:assert');\n"
             "const { add } = require('../calc');\n"
             "test('adds', () => assert.strictEqual(add(2, 2), 4));\n"
             "test('zero', () => assert.strictEqual(add(0, 0), 0));\n")


def calc_repo(repo: Path, package: dict[str, Any]) -> Path:
    """A Node package whose add subtracts: node:test's 'adds' fails, 'zero' passes."""
    make_repo(repo, {"package.json": json.dumps(package), "calc.js": "exports.add = (a, b) => a - b;\n",
                     "test/calc.test.js": CALC_TEST})
    return repo


def test_node_run_names_the_failing_test_and_lifecycle_scripts_never_run_on_the_host(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    scripts = {name: f"touch {marker}" for name in ("preinstall", "install", "postinstall", "prepare", "pretest")}
    package = {"name": "calc", "version": "1.0.0", "scripts": {**scripts, "test": "node --test"}}
    repo = calc_repo(tmp_path / "repo", package)
    done = codebox(tmp_path, "run", "--repo", str(repo), "--model",
                   script(tmp_path / "s.json", [run_test(), {"message": "looked"}]), "--no-diff", "look")
    assert "node --test --test-reporter=tap (found package.json scripts.test" in done.stderr, done.stderr
    assert "1 failing: adds" in done.stdout
    assert not marker.exists()


def test_an_npm_test_that_reaches_node_test_is_read_per_test(tmp_path: Path) -> None:
    """npm test's script runs node --test through `npm run unit`: its tests are named from node's TAP (chosen
    through NODE_OPTIONS), in an image with npm (the toolchain image has node only: the host's npm is copied in)."""
    from agent.containers.toolchain import ensure_toolchain
    from agent.languages import node

    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("no npm on this host to put in an image")
    package_dir = Path(npm).resolve().parents[1]  # .../node_modules/npm/bin/npm-cli.js
    context = tmp_path / "image"
    shutil.copytree(package_dir, context / "npm", symlinks=True)
    base = ensure_toolchain("node", node.SUITE, node.PACKAGES, lambda _: None, node.NODE_ENV)
    # built FROM codebox's toolchain image, it inherits its labels: still the user's image, not swapped for codebox's
    (context / "Dockerfile").write_text(f"FROM {base}\nCOPY npm /usr/lib/node_modules/npm\n"
                                        "RUN ln -s /usr/lib/node_modules/npm/bin/npm-cli.js /usr/bin/npm\n")
    tag = f"codebox-test-node-npm:{tmp_path.name.lower()}"
    subprocess.run(["docker", "build", "-q", "-t", tag, str(context)], capture_output=True, check=True, timeout=600)
    try:
        package = {"name": "calc", "version": "1.0.0", "scripts": {"test": "npm run unit", "unit": "node --test"}}
        repo = calc_repo(tmp_path / "repo", package)
        report = tmp_path / "report.json"
        done = codebox(tmp_path, "run", "--repo", str(repo), "--image", tag, "--report", str(report), "--model",
                       script(tmp_path / "s.json", [run_test(), {"message": "looked"}]), "--no-diff", "look")
        assert "env NODE_OPTIONS=--test-reporter=tap npm test (found package.json scripts.test" in done.stderr, \
            done.stderr
        last = json.loads(report.read_text())["last_test"]
        assert last["exit_code"] == 1 and last["failed_tests"] == ["adds"], last
    finally:
        subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True, timeout=120, check=False)
