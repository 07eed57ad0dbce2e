"""The glob dialect: the table of cases in docs/policy.md, checked against the policy's matcher
(allow and deny) and the in-container search's matcher, so the documentation cannot drift from either."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.task.globs import MAX_EXPANSIONS, GlobRules, expand_braces
from agent.task.policy import WorkspaceWritePolicy
from sandbox.tools.search import GlobSet

GLOB_PAGE = Path(__file__).resolve().parents[3] / "docs" / "policy.md"


def documented_cases() -> list[tuple[str, str, bool, bool, bool]]:
    text = GLOB_PAGE.read_text(encoding="utf-8")
    table = text.split("<!-- glob-cases")[1].split("<!-- /glob-cases -->")[0]
    cases = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith("`"):
            continue
        pattern, path = (c.strip("`") for c in cells[:2])
        allow, deny, search = (c == "yes" for c in cells[2:])
        cases.append((pattern, path, allow, deny, search))
    return cases


CASES = documented_cases()


def test_the_docs_have_the_cases_the_issue_names() -> None:
    patterns = {case[0] for case in CASES}
    assert len(CASES) >= 15
    assert {"*.pem", "**/x", "*.{pem,key}", "build/", "src"} <= patterns


@pytest.mark.parametrize(("pattern", "path", "allow", "deny", "search"), CASES,
                         ids=[f"{c[0]} {c[1]}" for c in CASES])
def test_policy_and_search_match_as_documented(pattern: str, path: str, allow: bool, deny: bool, search: bool) -> None:
    assert GlobRules([pattern]).matches(path) is allow
    assert GlobRules([pattern], ignore_case=True).matches(path) is deny
    assert GlobSet([pattern]).allow_file(path) is search
    # And through the policy itself: an allow rule lets the write through, a deny rule stops it.
    assert (WorkspaceWritePolicy(allow=[pattern]).path_verdict(path) is None) is allow
    assert (WorkspaceWritePolicy(deny=[pattern]).path_verdict(path) is None) is not deny


def test_deny_star_pem_covers_keys_at_any_depth() -> None:
    policy = WorkspaceWritePolicy(deny=["*.pem"])
    for path in ("key.pem", "certs/key.pem", "a/b/c/KEY.PEM"):
        assert policy.path_verdict(path) == "matches a deny rule", path
    assert policy.path_verdict("certs/key.txt") is None


def test_negation_takes_back_within_a_list() -> None:
    policy = WorkspaceWritePolicy(allow=["src/**", "!src/generated/**"])
    assert policy.path_verdict("src/a.py") is None
    assert policy.path_verdict("src/generated/x.py") is not None


def test_no_glob_undoes_the_hard_rules() -> None:
    policy = WorkspaceWritePolicy(allow=["**", ".git/**", "!.git/**"], deny=["!.git/**"])
    assert policy.path_verdict(".git/config") == ".git is never writable"
    assert policy.path_verdict("a/../../x") == "'..' in path"
    assert policy.path_verdict("/etc/passwd") == "absolute path"
    assert policy.path_verdict("a\x00b") == "empty path or NUL byte"


def test_brace_expansion() -> None:
    assert expand_braces("*.{pem,key}") == ["*.pem", "*.key"]
    assert expand_braces("{a,{b,c}}/x") == ["a/x", "b/x", "c/x"]
    assert expand_braces("{a}") == ["{a}"]  # no comma: literal, as in a shell
    assert expand_braces("a{b,c") == ["a{b,c"]  # unclosed: literal
    assert expand_braces(r"\{a,b}") == [r"\{a,b}"]  # escaped
    assert len(expand_braces("{a,b}" * 12)) == MAX_EXPANSIONS  # bounded


def test_the_docs_document_the_search_glob_as_the_same_syntax() -> None:
    text = GLOB_PAGE.read_text(encoding="utf-8")
    assert re.search(r"search.{0,80}glob.{0,80}same syntax", text, re.S)
