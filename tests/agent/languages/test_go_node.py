"""Go's and Node's answers to the language seam: detection (and what is missing when modules or packages are not
committed), the model's arguments, and each test's outcome from go test -json and node --test's TAP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.languages.base import TestArgsError
from agent.languages.go import GO, GO_TEST, gomod
from agent.languages.node import NODE, NODE_TEST, NPM_TAP, NPM_TEST, scripts, tap
from agent.languages.registry import argv_for, check_test_args, detect, failing_tests, outcomes

DATA = Path(__file__).with_name("data")
GO_EVENTS = "\n".join(json.dumps(e) for e in [
    {"Action": "start", "Package": "example.com/calc"},
    {"Action": "run", "Package": "example.com/calc", "Test": "TestAdd"},
    {"Action": "output", "Package": "example.com/calc", "Test": "TestAdd", "Output": "--- FAIL: TestAdd (0.00s)\n"},
    {"Action": "fail", "Package": "example.com/calc", "Test": "TestAdd", "Elapsed": 0},
    {"Action": "pass", "Package": "example.com/calc", "Test": "TestMul/small", "Elapsed": 0},
    {"Action": "pass", "Package": "example.com/calc", "Test": "TestMul", "Elapsed": 0},
    {"Action": "skip", "Package": "example.com/calc", "Test": "TestSlow", "Elapsed": 0},
    {"Action": "fail", "Package": "example.com/calc", "Elapsed": 0.01},
])


def test_a_go_module_is_go_test_json_and_unvendored_modules_are_named(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/calc\n\ngo 1.22\n")
    found = detect(tmp_path)
    assert found is not None and found.language == "go" and found.command == GO_TEST and found.missing is None
    (tmp_path / "go.mod").write_text("module m\n\ngo 1.22\n\nrequire (\n\tgolang.org/x/text v0.3.0\n"
                                     "\tgithub.com/a/b v1.0.0 // indirect\n)\n")
    found = detect(tmp_path)
    assert found is not None and found.missing is not None
    assert "golang.org/x/text, github.com/a/b" in found.missing and "go mod vendor" in found.missing
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "modules.txt").write_text("# golang.org/x/text v0.3.0\n## explicit\n"
                                                     "# github.com/a/b v1.0.0\n")
    found = detect(tmp_path)
    assert found is not None and found.missing is None


def test_go_s_events_say_each_outcome() -> None:
    assert GO.outcomes(GO_EVENTS) == {"TestAdd": "failed", "TestMul/small": "passed", "TestMul": "passed",
                                      "TestSlow": "skipped"}
    assert failing_tests(GO_EVENTS, GO_TEST) == ["TestAdd"]


def test_go_arguments_choose_tests_and_packages_replace_the_pattern(tmp_path: Path) -> None:
    check_test_args(GO_TEST, ["-run", "TestAdd", "./calc/...", "-v"], tmp_path)
    assert argv_for(GO_TEST, ["-run", "TestAdd", "./calc/..."]) == ["go", "test", "-run", "TestAdd", "-json",
                                                                    "./calc/..."]
    assert argv_for(GO_TEST, ["-count=1"]) == ["go", "test", "-count=1", "-json", "./..."]
    for bad in (["-exec", "/bin/sh"], ["-toolexec", "x"], ["../other"], ["-count", "999999"], ["-o", "/tmp/x"]):
        with pytest.raises(TestArgsError):
            check_test_args(GO_TEST, bad, tmp_path)


def test_a_replace_to_a_host_path_is_refused_one_inside_is_not(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module m\n\nreplace example.com/x => ../x\n")
    assert "names a path outside the repository" in (gomod.refusal(tmp_path) or "")
    (tmp_path / "go.mod").write_text("module m\n\nreplace (\n\texample.com/x => /etc/x\n)\n")
    assert gomod.refusal(tmp_path) is not None
    (tmp_path / "go.mod").write_text("module m\n\nreplace example.com/x => ./x\n")
    assert gomod.refusal(tmp_path) is None
    with pytest.raises(EnvError):
        (tmp_path / "go.mod").write_text("module m\n\nreplace example.com/x => ../x\n")
        GO.environment(tmp_path, None, "docker", lambda _: None, None, "m")  # type: ignore[arg-type]


def test_a_package_json_is_node_test_or_npm_test_and_uncommitted_packages_are_named(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text(json.dumps({"name": "a", "scripts": {"test": "node --test"}}))
    found = detect(tmp_path)
    assert found is not None and found.language == "node" and found.command == NODE_TEST
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {"test": "mocha"}, "devDependencies":
                                                       {"mocha": "^10"}}))
    found = detect(tmp_path)
    assert found is not None and found.command == NPM_TEST and "(mocha)" in (found.missing or "")
    (tmp_path / "node_modules" / "mocha").mkdir(parents=True)
    (tmp_path / "node_modules" / "mocha" / "package.json").write_text("{}")
    found = detect(tmp_path)
    assert found is not None and found.missing is None


def test_an_npm_test_that_reaches_node_test_is_read_per_test_through_node_options(tmp_path: Path) -> None:
    package = {"scripts": {"test": "npm run lint && npm run unit", "lint": "eslint .",
                           "unit": "NODE_ENV=test c8 --100 node --test"}}
    (tmp_path / "package.json").write_text(json.dumps(package))
    found = detect(tmp_path)
    assert found is not None and found.command == NPM_TAP == ["env", "NODE_OPTIONS=--test-reporter=tap", "npm", "test"]
    output = "\n> calc@1.0.0 test\n> node --test\n\n" + (DATA / "node20.tap").read_text() + "npm ERR! Test failed.\n"
    assert outcomes(output, NPM_TAP) == NODE.outcomes(output) != {}
    assert failing_tests(output, NPM_TAP) == ["fails # hash", "suite > inner bad", "suite"]
    assert outcomes("3 passing\n1 failing\n", NPM_TEST) == {}  # mocha's prose: no outcome is made up
    check_test_args(NPM_TAP, ["test/a.test.js"], tmp_path)
    with pytest.raises(TestArgsError):
        check_test_args(NPM_TAP, ["--test-name-pattern=x"], tmp_path)  # npm test's args go to its last command


@pytest.mark.parametrize(("table", "reaches"), [
    ({"test": "node --test test/"}, True), ({"test": "c8 node --experimental-x --test"}, True),
    ({"test": "npm run a", "a": "npm run b", "b": "node --test"}, True), ({"test": "npm run test"}, False),
    ({"test": "mocha && node index.js --test"}, False), ({"test": "tape test/*.js | tap-dot"}, False),
    ({"test": "node test/run.js"}, False), ({"test": "npm run missing"}, False), ({}, False),
    ({"test": "cross-env X=1 node --test 'a b.js'"}, True), ({"test": "node --test 'unclosed"}, True)])
def test_which_scripts_reach_node_s_runner(table: dict[str, str], reaches: bool) -> None:
    assert scripts.runs_node_test(table, "test") is reaches


def test_npm_test_commands_are_node_s() -> None:
    for command in (NPM_TEST, NPM_TAP, ["npm", "t"], ["npm", "run", "test"], ["/usr/bin/npm", "test"]):
        assert NODE.runs(command), command
    for command in (["npm", "run", "lint"], ["npm"], ["env", "npm", "install"], ["yarn", "test"]):
        assert not NODE.runs(command), command


def test_node_s_tap_says_each_outcome_by_its_path() -> None:
    output = (DATA / "node20.tap").read_text()
    assert NODE.outcomes(output) == {"adds": "passed", "fails # hash": "failed", "skipped": "skipped",
                                     "suite > inner ok": "passed", "suite > inner bad": "failed",
                                     "suite": "failed"}
    assert failing_tests(output, NODE_TEST) == ["fails # hash", "suite > inner bad", "suite"]
    assert tap.counts(output) == {"passed": 2, "failed": 2, "skipped": 1}
    assert outcomes(output, NODE_TEST) is not None


def test_node_arguments_are_test_files_or_a_name_pattern(tmp_path: Path) -> None:
    check_test_args(NODE_TEST, ["test/a.test.js", "--test-name-pattern=adds"], tmp_path)
    for bad in (["--require", "/tmp/x.js"], ["--import=data:text/javascript,"], ["/etc/passwd"]):
        with pytest.raises(TestArgsError):
            check_test_args(NODE_TEST, bad, tmp_path)


@pytest.mark.parametrize(("name", "read"), [("tests::adds", True), ("jaro_winkler_works", True),
                                            ("src/lib.rs - add (line 3)", True), ("TestAdd/small", True),
                                            ("suite > inner ok", True), ("[100%]", False), ("[", False)])
def test_a_row_s_test_names_are_read_by_some_runner(name: str, read: bool) -> None:
    from agent.languages.registry import is_test_id

    assert is_test_id(name) is read


def test_an_evaluation_runs_go_s_and_node_s_whole_suite_whatever_the_environment(tmp_path: Path) -> None:
    from agent.env.info import EnvInfo

    env = EnvInfo(image="env", base_image="base", toolchain="some 1.0")
    for language, shown in ((GO, GO_TEST), (NODE, NODE_TEST)):
        run = language.named_tests_run(tmp_path, ["TestAdd"], env)
        assert run == language.named_tests_run(tmp_path, ["TestAdd"], None) and run.shown == shown
