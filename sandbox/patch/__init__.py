"""The Codex ``apply_patch`` format: parse a patch, verify it, apply it atomically.

Stdlib only, python3 >= 3.9: the in-container server imports this package. The grammar is
documented in :mod:`sandbox.patch.parser`. The package is split the way Codex splits
``codex-rs/apply-patch``, each module importing only the ones above it:

- ``errors``: :class:`PatchError` and the wording of its messages;
- ``parser``: the grammar, wrappers (heredoc, code fence), sections and hunks;
- ``paths``: the relative form of a patch path and the rules it must pass;
- ``seek``: finding a hunk's lines in a file (four levels), the closest region for an error;
- ``update``: a file's new text from its hunks;
- ``diff``: the unified diff the model reads;
- ``plan``: every check and every new content in memory, the symlink rules;
- ``commit``: writing, with rollback;
- ``apply``: :func:`apply_patch` and :class:`PatchResult`;
- ``cli`` (and ``__main__``): ``python -m sandbox.patch --root DIR``.

Semantics follow Codex's ``codex-rs/apply-patch`` so that patches written by models
trained on it mean the same thing here:

- Context and removed lines are searched forward from the previous hunk, with decreasing
  strictness: exact, ignoring trailing whitespace, ignoring surrounding whitespace, then
  with common Unicode punctuation (dashes, curly quotes, odd spaces) normalised.
- ``@@ <line>`` narrows the search to after that line; ``*** End of File`` anchors a hunk at
  the end of the file; a hunk with no context or removed lines appends at the end.
- Add File over an existing file replaces it; Move to over an existing file replaces it.
- Each line keeps its line ending (LF or CRLF); added lines take the file's first ending;
  an updated file always ends with a newline.

Where codebox differs on purpose:

- Atomic: every path is checked and every new content computed before anything is written,
  and a failure while writing rolls back what was written. Codex's standalone tool keeps the
  files it wrote before a failing hunk. Operations still apply in patch order (an Update
  after an Add of the same file sees the added content), in memory.
- Strict on ambiguity: a file's first hunk whose lines match in several places, with no
  ``@@`` line to place it, is an error (Codex takes the first place).
- Context lines keep the file's own text, so a fuzzy match never rewrites lines that the
  patch marks as unchanged (Codex writes the patch's version of them).
- A hunk with an ``@@`` line and only added lines inserts right after the ``@@`` line
  (Codex appends it at the end of the file). Several ``@@`` lines in a row narrow step by
  step, and an ``@@`` line repeated as the hunk's first context line is accepted.
- Paths must be relative, stay under the root (symlinks included) and never enter ``.git``.
  Deleting a symlink removes the link; updating through one writes its target.
- ``*** Move to:`` the same path is a plain update (Codex would delete the file); a binary
  file can be deleted (Codex cannot read it); a UTF-8 byte-order mark is kept.

Errors are :class:`PatchError`. ``str(error)`` is the message for the model and starts with
the wording of Codex's agent tool (``apply_patch verification failed: ...``, ``patch
rejected: ...``); ``error.cli_message`` starts with the wording of Codex's standalone
``apply_patch`` command, which ``python -m sandbox.patch`` prints.
"""

from sandbox.patch.apply import (
    DEFAULT_MAX_DIFF_CHARS,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_PATCH_BYTES,
    PatchResult,
    apply_patch,
)
from sandbox.patch.cli import main
from sandbox.patch.errors import PatchError
from sandbox.patch.parser import (
    ADD_FILE,
    BEGIN_PATCH,
    DELETE_FILE,
    END_OF_FILE,
    END_PATCH,
    MOVE_TO,
    UPDATE_FILE,
    Chunk,
    FileOp,
    Patch,
    parse_patch,
    patch_paths,
)
from sandbox.patch.paths import normalize_path

__all__ = [
    "ADD_FILE",
    "BEGIN_PATCH",
    "DEFAULT_MAX_DIFF_CHARS",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_PATCH_BYTES",
    "DELETE_FILE",
    "END_OF_FILE",
    "END_PATCH",
    "MOVE_TO",
    "UPDATE_FILE",
    "Chunk",
    "FileOp",
    "Patch",
    "PatchError",
    "PatchResult",
    "apply_patch",
    "main",
    "normalize_path",
    "parse_patch",
    "patch_paths",
]
