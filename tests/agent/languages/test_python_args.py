"""The model's run_test arguments may only choose tests: the attacks of issue 13 and the honest uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.languages.base import TestArgsError
from agent.languages.python.args import is_pytest
from agent.languages.registry import check_test_args
from agent.sandboxes.result import ToolResult
from tests.fakes import FakeSandbox, make_agent, task

PYTEST = ["python3", "-m", "pytest", "-q"]


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["tests/test_x.py"],
        ["tests/test_x.py::TestA::test_b[1-2]", "tests/other"],
        ["-k", "retry and not slow"],
        ["-kretry"],
        ["-xq", "-vv", "--lf", "--ff", "-s", "-l"],
        ["-xk", "foo"],
        ["--maxfail", "2", "--maxfail=3", "-m", "not network"],
        ["--tb=short", "--tb", "no", "-r", "fE", "-ra", "--durations=5", "--no-header"],
        ["--deselect", "tests/test_x.py::test_slow", "./tests/../tests/a.py"],
    ],
)
def test_honest_selections_pass(args: list[str]) -> None:
    check_test_args(PYTEST, args)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["-o", "addopts=--version"], "-o is not allowed: it overrides ini options"),
        (["--override-ini=addopts="], "--override-ini is not allowed"),
        (["-p", "evil"], "plugins"),
        (["-pevil"], "plugins"),
        (["-xp", "evil"], "plugins"),
        (["--rootdir=/", "-c", "/dev/null", "/opt/x"], "rootdir"),
        (["-c", "/dev/null"], "another config file"),
        (["--confcutdir", "/"], "conftest"),
        (["-W", "ignore"], "warnings"),
        (["--co"], "collect-only"),
        (["--collect-only"], "collect-only"),
        (["/opt/tests/test_a.py"], "absolute"),
        (["../outside/test_a.py"], "leaves the repository"),
        (["tests/../../x.py::t"], "leaves the repository"),
        (["@args.txt"], "argument files"),
        (["--deselect", "/etc/x"], "absolute"),
        (["--maxfail", "two"], "takes a number"),
        (["--tb", "evil"], "--tb takes"),
        (["-k"], "needs a value"),
        (["--"], "only options that choose tests"),
        (["--pyargs", "os"], "imports"),
        (["-x=1"], "-= is not allowed"),
        (["tests/a\x1b]0;t\x07.py"], "control character"),
        (["--version"], "runs no test"),
    ],
)
def test_refused_with_what_is_allowed(args: list[str], says: str) -> None:
    with pytest.raises(TestArgsError) as err:
        check_test_args(PYTEST, args)
    assert says in str(err.value)
    assert "allowed: test paths or node ids" in str(err.value)


def test_a_symlink_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "outside").symlink_to("/usr/lib")
    (repo / "inside").symlink_to("tests")
    check_test_args(PYTEST, ["inside/test_a.py::t", "tests/missing.py"], repo)
    for args in (["outside/python3/test_x.py"], ["--deselect", "outside/x.py::t"]):
        with pytest.raises(TestArgsError, match="through a symlink"):
            check_test_args(PYTEST, args, repo)


def test_an_unknown_runner_takes_plain_paths_only() -> None:
    cmd = ["make", "test"]
    assert not is_pytest(cmd)
    check_test_args(cmd, ["tests/unit", "a_test.go"])
    for bad in (["-k", "x"], ["-v"], ["/etc"], ["../x"]):
        with pytest.raises(TestArgsError, match="no options: the test command is not pytest"):
            check_test_args(cmd, bad)


@pytest.mark.parametrize(
    "cmd", [["pytest"], ["/usr/bin/py.test", "-q"], ["python3", "-m", "pytest"], ["uv", "run", "pytest-3"]]
)
def test_pytest_is_recognised(cmd: list[str]) -> None:
    assert is_pytest(cmd)


def test_a_refused_call_never_reaches_the_sandbox_nor_last_test() -> None:
    sandbox = FakeSandbox({"run_test": lambda a: ToolResult(output="", ok=True, outcome="ok", data={"exit_code": 0})})
    calls = [
        {"tool_calls": [{"name": "run_test", "arguments": {"args": ["-k", "a"]}}]},
        {"tool_calls": [{"name": "run_test", "arguments": {"args": ["-o", "addopts=--version"]}}]},
        {"message": "done"},
    ]
    agent, _, _, _ = make_agent(calls, sandbox)
    agent.ctx.test_cmd = PYTEST
    report = agent.run(task())
    assert len(sandbox.calls) == 1
    assert report.last_test is not None and report.last_test.command == [*PYTEST, "-k", "a"]
    assert report.tool_calls[1].ok is False and "-o is not allowed" in (report.tool_calls[1].error or "")
