"""docs/cli.md is the parser's own rendering: a flag added, renamed or re-worded without
regenerating the page fails here, so the reference cannot drift from `codebox --help`."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agent.cli.parser import build_parser
from agent.cli.reference import render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_the_committed_page_is_the_parser_s_rendering() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/cli.md is out of date: run `python -m agent.cli.reference > docs/cli.md`"
    )


def _every_parser(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(parser.prog, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.extend(_every_parser(sub))
    return found


def test_every_command_and_every_flag_is_on_the_page() -> None:
    page = render()
    for prog, parser in _every_parser(build_parser()):
        assert f"`{prog}`" in page
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in page, (prog, flag)


def test_the_page_does_not_depend_on_this_machine_s_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "codebox" / "codebox.toml"
    config.parent.mkdir()
    config.write_text('model = "my-own-model"\nmax_steps = 7\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("CODEBOX_JOBS", "5")
    page = render()
    assert "my-own-model" not in page and str(tmp_path) not in page
    assert page == PAGE.read_text(encoding="utf-8")


def test_help_text_is_escaped_as_markdown() -> None:
    page = render()
    assert "`--allow GLOB`: writable paths, gitignore-style globs (default: \\*\\*)" in page
    assert "codebox-\\<id\\>.diff" in page  # not swallowed as an HTML tag
