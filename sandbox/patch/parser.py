"""Parse Codex ``apply_patch`` text into file operations; errors name the patch line.

The grammar, with ``NL`` a line ending (LF or CRLF) and ``text`` the rest of a line::

    patch     = "*** Begin Patch" NL { section } "*** End Patch" [ NL ]
    section   = add | delete | update
    add       = "*** Add File: " path NL { "+" text NL }
    delete    = "*** Delete File: " path NL
    update    = "*** Update File: " path NL [ "*** Move to: " path NL ] hunk { hunk }
    hunk      = { "@@" [ " " text ] NL } hunk-line { hunk-line } [ "*** End of File" NL ]
    hunk-line = ( " " | "-" | "+" ) text NL

A hunk's ``@@`` lines may be left out only in the first hunk of a section. For example::

    *** Begin Patch
    *** Add File: path/new.py
    +line one
    *** Delete File: path/old.py
    *** Update File: path/a.py
    *** Move to: path/b.py
    @@ def handler():
     context line
    -removed line
    +added line
    *** End of File
    *** End Patch

Also accepted, where models are sloppy and the meaning is clear:

- whitespace around the patch, its markers and its ``@@`` lines (before ``@@`` only where a
  hunk starts: a ``" @@"`` line after an ``@@`` line is a context line);
- the patch wrapped in a heredoc (``<<'EOF'`` ... ``EOF``, also ``apply_patch <<EOF``) or a
  code fence, up to four wrappers deep;
- blank lines between sections; a blank line between ``+`` lines of an Add File section is an
  empty added line, and a blank line in a hunk is an empty context line;
- unified-diff hunk lines ``@@ -a,b +c,d @@ text``, read as ``@@ text``.

Line numbers in errors count from 1 at ``*** Begin Patch`` (inside any wrapper).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from sandbox.patch.errors import PatchError, invalid_hunk, invalid_patch, shorten

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File:"
DELETE_FILE = "*** Delete File:"
UPDATE_FILE = "*** Update File:"
MOVE_TO = "*** Move to:"
END_OF_FILE = "*** End of File"

_VALID_HEADERS = "Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"
_LINE_PREFIX_RULE = "Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"


# --------------------------------------------------------------------------------------
# The parsed patch
# --------------------------------------------------------------------------------------


@dataclass
class Chunk:
    """One ``@@`` hunk of an Update File section.

    ``lines`` holds ``(kind, text)`` pairs in patch order, kind being ``" "`` (context),
    ``"-"`` (removed) or ``"+"`` (added). ``headers`` are the ``@@ <line>`` texts that
    narrow the search, in order. ``line`` is the patch line (1 = ``*** Begin Patch``) where
    the hunk starts.
    """

    headers: List[str]
    lines: List[Tuple[str, str]]
    end_of_file: bool = False
    line: int = 0

    @property
    def old_lines(self) -> List[str]:
        return [text for kind, text in self.lines if kind != "+"]

    @property
    def new_lines(self) -> List[str]:
        return [text for kind, text in self.lines if kind != "-"]


@dataclass
class FileOp:
    """One file section of a patch: ``kind`` is ``"add"``, ``"delete"`` or ``"update"``.

    ``path`` and ``move_to`` are as written in the patch (surrounding whitespace removed);
    :func:`normalize_path` gives the form the engine resolves under the root.
    """

    kind: str
    path: str
    move_to: Optional[str] = None
    contents: str = ""
    chunks: List[Chunk] = field(default_factory=list)
    line: int = 0


@dataclass
class Patch:
    """A parsed patch: its file operations in patch order."""

    operations: List[FileOp]

    def paths(self) -> List[Tuple[str, str]]:
        """(operation, path) pairs; a move adds ``("move", destination)``."""
        out: List[Tuple[str, str]] = []
        for op in self.operations:
            out.append((op.kind, op.path))
            if op.move_to is not None:
                out.append(("move", op.move_to))
        return out


# --------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------

_HEREDOC_START = re.compile(
    r"""^(?:(?:apply_patch|applypatch)\s+)?<<-?\s*"""
    r"""(?:'(?P<sq>[A-Za-z_][A-Za-z0-9_]*)'|"(?P<dq>[A-Za-z_][A-Za-z0-9_]*)"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))$"""
)
_FENCE_START = re.compile(r"^(?P<fence>`{3,}|~{3,})[A-Za-z0-9_+.\-]*$")
_UNIFIED_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@(?P<rest>.*)$")
_SECTION_MARKERS = (ADD_FILE, DELETE_FILE, UPDATE_FILE, END_PATCH)
_FILE_HEADER_HINTS = (
    (MOVE_TO, "'*** Move to: {path}' must come right after its '*** Update File: {path}' line."),
    (END_OF_FILE, "'*** End of File' ends the lines of an update hunk; it cannot stand alone."),
    (BEGIN_PATCH, "A patch has exactly one '*** Begin Patch' line, the first one."),
    (END_PATCH, "'*** End Patch' must be the last line of the patch."),
)


def _patch_lines(text: str) -> List[str]:
    stripped = text.strip()
    if not stripped:
        return []
    return [line[:-1] if line.endswith("\r") else line for line in stripped.split("\n")]


def _check_boundaries(lines: List[str]) -> List[str]:
    """The lines between ``*** Begin Patch`` and ``*** End Patch`` (Codex's strict check)."""
    first = lines[0].strip() if lines else None
    last = lines[-1].strip() if lines else None
    if len(lines) >= 2 and first == BEGIN_PATCH and last == END_PATCH:
        return lines[1:-1]
    if first != BEGIN_PATCH:
        if first is None:
            hint = "The patch is empty: send the patch text, from '*** Begin Patch' to '*** End Patch'."
        else:
            hint = "The first line is: %s" % shorten(lines[0])
        raise invalid_patch("The first line of the patch must be '*** Begin Patch'", hint)
    raise invalid_patch(
        "The last line of the patch must be '*** End Patch'",
        "The patch may have been cut off: send it again, complete, ending with '*** End Patch'.",
    )


def _unwrap(lines: List[str]) -> Optional[List[str]]:
    """The inside of a heredoc (``<<'EOF'`` ... ``EOF``) or code fence, if the patch is wrapped."""
    if len(lines) < 3:
        return None
    first = lines[0].strip()
    last = lines[-1].strip()
    inner: Optional[List[str]] = None
    heredoc = _HEREDOC_START.match(first)
    if heredoc is not None:
        word = heredoc.group("sq") or heredoc.group("dq") or heredoc.group("bare")
        if last == word:
            inner = lines[1:-1]
    fence = _FENCE_START.match(first)
    if fence is not None and last == fence.group("fence"):
        inner = lines[1:-1]
    if inner is None:
        return None
    while inner and not inner[0].strip():
        inner = inner[1:]
    while inner and not inner[-1].strip():
        inner = inner[:-1]
    return inner


_MAX_WRAPPERS = 4  # a heredoc in a fence in a heredoc is sloppy; deeper is not a patch


def _body(lines: List[str]) -> List[str]:
    """The lines between the markers, after peeling off heredoc / code-fence wrappers."""
    for _ in range(_MAX_WRAPPERS):
        try:
            return _check_boundaries(lines)
        except PatchError:
            inner = _unwrap(lines)
            if inner is None:
                raise
            lines = inner
    return _check_boundaries(lines)


def parse_patch(text: str) -> Patch:
    """Parse patch text into its file operations. Does not touch the disk.

    Lenient where models are sloppy and the meaning is clear: whitespace around markers and
    ``@@`` lines, a heredoc or code fence around the patch, blank lines between sections,
    blank context lines without their leading space, several ``@@`` lines in a row, and
    unified-diff ``@@ -a,b +c,d @@`` hunk lines. Raises :class:`PatchError` otherwise.
    """
    body = _body(_patch_lines(text))
    ops: List[FileOp] = []
    i = 0
    while i < len(body):
        stripped = body[i].strip()
        if not stripped:
            i += 1
            continue
        lineno = i + 2
        if stripped.startswith(ADD_FILE):
            path = _header_path(stripped, ADD_FILE, lineno)
            i, contents = _parse_add_lines(body, i + 1)
            ops.append(FileOp("add", path, contents=contents, line=lineno))
        elif stripped.startswith(DELETE_FILE):
            ops.append(FileOp("delete", _header_path(stripped, DELETE_FILE, lineno), line=lineno))
            i += 1
        elif stripped.startswith(UPDATE_FILE):
            path = _header_path(stripped, UPDATE_FILE, lineno)
            i += 1
            move_to: Optional[str] = None
            if i < len(body) and body[i].strip().startswith(MOVE_TO):
                move_to = _header_path(body[i].strip(), MOVE_TO, i + 2)
                i += 1
            i, chunks = _parse_chunks(body, i)
            if not chunks:
                raise invalid_hunk(
                    lineno,
                    "Update file hunk for path '%s' is empty" % path,
                    "An '*** Update File:' section needs at least one hunk: an '@@' line followed by "
                    "' ' context, '-' removed and '+' added lines.",
                )
            ops.append(FileOp("update", path, move_to=move_to, chunks=chunks, line=lineno))
        else:
            raise invalid_hunk(
                lineno,
                "'%s' is not a valid hunk header. %s" % (stripped, _VALID_HEADERS),
                _header_hint(stripped),
            )
    return Patch(ops)


def patch_paths(text: str) -> List[Tuple[str, str]]:
    """(operation, path) pairs of a patch, as written in it, in patch order.

    Operations are ``"add"``, ``"delete"``, ``"update"``, and ``"move"`` for the destination
    of an update with ``*** Move to:``. Raises :class:`PatchError` for a malformed patch.
    """
    return parse_patch(text).paths()


def _header_path(stripped: str, marker: str, lineno: int) -> str:
    path = stripped[len(marker) :].strip()
    if not path:
        raise invalid_hunk(lineno, "'%s' has no path" % stripped, "Write it as '%s {path}'." % marker)
    return path


def _header_hint(stripped: str) -> str:
    for marker, hint in _FILE_HEADER_HINTS:
        if stripped.startswith(marker):
            return hint
    if stripped.startswith(("--- ", "+++ ", "diff --git", "Index: ")):
        return "This looks like a unified diff; apply_patch takes the '*** Begin Patch' format."
    if stripped.startswith(("@@", "+", "-")):
        return "Hunk lines belong inside an '*** Update File: {path}' section (Add File lines start with '+')."
    return ""


def _parse_add_lines(body: List[str], i: int) -> Tuple[int, str]:
    lines: List[str] = []
    while i < len(body):
        line = body[i]
        if line.startswith("+"):
            lines.append(line[1:])
            i += 1
            continue
        if not line.strip():
            # A blank line inside the added lines is an empty line whose '+' was dropped;
            # blank lines after the last '+' line only separate sections.
            j = i
            while j < len(body) and not body[j].strip():
                j += 1
            if j < len(body) and body[j].startswith("+"):
                lines.extend("" for _ in range(j - i))
                i = j
                continue
        break
    return i, "".join(line + "\n" for line in lines)


def _is_hunk_header(line: str, first: bool) -> bool:
    """Whether a line is an ``@@`` line.

    Whitespace before ``@@`` is allowed where a hunk starts; a ``" @@"`` line after an ``@@``
    line is a context line (a file line that starts with ``@@``).
    """
    if not line.strip().startswith("@@"):
        return False
    if not line.startswith((" ", "+", "-")):
        return True
    return line.startswith(" ") and first


def _parse_chunks(body: List[str], i: int) -> Tuple[int, List[Chunk]]:
    chunks: List[Chunk] = []
    while i < len(body):
        line = body[i]
        stripped = line.strip()
        if not stripped:
            i += 1
            continue
        if line.startswith("*") or stripped.startswith(_SECTION_MARKERS):
            break
        start = i
        headers: List[str] = []
        saw_header = False
        while i < len(body) and _is_hunk_header(body[i], first=not saw_header):
            saw_header = True
            header = body[i].strip()
            unified = _UNIFIED_HUNK_HEADER.match(header)
            text = unified.group("rest") if unified is not None else header[2:]
            if text.strip():
                headers.append(text.strip())
            i += 1
        if not saw_header and chunks:
            raise invalid_hunk(
                i + 2,
                "Expected update hunk to start with a @@ context marker, got: '%s'" % line,
                "Start each further hunk with an '@@' line; every line of a hunk starts with ' ', '-' or '+'.",
            )
        lines: List[Tuple[str, str]] = []
        end_of_file = False
        while i < len(body):
            line = body[i]
            if line.rstrip() == END_OF_FILE:
                if not lines:
                    raise invalid_hunk(i + 2, "Update hunk does not contain any lines")
                end_of_file = True
                i += 1
                break
            if line[:1] in (" ", "+", "-"):
                lines.append((line[:1], line[1:]))
            elif not line.strip():
                # A blank context line whose leading space was dropped.
                lines.append((" ", line))
            elif not lines:
                if saw_header and line.strip().startswith("***"):
                    raise invalid_hunk(
                        i + 2,
                        "Update hunk does not contain any lines",
                        "An '@@' line must be followed by the hunk's ' ', '-' and '+' lines.",
                    )
                raise invalid_hunk(
                    i + 2,
                    "Unexpected line found in update hunk: '%s'. %s" % (line, _LINE_PREFIX_RULE),
                )
            else:
                break
            i += 1
        if not lines:
            raise invalid_hunk(
                i + 1,
                "Update hunk does not contain any lines",
                "An '@@' line must be followed by the hunk's ' ', '-' and '+' lines.",
            )
        chunks.append(Chunk(headers, lines, end_of_file, start + 2))
    return i, chunks
