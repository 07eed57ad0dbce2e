"""The command line's own mistakes (an unknown flag, a missing argument, a mistyped command) as
one line with exit code 2, and a did-you-mean for a flag or a command that is close to a real one.

Python 3.11's argparse prints its whole usage block and no suggestion (3.14 has
``suggest_on_error``); difflib finds the nearest names of the command that was being parsed.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from typing import NoReturn

from agent.escape import one_line

EXIT_USAGE = 2
_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)'")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _invoked(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The (sub)command the words name: `run`, `env build`; the parser itself when none does."""
    current = parser
    for word in argv:
        if word == "--":
            break
        choices = _subparsers(current)
        if word in choices:
            current = choices[word]
    return current


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    return [flag for action in parser._actions for flag in action.option_strings if flag.startswith("--")]


def _unknown_flags(command: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """The --words of argv that are no flag of the command (nor an abbreviation of one)."""
    known = [*_flags(command), "--help", "--version"]
    words = argv[: argv.index("--")] if "--" in argv else argv
    return [
        word for word in words
        if word.startswith("--") and not any(flag.startswith(word.split("=", 1)[0]) for flag in known)
    ]


def _hint(parser: argparse.ArgumentParser, message: str, argv: list[str]) -> str:
    """A did-you-mean for the first mistyped flag or choice that is close to a real one."""
    command = _invoked(parser, argv)
    choice = _INVALID_CHOICE.search(message)
    if choice is not None:
        offered = re.findall(r"'([^']*)'", message[choice.end():])
        near = difflib.get_close_matches(choice.group(1), offered, n=1, cutoff=0.5)
        return f": did you mean {near[0]}?" if near else ""
    for word in _unknown_flags(command, argv):
        positional = _positional_named(command, word.split("=", 1)[0].lstrip("-"))
        if positional:
            return f": give {positional} without a flag"
        flag = _nearest_flag(word.split("=", 1)[0], _flags(command))
        if flag:
            return f": did you mean {flag}?"
    return ""


def _positional_named(command: argparse.ArgumentParser, name: str) -> str | None:
    """The positional argument a flag-looking word names (`batch --tasks F`, as eval spells it)."""
    for action in command._actions:
        if not action.option_strings and action.dest == name.replace("-", "_"):
            return action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    return None


def _nearest_flag(word: str, flags: list[str]) -> str | None:
    """The flag closest to a mistyped one, compared without the dashes every flag shares (with
    them, --tasks was 0.62 alike to --address)."""
    by_name = {flag.lstrip("-"): flag for flag in flags}
    near = difflib.get_close_matches(word.lstrip("-"), list(by_name), n=1, cutoff=0.6)
    return by_name[near[0]] if near else None


def _message(parser: argparse.ArgumentParser, message: str, argv: list[str]) -> str:
    """argparse's message, led by the unknown flags when there are any: argparse says a required
    argument is missing before it says a flag is unknown, so `--rpo .` read "the following
    arguments are required: --repo", about the flag the user did try to give."""
    unknown = _unknown_flags(_invoked(parser, argv), argv)
    if unknown and not message.startswith("unrecognized arguments"):
        return "unrecognized arguments: " + " ".join(unknown)
    return message


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) and did-you-mean; subcommands inherit it."""

    def error(self, message: str) -> NoReturn:
        argv = sys.argv[1:] if _ARGV is None else _ARGV
        command = _invoked(self, argv).prog if self.prog == _root_prog(self) else self.prog
        message = _message(self, message, argv)
        hint = _hint(self, message, argv)
        text = f"{command}: {message}{hint} (see {command} --help)"
        self.exit(EXIT_USAGE, one_line(text, 400) + "\n")


_ARGV: list[str] | None = None  # the words being parsed, when not sys.argv (main(argv) in tests)


def _root_prog(parser: argparse.ArgumentParser) -> str:
    return parser.prog.split(" ", 1)[0]


def parse_args(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """parser.parse_args(argv), its errors knowing the words they are about."""
    global _ARGV
    _ARGV = argv
    try:
        return parser.parse_args(argv)
    finally:
        _ARGV = None
