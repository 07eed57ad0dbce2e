"""Files the host runs by itself (hooks, direnv, editor config) are refused unless an allow rule names them;
paths with control characters are refused outright."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.protocol import TaskSpec
from agent.task.host_run import HOST_RUN_GLOBS, hooks_paths, host_run_globs
from agent.task.policy import WorkspaceWritePolicy, path_problem
from agent.task.runner import build_policy
from tests.agent.task.test_policy import add, prepared


@pytest.fixture(autouse=True)
def _own_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's git config is read too: each test gets an empty home of its own."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


@pytest.mark.parametrize(
    "path",
    [
        ".husky/pre-commit",
        ".husky/_/husky.sh",
        ".githooks/pre-push",
        ".envrc",
        ".ENVRC",
        ".vscode/tasks.json",
        ".idea/workspace.xml",
        "src/.envrc",
        "sub/project/.vscode/tasks.json",
        ".pre-commit-config.yaml",
        "./.husky/../.husky/pre-commit",
    ],
)
def test_host_run_files_are_denied_by_default(path: str) -> None:
    verdict = WorkspaceWritePolicy().decide(prepared(add(path)))
    assert not verdict.allowed, path


def test_broad_allow_rules_do_not_count_as_naming_a_host_run_file() -> None:
    policy = WorkspaceWritePolicy(allow=["**", ".*/**", ".*", "*"])
    for path in (".husky/pre-commit", ".envrc", ".vscode/settings.json"):
        assert not policy.decide(prepared(add(path))).allowed, path
    assert policy.decide(prepared(add("src/ok.py"))).allowed


def test_an_allow_rule_that_names_the_area_unlocks_it_and_only_it() -> None:
    policy = WorkspaceWritePolicy(allow=["**", ".husky/**", ".envrc"])
    assert policy.decide(prepared(add(".husky/pre-commit"))).allowed
    assert policy.decide(prepared(add(".envrc"))).allowed
    assert not policy.decide(prepared(add(".githooks/pre-commit"))).allowed
    nested = WorkspaceWritePolicy(allow=["**", "src/.envrc"])
    assert nested.decide(prepared(add("src/.envrc"))).allowed
    assert not nested.decide(prepared(add("lib/.envrc"))).allowed
    named_file = WorkspaceWritePolicy(allow=[".vscode/settings.json"])
    assert named_file.decide(prepared(add(".vscode/settings.json"))).allowed
    assert not named_file.decide(prepared(add(".vscode/tasks.json"))).allowed


def test_the_refusal_says_how_to_allow() -> None:
    verdict = WorkspaceWritePolicy().decide(prepared(add(".husky/pre-commit")))
    assert "--allow '.husky/**'" in verdict.reason
    verdict = WorkspaceWritePolicy().decide(prepared(add("src/.envrc")))
    assert "--allow 'src/.envrc'" in verdict.reason
    assert WorkspaceWritePolicy(allow=["**/.envrc"]).decide(prepared(add("src/.envrc"))).allowed


def _repo_with_config(tmp_path: Path, config: str) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text(config)
    return tmp_path


@pytest.mark.parametrize(
    ("config", "glob"),
    [
        ("[core]\n\thooksPath = hooks/git\n", "hooks/git/**"),
        ('[CORE]\n  HooksPath = "./scripts/hk/"  # comment\n', "scripts/hk/**"),
        ("[core] hookspath=ci/h\n", "ci/h/**"),
    ],
)
def test_core_hooks_path_is_denied_too(tmp_path: Path, config: str, glob: str) -> None:
    repo = _repo_with_config(tmp_path, config)
    assert glob in host_run_globs(repo)
    task = TaskSpec(repo=str(repo), goal="g", policy="workspace-write")
    policy = build_policy(task)
    hook = glob.replace("**", "pre-commit")
    assert not policy.decide(prepared(add(hook))).allowed
    assert policy.decide(prepared(add("src/x.py"))).allowed


def test_hooks_path_at_the_root_or_outside(tmp_path: Path) -> None:
    repo = _repo_with_config(tmp_path, "[core]\nhooksPath = .\n[core]\nhooksPath = /elsewhere/hooks\n")
    assert hooks_paths(repo) == [".", "/elsewhere/hooks"]
    globs = host_run_globs(repo)
    assert "pre-commit" in globs and "/elsewhere/hooks/**" not in globs
    inside = tmp_path / "inside"
    inside.mkdir()
    _repo_with_config(inside, f"[core]\nhooksPath = {inside / 'hk'}\n")
    assert "hk/**" in host_run_globs(inside)


def test_a_worktree_git_file_is_followed(tmp_path: Path) -> None:
    gitdir = tmp_path / "main.git" / "worktrees" / "w"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    (tmp_path / "main.git" / "config").write_text("[core]\nhooksPath = .hk\n")
    work = tmp_path / "w"
    work.mkdir()
    (work / ".git").write_text(f"gitdir: {gitdir}\n")
    assert ".hk/**" in host_run_globs(work)


def test_a_relative_hooks_path_in_the_users_config_applies_to_the_repo(tmp_path: Path, _own_home: Path) -> None:
    (_own_home / ".gitconfig").write_text("[core]\n\thooksPath = .hooks\n")
    (_own_home / ".config" / "git").mkdir(parents=True)
    (_own_home / ".config" / "git" / "config").write_text("[core]\n\thooksPath = tools/githooks\n")
    repo = _repo_with_config(tmp_path, "")
    globs = host_run_globs(repo)
    assert ".hooks/**" in globs and "tools/githooks/**" in globs


def test_a_git_dir_inside_the_tree_is_protected(tmp_path: Path) -> None:
    (tmp_path / ".gd" / "hooks").mkdir(parents=True)
    (tmp_path / ".gd" / "config").write_text("[core]\n")
    (tmp_path / ".git").write_text("gitdir: .gd\n")
    policy = WorkspaceWritePolicy(protected=host_run_globs(tmp_path))
    assert not policy.decide(prepared(add(".gd/hooks/pre-commit"))).allowed


def test_no_git_config_leaves_the_fixed_list(tmp_path: Path) -> None:
    assert host_run_globs(tmp_path) == list(HOST_RUN_GLOBS)


@pytest.mark.parametrize("path", ["a\x1b]52;c;aGk=\x07.py", "x\r.py", "tab\there", "bidi\u202egnp.py", "a\x9bb"])
def test_paths_with_control_characters_are_refused(path: str) -> None:
    assert path_problem(path) == "control character in path"
    assert not WorkspaceWritePolicy().decide(prepared(add(path))).allowed
