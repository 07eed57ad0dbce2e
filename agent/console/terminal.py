"""Whether a stream gets colours and a live status line, and the rich Console that writes to it."""

from __future__ import annotations

import os
from typing import TextIO

from rich.console import Console
from rich.text import Text

from agent.console.escape import printable


def wants_styles(stream: TextIO, environ: dict[str, str] | None = None) -> bool:
    """Colours and a live status line only on a terminal, and not when NO_COLOR is set
    (no-color.org: present and not empty) or TERM is ``dumb``."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: plain text
        return False


def make_console(stream: TextIO) -> Console:
    """A rich Console for a terminal: no markup, emoji or highlighting of what we print (the text
    is data, never rich markup), lines never wrapped by rich (the terminal wraps)."""
    return Console(
        file=stream,
        force_terminal=True,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=True,
    )


def safe(text: object, style: str = "") -> Text:
    """Foreign text as a rich Text: escaped first, then styled (never parsed as markup)."""
    return Text(printable(text), style=style)


class Writer:
    """Writes Text lines: styled through rich on a terminal, as plain text elsewhere."""

    def __init__(self, stream: TextIO, styled: bool | None = None) -> None:
        self.stream = stream
        self.styled = wants_styles(stream) if styled is None else styled
        self.console: Console | None = make_console(stream) if self.styled else None

    def line(self, text: Text) -> None:
        if self.console is not None:
            self.console.print(text)
        else:
            self.stream.write(text.plain + "\n")
            self.stream.flush()
