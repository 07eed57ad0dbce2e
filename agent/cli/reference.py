"""The CLI reference page (docs/cli.md), rendered from the parser itself so it cannot drift.

`python -m agent.cli.reference > docs/cli.md` writes it; a test compares the committed page
with a fresh rendering. The parser is built with the built-in defaults (not this machine's
config files), and the usage lines are composed here rather than by argparse, whose layout
depends on the terminal's width and on the Python version.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator

from agent.cli.parser import CONFIG_EPILOG, build_parser

HEADER = """# Command-line reference

<!-- Generated from the parser by `python -m agent.cli.reference > docs/cli.md`: do not edit by hand.
     tests/docs/test_cli_reference.py fails when this page and the parser disagree. -->

Every command and flag of `codebox`, with the built-in defaults (a config file or a `CODEBOX_*`
variable changes them: `codebox run --help` shows the defaults in effect on your machine).
"""
USER_CONFIG = "~/.config/codebox/codebox.toml"
_CODE_SPAN = re.compile(r"(`[^`]*`)")
_MARKDOWN_SPECIALS = re.compile(r"([\\*_<>\[\]])")


def _markdown_text(text: str) -> str:
    """Help text as Markdown shows it: globs (`src/**`) and placeholders (`<id>`) stay literal."""
    parts = _CODE_SPAN.split(text)
    return "".join(part if part.startswith("`") else _MARKDOWN_SPECIALS.sub(r"\\\1", part) for part in parts)


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str]]:
    """(name, parser, one-line help) of each subcommand, in the parser's order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return [(name, sub, helps.get(name, "")) for name, sub in action.choices.items()]
    return []


def _metavar(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "{" + ",".join(str(c) for c in action.choices) + "}"
    return action.dest.upper() if action.option_strings else action.dest


def _default(action: argparse.Action) -> str | None:
    """The default worth showing, as `codebox --help` would (None, False and [] are no default)."""
    default = action.default
    if default in (None, False, [], argparse.SUPPRESS) or action.nargs == 0:
        return None
    return str(default)


def _help(action: argparse.Action) -> str:
    text = (action.help or "").replace("%(default)s", str(action.default))
    default = _default(action)
    if default is not None and "default" not in text:
        text = f"{text} (default: {default})" if text else f"default: {default}"
    return " ".join(text.split())


def _option_line(action: argparse.Action) -> str:
    metavar = _metavar(action)
    names = ", ".join(f"`{name}{' ' + metavar if metavar else ''}`" for name in action.option_strings)
    if not action.option_strings:
        names = f"`{metavar}`"
    help_text = _markdown_text(_help(action))
    return f"- {names}" + (f": {help_text}" if help_text else "")


def _usage(prog: str, parser: argparse.ArgumentParser) -> str:
    required, positionals = [], []
    optional = False
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if not action.option_strings:
            positionals.append(_metavar(action) + (" ..." if action.nargs in ("*", "+") else ""))
        elif action.required:
            required.append(f"{action.option_strings[0]} {_metavar(action)}".strip())
        else:
            optional = True
    words = [prog, *(["[options]"] if optional else []), *required, *positionals]
    if _subcommands(parser):
        words.append("COMMAND")
    return " ".join(words)


def _section(prog: str, parser: argparse.ArgumentParser, summary: str, level: int) -> Iterator[str]:
    yield f"{'#' * level} `{prog}`"
    yield ""
    if summary:
        yield _markdown_text(summary[0].upper() + summary[1:] + ("" if summary.endswith(".") else "."))
        yield ""
    yield "```text"
    yield _usage(prog, parser)
    yield "```"
    yield ""
    for group in parser._action_groups:
        actions = [
            a for a in group._group_actions
            if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction) and a.help != argparse.SUPPRESS
        ]
        if not actions:
            continue
        title = {"positional arguments": "Arguments", "options": "Options"}.get(group.title or "", group.title)
        yield f"{title[0].upper() + title[1:]}:" if title else "Options:"
        yield ""
        yield from (_option_line(a) for a in actions)
        yield ""
    for name, sub, help_text in _subcommands(parser):
        yield from _section(f"{prog} {name}", sub, help_text, level + 1)


def render() -> str:
    """The whole page, as committed in docs/cli.md."""
    parser = build_parser()
    lines = [HEADER]
    lines.append(_markdown_text(CONFIG_EPILOG.format(user=USER_CONFIG)))
    lines.append("")
    lines.extend(_section("codebox", parser, "", 2))
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
