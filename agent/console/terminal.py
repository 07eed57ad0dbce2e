"""Whether a stream gets colours and a live status line, and the rich Console that writes to it.

rich is imported only when a terminal is written to: a run whose output goes to a file or a
pipe prints its summary as plain text, and with --quiet draws no live console: it never loads rich.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TextIO

from agent.escape import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


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
    from rich.console import Console

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
    from rich.text import Text

    return Text(printable(text), style=style)


class Styled:
    """A line as (text, style) pieces, built without rich; ``to_rich`` makes the rich Text a terminal shows.

    Like rich's Text: the first piece's style is the style of the whole line, each later piece's
    style applies to that piece.
    """

    def __init__(self, text: str = "", style: str = "") -> None:
        self.pieces: list[tuple[str, str]] = [(text, style)]

    def append(self, text: str, style: str = "") -> Styled:
        self.pieces.append((text, style))
        return self

    def __add__(self, other: Styled) -> Styled:
        joined = Styled()
        joined.pieces = [*self.pieces, *other.pieces]
        return joined

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.pieces)

    def to_rich(self) -> Text:
        from rich.text import Text

        (first, style), *rest = self.pieces
        line = Text(first, style=style)
        for text, piece_style in rest:
            line.append(text, style=piece_style)
        return line


def safe_styled(text: object, style: str = "") -> Styled:
    """Foreign text as a Styled piece: escaped first, then styled."""
    return Styled(printable(text), style)


class Writer:
    """Writes lines (rich Text or Styled): styled through rich on a terminal, as plain text elsewhere."""

    def __init__(self, stream: TextIO, styled: bool | None = None) -> None:
        self.stream = stream
        self.styled = wants_styles(stream) if styled is None else styled
        self.console: Console | None = make_console(stream) if self.styled else None

    def line(self, text: Text | Styled) -> None:
        if self.console is not None:
            self.console.print(text.to_rich() if isinstance(text, Styled) else text)
        else:
            self.stream.write(text.plain + "\n")
            self.stream.flush()
