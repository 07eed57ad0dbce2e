"""Policies judge the paths a write names, including the tricks a hostile text may suggest."""

from __future__ import annotations

import pytest

from agent.protocol import ToolCall
from agent.task.policy import (
    ApproveOncePolicy,
    ReadOnlyPolicy,
    WorkspaceWritePolicy,
    glob_match,
    path_problem,
)
from agent.tools import PreparedCall, ToolRegistry


def prepared(patch: str) -> PreparedCall:
    return ToolRegistry().prepare(ToolCall(name="apply_patch", arguments={"patch": patch}))


def add(path: str) -> str:
    return f"*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch\n"


def test_read_only_allows_reads_and_denies_every_write() -> None:
    policy = ReadOnlyPolicy()
    read = ToolRegistry().prepare(ToolCall(name="read_file", arguments={"path": "a.py"}))
    assert policy.decide(read).allowed
    assert not policy.decide(prepared(add("a.py"))).allowed


@pytest.mark.parametrize(
    "path",
    [
        ".git/hooks/pre-commit",
        "./.git/config",
        ".GIT/config",
        "src/../.git/hooks/post-checkout",
        "../outside.txt",
        "src/../../outside.txt",
        "/etc/passwd",
        "vendor/.git/config",
        "a\\..\\..\\b",
    ],
)
def test_workspace_write_refuses_escapes_and_git(path: str) -> None:
    verdict = WorkspaceWritePolicy().decide(prepared(add(path)))
    assert not verdict.allowed, path
    assert path in verdict.reason or repr(path) in verdict.reason


def test_workspace_write_allow_and_deny_globs() -> None:
    policy = WorkspaceWritePolicy(allow=["src/**", "tests/*.py"], deny=["src/secrets/**", "**/*.lock"])
    assert policy.decide(prepared(add("src/pkg/mod.py"))).allowed
    assert policy.decide(prepared(add("tests/test_a.py"))).allowed
    assert not policy.decide(prepared(add("tests/sub/test_a.py"))).allowed  # * stays in one segment
    assert not policy.decide(prepared(add("src/secrets/key.py"))).allowed
    assert not policy.decide(prepared(add("src/SECRETS/key.py"))).allowed  # deny ignores case
    assert not policy.decide(prepared(add("SRC/a.py"))).allowed  # allow does not
    assert not policy.decide(prepared(add("src/poetry.lock"))).allowed
    assert not policy.decide(prepared(add("setup.py"))).allowed


def test_a_move_is_judged_on_both_ends() -> None:
    patch = "*** Begin Patch\n*** Update File: src/a.py\n*** Move to: .git/a.py\n@@\n-x\n+y\n*** End Patch\n"
    policy = WorkspaceWritePolicy(allow=["src/**"])
    assert set(prepared(patch).write_paths) == {"src/a.py", ".git/a.py"}
    assert not policy.decide(prepared(patch)).allowed


def test_one_bad_path_in_a_multi_file_patch_denies_the_whole_patch() -> None:
    patch = (
        "*** Begin Patch\n*** Add File: src/ok.py\n+x\n*** Add File: ../evil.py\n+y\n*** End Patch\n"
    )
    verdict = WorkspaceWritePolicy().decide(prepared(patch))
    assert not verdict.allowed and "../evil.py" in verdict.reason


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("a.py", "*.py", True),
        ("src/a.py", "*.py", True),  # gitignore: no slash, any depth
        ("src/a.py", "/*.py", False),
        ("src/a.py", "**/*.py", True),
        ("a.py", "**/*.py", True),
        ("src/deep/a.py", "src/**", True),
        ("src/deep/a.py", "src", True),
        ("srcx/a.py", "src", False),
        ("docs/a.md", "docs/[ab].md", True),
        ("docs/c.md", "docs/[!ab].md", True),
        ("./src/a.py", "src/*.py", True),
    ],
)
def test_glob_match(path: str, pattern: str, expected: bool) -> None:
    assert glob_match(path, pattern) is expected


def test_path_problem_accepts_normal_paths() -> None:
    assert path_problem("src/a.py") is None
    assert path_problem("./a.py") is None
    assert path_problem(".github/workflows/ci.yml") is None
    assert path_problem("") is not None


def test_approve_once_asks_and_remembers_always() -> None:
    answers = iter(["no", "yes", "always"])
    asked: list[list[str]] = []

    def ask(call: PreparedCall) -> str:
        asked.append(call.write_paths)
        return next(answers)

    policy = ApproveOncePolicy(ask)  # type: ignore[arg-type]
    first = policy.decide(prepared(add("a.py")))
    assert not first.allowed and first.asked
    assert policy.decide(prepared(add("a.py"))).allowed  # yes, once
    assert policy.decide(prepared(add("a.py"))).allowed  # always
    again = policy.decide(prepared(add("a.py")))
    assert again.allowed and not again.asked  # remembered: not asked again
    assert len(asked) == 3
    assert not policy.decide(prepared(add(".git/config"))).allowed  # hard rules: no question
    assert len(asked) == 3
