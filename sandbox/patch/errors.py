"""PatchError and the wording of its messages: Codex's agent tool for the model, Codex's CLI for the CLI."""

from __future__ import annotations

from typing import Optional

_VERIFY = "apply_patch verification failed: "
OUTSIDE_ROOT = "patch rejected: writing outside of the project; rejected by user approval settings"
NOTHING_CHANGED = "No files were changed: the patch applies entirely or not at all."

# The width of a line of the file or of the patch shown in an error.
_MAX_SHOWN_CHARS = 300


class PatchError(Exception):
    """A patch that cannot be applied. ``str(error)`` is the message the model sees.

    ``cli_message`` is the same error worded like Codex's standalone ``apply_patch``
    command (what ``python -m sandbox.patch`` prints on standard error).
    """

    def __init__(self, message: str, cli_message: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.cli_message = message if cli_message is None else cli_message


def invalid_patch(message: str, hint: str = "") -> PatchError:
    """The patch as a whole is malformed (its markers, its encoding)."""
    tail = ("\n" + hint if hint else "") + "\n" + NOTHING_CHANGED
    return PatchError(
        _VERIFY + "invalid patch: " + message + tail,
        "Invalid patch: " + message + tail,
    )


def invalid_hunk(line: int, message: str, hint: str = "") -> PatchError:
    """A section or hunk starting at patch line ``line`` (1 = ``*** Begin Patch``) is malformed."""
    tail = ("\n" + hint if hint else "") + "\n" + NOTHING_CHANGED
    return PatchError(
        "%sinvalid hunk at line %d, %s%s" % (_VERIFY, line, message, tail),
        "Invalid patch hunk on line %d: %s%s" % (line, message, tail),
    )


def verification_failed(message: str) -> PatchError:
    """A well-formed patch that does not fit the files (lines not found, unreadable file...)."""
    text = message + "\n" + NOTHING_CHANGED
    return PatchError(_VERIFY + text, text)


def rejected(message: str) -> PatchError:
    """A patch refused by the safety rules or the limits; the message is the same for both wordings."""
    return PatchError(message + "\n" + NOTHING_CHANGED)


def shorten(text: str, limit: int = _MAX_SHOWN_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "... (%d more characters)" % (len(text) - limit)


def os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)
