"""The parser a command runs with gets only that command's arguments (agent/cli/parser.py: _OnlyChosen);
what it prints and parses is the whole parser's: every command listed, the chosen one whole."""

from __future__ import annotations

import argparse

import pytest

from agent.cli.parser import build_parser, chosen_command


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _helps(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    """Every parser's help under ``parser`` (itself included), by prog."""
    found = [(parser.prog, parser.format_help())]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.extend(_helps(sub))
    return found


COMMANDS = list(_subparsers(build_parser()))


@pytest.mark.parametrize("name", COMMANDS)
def test_a_parser_for_one_command_helps_as_the_whole_parser(name: str) -> None:
    whole, chosen = build_parser(), build_parser(chosen=name)
    assert chosen.format_help() == whole.format_help()
    assert list(_subparsers(chosen)) == COMMANDS
    assert _helps(_subparsers(chosen)[name]) == _helps(_subparsers(whole)[name])


@pytest.mark.parametrize("argv", [
    ["env", "build", "--repo", ".", "--extra", "test", "--as-of", "now"],
    ["run", "--repo", ".", "--max-steps", "3", "fix it"],
    ["batch", "tasks.jsonl", "--jobs", "2"],
    ["image", "build", "--force"],
])
def test_a_parser_for_one_command_parses_as_the_whole_parser(argv: list[str]) -> None:
    chosen = chosen_command(argv)
    assert chosen == argv[0]
    assert vars(build_parser(chosen=chosen).parse_args(argv)) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize(("argv", "command"), [
    ([], None), (["--version"], None), (["--help"], None), (["-h", "env"], "env"), (["--", "run"], None),
    (["nope", "--repo", "."], "nope"),
])
def test_the_chosen_command_is_the_first_word_that_is_no_option(argv: list[str], command: str | None) -> None:
    assert chosen_command(argv) == command
