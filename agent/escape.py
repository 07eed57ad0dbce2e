"""The one escaping function every console path uses: text from a model, a repository or a tool
never reaches the terminal with a control character in it.

A terminal obeys escape sequences wherever they come from: OSC 52 writes the clipboard, OSC 0
sets the window title, ``ESC c`` / ``CSI 2J`` clear the screen, a carriage return or backspace
hides what came before. Every string that did not come from codebox itself goes through
``printable`` before it is written.
"""

from __future__ import annotations

import unicodedata

# Kept as they are: a line break (only where the caller allows several lines) and a tab.
_TAB = "\t"


def _shown(char: str) -> str:
    """A control or invisible character as its Python escape: ESC -> \\x1b, U+202E -> \\u202e."""
    return repr(char)[1:-1]


def _safe(char: str) -> bool:
    if char == _TAB:
        return True
    if char.isprintable():
        return True
    # isprintable() refuses every separator but the space; the other spaces are harmless.
    return unicodedata.category(char) == "Zs"


def printable(text: object, *, multiline: bool = False) -> str:
    """``text`` with every control character (C0, DEL, C1), format character (bidi overrides,
    zero-width) and unassigned or private code point shown as an escape.

    With ``multiline``, line breaks stay (``\\r\\n`` becomes ``\\n``, a lone ``\\r`` is escaped); without,
    they are escaped too, so the result is exactly one line.
    """
    value = text if isinstance(text, str) else str(text)
    if multiline:
        value = value.replace("\r\n", "\n")
        return "\n".join(_escape_line(line) for line in value.split("\n"))
    return _escape_line(value)


def _escape_line(line: str) -> str:
    if line.isprintable():  # the common case: nothing to do, no per-character work
        return line
    return "".join(c if _safe(c) else _shown(c) for c in line)


def one_line(text: object, limit: int = 0) -> str:
    """Whitespace runs (line breaks included) folded to one space, escaped, cut to ``limit`` (0: no cut)."""
    value = text if isinstance(text, str) else str(text)
    folded = printable(" ".join(value.split()))
    if limit and len(folded) > limit:
        return folded[: max(limit - 1, 0)] + "…"
    return folded
