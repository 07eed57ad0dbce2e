"""The Codex ``apply_patch`` format: parse a patch, verify it, apply it atomically.

Stdlib only, python3 >= 3.9: the in-container server imports this module.

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

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = [
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

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File:"
DELETE_FILE = "*** Delete File:"
UPDATE_FILE = "*** Update File:"
MOVE_TO = "*** Move to:"
END_OF_FILE = "*** End of File"

DEFAULT_MAX_PATCH_BYTES = 1_000_000
DEFAULT_MAX_FILE_BYTES = 5_000_000
DEFAULT_MAX_DIFF_CHARS = 20_000

_VERIFY = "apply_patch verification failed: "
_OUTSIDE = "patch rejected: writing outside of the project; rejected by user approval settings"
_NOTHING_CHANGED = "No files were changed: the patch applies entirely or not at all."
_VALID_HEADERS = "Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"
_LINE_PREFIX_RULE = "Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"

# Shown lines of the file or of the patch in an error, and their width.
_MAX_SHOWN_LINES = 40
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


def _invalid_patch(message: str, hint: str = "") -> PatchError:
    tail = ("\n" + hint if hint else "") + "\n" + _NOTHING_CHANGED
    return PatchError(
        _VERIFY + "invalid patch: " + message + tail,
        "Invalid patch: " + message + tail,
    )


def _invalid_hunk(line: int, message: str, hint: str = "") -> PatchError:
    tail = ("\n" + hint if hint else "") + "\n" + _NOTHING_CHANGED
    return PatchError(
        "%sinvalid hunk at line %d, %s%s" % (_VERIFY, line, message, tail),
        "Invalid patch hunk on line %d: %s%s" % (line, message, tail),
    )


def _verification(message: str) -> PatchError:
    text = message + "\n" + _NOTHING_CHANGED
    return PatchError(_VERIFY + text, text)


def _rejected(message: str) -> PatchError:
    return PatchError(message + "\n" + _NOTHING_CHANGED)


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
            hint = "The first line is: %s" % _shorten(lines[0])
        raise _invalid_patch("The first line of the patch must be '*** Begin Patch'", hint)
    raise _invalid_patch(
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
                raise _invalid_hunk(
                    lineno,
                    "Update file hunk for path '%s' is empty" % path,
                    "An '*** Update File:' section needs at least one hunk: an '@@' line followed by "
                    "' ' context, '-' removed and '+' added lines.",
                )
            ops.append(FileOp("update", path, move_to=move_to, chunks=chunks, line=lineno))
        else:
            raise _invalid_hunk(
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
        raise _invalid_hunk(lineno, "'%s' has no path" % stripped, "Write it as '%s {path}'." % marker)
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
            raise _invalid_hunk(
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
                    raise _invalid_hunk(i + 2, "Update hunk does not contain any lines")
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
                    raise _invalid_hunk(
                        i + 2,
                        "Update hunk does not contain any lines",
                        "An '@@' line must be followed by the hunk's ' ', '-' and '+' lines.",
                    )
                raise _invalid_hunk(
                    i + 2,
                    "Unexpected line found in update hunk: '%s'. %s" % (line, _LINE_PREFIX_RULE),
                )
            else:
                break
            i += 1
        if not lines:
            raise _invalid_hunk(
                i + 1,
                "Update hunk does not contain any lines",
                "An '@@' line must be followed by the hunk's ' ', '-' and '+' lines.",
            )
        chunks.append(Chunk(headers, lines, end_of_file, start + 2))
    return i, chunks


# --------------------------------------------------------------------------------------
# Paths
# --------------------------------------------------------------------------------------

_WINDOWS_ABSOLUTE = re.compile(r"^[A-Za-z]:[\\/]")


def normalize_path(path: str) -> str:
    """The relative form of a patch path (``./a//b`` -> ``a/b``), or :class:`PatchError`.

    Refused: empty paths, absolute paths, ``..`` components, ``~``, and any ``.git``
    component (any letter case). Symlinks are checked when the patch is applied.
    """
    if not path.strip():
        raise _rejected("patch rejected: a file path is empty.")
    if "\x00" in path:
        raise _rejected("patch rejected: the path %r contains a NUL character." % path)
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise _rejected("patch rejected: the path %r is not valid UTF-8 text." % path) from None
    if path.startswith(("/", "\\")) or _WINDOWS_ABSOLUTE.match(path):
        raise _rejected("%s. '%s' is an absolute path; use a path relative to the repository root." % (_OUTSIDE, path))
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise _rejected("%s. '%s' has a '..' component; paths must stay under the repository root." % (_OUTSIDE, path))
    if parts and parts[0].startswith("~"):
        raise _rejected(
            "%s. '%s' points into a home directory; use a path relative to the repository root." % (_OUTSIDE, path)
        )
    if not parts:
        raise _rejected("patch rejected: '%s' does not name a file under the repository root." % path)
    if any(part.lower() == ".git" for part in parts):
        raise _rejected("patch rejected: '%s' is inside .git, which apply_patch never writes." % path)
    return "/".join(parts)


def _is_within(root: str, path: str) -> bool:
    try:
        return os.path.commonpath([root, path]) == root
    except ValueError:
        return False


# --------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------

_PUNCTUATION = str.maketrans(
    {
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u00a0": " ",
        "\u2002": " ",
        "\u2003": " ",
        "\u2004": " ",
        "\u2005": " ",
        "\u2006": " ",
        "\u2007": " ",
        "\u2008": " ",
        "\u2009": " ",
        "\u200a": " ",
        "\u202f": " ",
        "\u205f": " ",
        "\u3000": " ",
    }
)

_LEVELS = ("exact", "ignoring trailing whitespace", "ignoring surrounding whitespace", "normalised")


def _at_level(level: int, text: str) -> str:
    if level == 0:
        return text
    if level == 1:
        return text.rstrip()
    if level == 2:
        return text.strip()
    return text.strip().translate(_PUNCTUATION)


class _Matcher:
    """Finds runs of lines in a file, with Codex's four levels of strictness."""

    def __init__(self, texts: List[str]) -> None:
        self.texts = texts
        self._levels: Dict[int, List[str]] = {0: texts}

    def _lines(self, level: int) -> List[str]:
        lines = self._levels.get(level)
        if lines is None:
            lines = [_at_level(level, text) for text in self.texts]
            self._levels[level] = lines
        return lines

    def seek(self, pattern: List[str], start: int, eof: bool, limit: int = 1) -> List[int]:
        """Start positions (at most ``limit``) of ``pattern`` at or after ``start``.

        Levels are tried in order and the first level with a match wins. With ``eof`` the
        only candidate is the position that ends at the end of the file.
        """
        n, m = len(self.texts), len(pattern)
        if m == 0:
            return [start]
        if m > n:
            return []
        last = n - m
        if eof:
            if last < start:
                return []
            start = last
        for level in range(len(_LEVELS)):
            lines = self._lines(level)
            wanted = [_at_level(level, text) for text in pattern]
            hits: List[int] = []
            i = start
            while i <= last:
                try:
                    i = lines.index(wanted[0], i, last + 1)
                except ValueError:
                    break
                if lines[i : i + m] == wanted:
                    hits.append(i)
                    if len(hits) >= limit:
                        break
                i += 1
            if hits:
                return hits
        return []


def _similarity(a: str, b: str) -> float:
    a = a.strip()[:200]
    b = b.strip()[:200]
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _closest_region(texts: List[str], pattern: List[str]) -> Optional[Tuple[int, int, float]]:
    """(start, length, score) of the run of file lines most like ``pattern``."""
    n, m = len(texts), len(pattern)
    if n == 0 or m == 0:
        return None
    span = min(m, n)
    last = n - span
    votes: Dict[int, int] = {}
    index: Dict[str, List[int]] = {}
    for k, text in enumerate(pattern):
        if text.strip():
            index.setdefault(text.strip(), []).append(k)
    for i, text in enumerate(texts):
        for k in index.get(text.strip(), ()):
            start = min(max(i - k, 0), last)
            votes[start] = votes.get(start, 0) + 1
    candidates = sorted(votes, key=lambda s: -votes[s])[:30]
    wanted = max(1, len(index) // 2)
    if not candidates or votes[candidates[0]] < wanted:
        # Lines that are similar without being equal: rank file lines against the longest
        # pattern lines, cheaply first, then exactly for the best few.
        probes = sorted((k for k in range(m) if pattern[k].strip()), key=lambda k: -len(pattern[k]))[:2]
        rough: List[Tuple[float, int, int]] = []
        for k in probes:
            matcher = difflib.SequenceMatcher(None, "", pattern[k].strip()[:200], autojunk=False)
            for i, text in enumerate(texts):
                matcher.set_seq1(text.strip()[:200])
                if matcher.real_quick_ratio() >= 0.5:
                    quick = matcher.quick_ratio()
                    if quick >= 0.5:
                        rough.append((quick, i, k))
        rough.sort(reverse=True)
        scored = sorted(
            ((_similarity(texts[i], pattern[k]), min(max(i - k, 0), last)) for _q, i, k in rough[:200]),
            reverse=True,
        )
        for _score, start in scored[:30]:
            if start not in candidates:
                candidates.append(start)
    if not candidates and n * m <= 20_000:
        candidates = list(range(last + 1))
    best: Optional[Tuple[int, int, float]] = None
    for start in candidates:
        score = sum(_similarity(texts[start + k], pattern[k]) for k in range(span)) / m
        if best is None or score > best[2] + 1e-9:
            best = (start, span, score)
    return best


def _shorten(text: str, limit: int = _MAX_SHOWN_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "... (%d more characters)" % (len(text) - limit)


def _numbered(texts: List[str], start: int, count: int) -> str:
    shown = texts[start : start + min(count, _MAX_SHOWN_LINES)]
    width = len(str(start + len(shown)))
    out = ["%*d | %s" % (width, start + 1 + k, _shorten(text)) for k, text in enumerate(shown)]
    if count > len(shown):
        out.append("... (%d more lines)" % (count - len(shown)))
    return "\n".join(out)


def _listing(lines: List[str]) -> str:
    shown = [_shorten(text) for text in lines[:_MAX_SHOWN_LINES]]
    if len(lines) > len(shown):
        shown.append("... (%d more lines)" % (len(lines) - len(shown)))
    return "\n".join(shown)


def _line_range(start: int, count: int) -> str:
    return "line %d" % (start + 1) if count <= 1 else "lines %d-%d" % (start + 1, start + count)


# --------------------------------------------------------------------------------------
# Updating a file's text
# --------------------------------------------------------------------------------------

_Line = Tuple[str, str]  # (text, ending): ending is "\n", "\r\n" or "" (unterminated last line)


def _split_text(text: str) -> Tuple[str, List[_Line], str]:
    """(byte-order mark, lines, preferred ending) of a file's text."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    parts = text[len(bom) :].split("\n")
    lines: List[_Line] = []
    for part in parts[:-1]:
        if part.endswith("\r"):
            lines.append((part[:-1], "\r\n"))
        else:
            lines.append((part, "\n"))
    if parts[-1]:
        lines.append((parts[-1], ""))
    preferred = lines[0][1] if lines and lines[0][1] else "\n"
    return bom, lines, preferred


def _update_text(text: str, chunks: List[Chunk], path: str) -> str:
    """Apply the hunks of an Update File section to a file's text (Codex's semantics)."""
    bom, lines, preferred = _split_text(text)
    texts = [line for line, _ending in lines]
    matcher = _Matcher(texts)
    replacements: List[Tuple[int, int, List[Tuple[str, str]]]] = []
    position = 0
    for number, chunk in enumerate(chunks, 1):
        where = "Hunk %d of %d (patch line %d)" % (number, len(chunks), chunk.line)
        header_at: Optional[int] = None
        for header in chunk.headers:
            found = matcher.seek([header], position, eof=False)
            if not found:
                raise _context_not_found(header, path, texts, position, where)
            header_at = found[0]
            position = header_at + 1
        ops = list(chunk.lines)
        old = [t for kind, t in ops if kind != "+"]
        if not old:
            if header_at is not None:
                at = position
            elif texts and texts[-1] == "":
                at = len(texts) - 1
            else:
                at = len(texts)
            replacements.append((at, 0, ops))
            continue
        # Only the first located hunk of a file, with no '@@' line, has nothing to place it.
        limit = 5 if position == 0 and not chunk.end_of_file else 1
        found = matcher.seek(old, position, chunk.end_of_file, limit)
        if not found and header_at is not None and _at_level(2, old[0]) == _at_level(2, texts[header_at]):
            # The '@@' line repeated as the hunk's first context line.
            found = matcher.seek(old, header_at, chunk.end_of_file, limit)
        while not found and ops and ops[-1][0] == " " and not ops[-1][1].strip() and len(old) > 1:
            # Codex: a trailing blank context line may stand for the file's final newline.
            ops.pop()
            old.pop()
            found = matcher.seek(old, position, chunk.end_of_file, limit)
        if not found:
            raise _lines_not_found(chunk, path, texts, matcher, position, header_at, where)
        if len(found) > 1:
            raise _ambiguous(chunk, path, texts, found, old, where)
        replacements.append((found[0], len(old), ops))
        position = found[0] + len(old)

    replacements.sort(key=lambda r: r[0])
    out: List[_Line] = []
    cursor = 0
    for start, length, ops in replacements:
        if start < cursor:
            if length:
                raise _verification(
                    "Failed to apply the hunks to %s: two hunks change the same lines (around line %d)."
                    % (path, start + 1)
                )
            start = cursor
        out.extend(lines[cursor:start])
        k = start
        for kind, added in ops:
            if kind == " ":
                out.append(lines[k])
                k += 1
            elif kind == "-":
                k += 1
            else:
                out.append((added, preferred))
        cursor = start + length
    out.extend(lines[cursor:])
    return bom + "".join(line + (ending or preferred) for line, ending in out)


def _context_not_found(header: str, path: str, texts: List[str], position: int, where: str) -> PatchError:
    parts = ["Failed to find context '%s' in %s" % (header, path)]
    after = " after line %d" % position if position else ""
    parts.append("%s: its '@@ %s' line must be copied from a line of the file%s." % (where, _shorten(header), after))
    earlier = _Matcher(texts).seek([header], 0, eof=False)
    if earlier and earlier[0] < position:
        parts.append(
            "That line is at line %d, before the end of the previous hunk: "
            "hunks must follow the order of the file." % (earlier[0] + 1)
        )
    else:
        best = _closest_region(texts, [header])
        if best is not None and best[2] >= 0.5:
            parts.append("Closest line in %s:\n%s" % (path, _numbered(texts, best[0], 1)))
    return _verification("\n".join(parts))


def _lines_not_found(
    chunk: Chunk,
    path: str,
    texts: List[str],
    matcher: _Matcher,
    position: int,
    header_at: Optional[int],
    where: str,
) -> PatchError:
    old = chunk.old_lines
    parts = ["Failed to find expected lines in %s:\n%s" % (path, _listing(old))]
    if header_at is not None:
        searched = "after its '@@' line (found at line %d)" % (header_at + 1)
    elif position:
        searched = "after the previous hunk (from line %d)" % (position + 1)
    else:
        searched = "in the whole file"
    anchor = " This hunk ends with '*** End of File', so its lines must be the last lines of the file."
    parts.append(
        "\n%s was searched %s; %s has %d lines.%s"
        % (where, searched, path, len(texts), anchor if chunk.end_of_file else "")
    )
    anywhere = matcher.seek(old, 0, eof=False)
    if anywhere:
        if anywhere[0] < position:
            why = "before where this hunk's search starts (line %d): hunks must follow the order of the file" % (
                position + 1
            )
            if header_at is not None:
                why += ", after their '@@' line"
            parts.append("These lines are at %s, %s." % (_line_range(anywhere[0], len(old)), why))
        elif chunk.end_of_file:
            parts.append(
                "These lines are at %s, which is not the end of the file." % _line_range(anywhere[0], len(old))
            )
    elif not texts:
        parts.append("%s is empty." % path)
    else:
        best = _closest_region(texts, old)
        if best is None or best[2] < 0.25:
            parts.append("Nothing in %s resembles these lines: read the file again." % path)
        else:
            start, count, score = best
            parts.append(
                "Closest match in %s, %s (%d%% similar):\n%s"
                % (path, _line_range(start, count), round(score * 100), _numbered(texts, start, count))
            )
            for k in range(count):
                if texts[start + k] != old[k]:
                    parts.append(
                        "First difference at line %d: the patch expects %r, the file has %r."
                        % (start + k + 1, _shorten(old[k], 120), _shorten(texts[start + k], 120))
                    )
                    break
            parts.append("Copy context and '-' lines exactly from the file.")
    return _verification("\n".join(parts))


def _ambiguous(chunk: Chunk, path: str, texts: List[str], found: List[int], old: List[str], where: str) -> PatchError:
    places = ", ".join(_line_range(start, len(old)) for start in found)
    more = " and possibly more" if len(found) >= 5 else ""
    return _verification(
        "Ambiguous hunk in %s: the expected lines match in %d places (%s%s):\n%s\n"
        "%s has no '@@' line to tell them apart. Add an '@@ <line>' line naming a unique line above "
        "the change (such as its def or class line), or more context lines, so that the hunk matches "
        "exactly one place." % (path, len(found), places, more, _listing(old), where)
    )


# --------------------------------------------------------------------------------------
# Planning: every check and every new content, before any write
# --------------------------------------------------------------------------------------


@dataclass
class _Slot:
    """A file location under the root and its content as the patch goes along."""

    rel: str
    path: str  # absolute, symlinks followed
    orig: Optional[bytes]  # content before the patch; None: no file
    mode: Optional[int]  # permission bits of the file before the patch
    data: Optional[bytes]  # content after the operations so far; None: no file
    new_mode: Optional[int] = None  # permission bits to write with (None: keep or default)
    is_dir: bool = False


@dataclass
class _LinkRemoval:
    rel: str
    path: str  # the symlink itself
    target: str  # what it points to, to put it back on rollback


@dataclass
class PatchResult:
    """What an applied patch did.

    ``summary``: ``A path``, ``M path``, ``D path``, ``R old -> new`` lines in patch order.
    ``diff``: unified diff of the changes, capped (a note says what was cut).
    ``changed_paths``: the relative paths written or removed.
    """

    summary: List[str]
    diff: str
    changed_paths: List[str]
    diff_truncated: bool = False

    def text(self) -> str:
        """The message for the model: Codex's success line, the summary, then the diff."""
        out = "Success. Updated the following files:\n" + "".join(line + "\n" for line in self.summary)
        if self.diff:
            out += "\n" + self.diff
            if not out.endswith("\n"):
                out += "\n"
        return out


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


class _Planner:
    def __init__(self, root: str, max_file_bytes: int) -> None:
        if not os.path.isdir(root):
            raise PatchError("apply_patch failed: the root %r is not a directory." % root)
        self.root = os.path.realpath(root)
        self.max_file_bytes = max_file_bytes
        self.slots: Dict[str, _Slot] = {}
        self.link_removals: Dict[str, _LinkRemoval] = {}
        self.summary: List[str] = []
        self.diffs: List[str] = []
        self.touched: List[str] = []  # slot paths and link paths in order of first touch

    # -- paths --------------------------------------------------------------------------

    def _check_real(self, real: str, shown: str, via_link: bool) -> None:
        if not _is_within(self.root, real):
            raise _rejected(
                "%s. '%s' resolves through a symlink to %s, outside the repository root." % (_OUTSIDE, shown, real)
                if via_link
                else "%s. '%s' is outside the repository root." % (_OUTSIDE, shown)
            )
        rel = os.path.relpath(real, self.root)
        if rel != os.curdir and any(part.lower() == ".git" for part in rel.split(os.sep)):
            raise _rejected(
                "patch rejected: '%s' resolves through a symlink into .git (%s), which apply_patch "
                "never writes." % (shown, rel)
            )

    def locate(self, raw: str, link_entry_ok: bool = False) -> Tuple[str, str, str, bool]:
        """(relative path, directory entry, real file path, entry is a symlink) of a patch path.

        Nothing is written THROUGH a symbolic link: the policy judges the paths as the patch
        names them, so a link (``src/alias -> secrets``) would carry a write past it. A link
        as the entry itself may only be removed (Delete, or the source of a Move):
        ``link_entry_ok``; writing to the file it points to needs the real path.
        """
        rel = normalize_path(raw)
        parts = rel.split("/")
        here = self.root
        for i, part in enumerate(parts[:-1]):
            here = os.path.join(here, part)
            if os.path.islink(here):
                link = "/".join(parts[: i + 1])
                raise _rejected(
                    "patch rejected: '%s' goes through the symbolic link '%s' (-> %s); apply_patch "
                    "does not write through links: use the real path." % (raw, link, _readlink(here))
                )
        parent = os.path.realpath(os.path.join(self.root, *parts[:-1])) if len(parts) > 1 else self.root
        self._check_real(parent, raw, via_link=True)
        entry = os.path.join(parent, parts[-1])
        if os.path.islink(entry) and entry not in self.link_removals:
            real = os.path.realpath(entry)
            self._check_real(real, raw, via_link=True)
            if real == self.root:
                raise _rejected("patch rejected: '%s' is a symlink to the repository root." % raw)
            if not link_entry_ok:
                real_rel = os.path.relpath(real, self.root)
                raise _rejected(
                    "patch rejected: '%s' is a symbolic link (-> %s); apply_patch does not write "
                    "through links: patch the real path '%s'." % (raw, _readlink(entry), real_rel)
                )
            return rel, entry, real, True
        return rel, entry, entry, False

    def slot(self, rel: str, real: str) -> _Slot:
        slot = self.slots.get(real)
        if slot is not None:
            return slot
        orig: Optional[bytes] = None
        mode: Optional[int] = None
        is_dir = False
        try:
            # A symlink this patch already removed is no file any more.
            st = None if real in self.link_removals else os.stat(real)
        except (FileNotFoundError, NotADirectoryError):
            st = None  # a parent that is a file is reported when the patch is checked as a whole
        except OSError as exc:
            raise _verification("Failed to read %s: %s" % (rel, _os_reason(exc))) from None
        if st is not None:
            if stat.S_ISDIR(st.st_mode):
                is_dir = True
            elif not stat.S_ISREG(st.st_mode):
                raise _verification(
                    "Failed to read %s: not a regular file (apply_patch edits regular files only)" % rel
                )
            elif st.st_size > self.max_file_bytes:
                raise _verification(
                    "Failed to read %s: the file is %d bytes, over apply_patch's limit of %d bytes"
                    % (rel, st.st_size, self.max_file_bytes)
                )
            else:
                try:
                    with open(real, "rb") as handle:
                        orig = handle.read(self.max_file_bytes + 1)
                except OSError as exc:
                    raise _verification("Failed to read %s: %s" % (rel, _os_reason(exc))) from None
                if len(orig) > self.max_file_bytes:
                    raise _verification(
                        "Failed to read %s: the file is over apply_patch's limit of %d bytes"
                        % (rel, self.max_file_bytes)
                    )
                mode = stat.S_IMODE(st.st_mode)
        slot = _Slot(rel, real, orig, mode, orig, is_dir=is_dir)
        self.slots[real] = slot
        self.touched.append(real)
        return slot

    # -- operations ---------------------------------------------------------------------

    def add(self, op: FileOp) -> None:
        rel, _entry, real, _is_link = self.locate(op.path)
        slot = self.slot(rel, real)
        if slot.is_dir:
            raise _verification("Failed to write file %s: Is a directory" % rel)
        data = self._encode(op.contents, rel)
        replaced = slot.data is not None
        self._diff(slot.data, data, rel, rel)
        slot.data = data
        self.summary.append("A %s%s" % (rel, " (replaced the existing file)" if replaced else ""))

    def delete(self, op: FileOp) -> None:
        rel, entry, real, is_link = self.locate(op.path, link_entry_ok=True)
        if is_link and entry not in self.link_removals:
            # Deleting a symlink removes the link, not what it points to.
            try:
                target = os.readlink(entry)
            except OSError as exc:
                raise _verification("Failed to read %s: %s" % (rel, _os_reason(exc))) from None
            self.link_removals[entry] = _LinkRemoval(rel, entry, target)
            self.touched.append(entry)
            self.summary.append("D %s" % rel)
            self.diffs.append("--- a/%s\n+++ /dev/null\n(symlink to %s removed)\n" % (rel, target))
            return
        slot = self.slot(rel, real)
        if slot.is_dir:
            raise _verification(
                "Failed to read %s: Is a directory (Delete File removes one file, not a directory)" % rel
            )
        if slot.data is None:
            raise _verification("Failed to read %s: No such file or directory (there is no file to delete)" % rel)
        self._diff(slot.data, None, rel, rel)
        slot.data = None
        self.summary.append("D %s" % rel)

    def update(self, op: FileOp) -> None:
        # A link may be the source of a move (the link goes away), never updated in place.
        rel, entry, real, is_link = self.locate(op.path, link_entry_ok=op.move_to is not None)
        slot = self.slot(rel, real)
        if slot.is_dir:
            raise _verification("Failed to read file to update %s: Is a directory" % rel)
        if slot.data is None:
            raise _verification("Failed to read file to update %s: No such file or directory" % rel)
        try:
            text = slot.data.decode("utf-8")
        except UnicodeDecodeError:
            raise _verification(
                "Failed to read file to update %s: stream did not contain valid UTF-8 "
                "(apply_patch edits UTF-8 text files only)" % rel
            ) from None
        new_text = _update_text(text, op.chunks, rel)
        data = self._encode(new_text, rel)
        if op.move_to is None:
            self._diff(slot.data, data, rel, rel)
            self.summary.append("M %s%s" % (rel, "" if data != slot.data else " (no changes)"))
            slot.data = data
            return
        dest_rel, _dest_entry, dest_real, _dest_link = self.locate(op.move_to)
        if dest_real == real and is_link:
            raise _rejected(
                "patch rejected: '%s' is a symbolic link; apply_patch does not write through links: "
                "patch the real path '%s'." % (op.path, os.path.relpath(real, self.root))
            )
        if dest_real == real:
            self._diff(slot.data, data, rel, rel)
            self.summary.append("M %s" % rel)
            slot.data = data
            return
        dest = self.slot(dest_rel, dest_real)
        if dest.is_dir:
            raise _verification("Failed to write file %s: Is a directory" % dest_rel)
        replaced = dest.data is not None
        self._diff(slot.data, data, rel, dest_rel)
        dest.data = data
        dest.new_mode = slot.mode if slot.new_mode is None else slot.new_mode
        if is_link:
            # Moving a symlink: the destination gets the content, the link goes away.
            if entry not in self.link_removals:
                self.link_removals[entry] = _LinkRemoval(rel, entry, os.readlink(entry))
                self.touched.append(entry)
        else:
            slot.data = None
        self.summary.append(
            "R %s -> %s%s" % (rel, dest_rel, " (replaced the existing %s)" % dest_rel if replaced else "")
        )

    # -- helpers ------------------------------------------------------------------------

    def _encode(self, text: str, rel: str) -> bytes:
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise _verification(
                "Failed to write file %s: the new content has characters that UTF-8 cannot encode" % rel
            ) from None
        if len(data) > self.max_file_bytes:
            raise _verification(
                "Failed to write file %s: the result would be %d bytes, over apply_patch's limit of %d bytes"
                % (rel, len(data), self.max_file_bytes)
            )
        return data

    def _diff(self, old: Optional[bytes], new: Optional[bytes], old_rel: str, new_rel: str) -> None:
        self.diffs.append(_file_diff(old, new, old_rel, new_rel))

    def finish(self) -> None:
        """Checks that need the whole patch: parent directories and aliased files."""
        removed = {path for path, slot in self.slots.items() if slot.data is None}
        removed.update(self.link_removals)
        writes = [slot for slot in self.slots.values() if slot.data is not None and slot.data != slot.orig]
        final_files = {slot.path for slot in self.slots.values() if slot.data is not None}
        for slot in writes:
            ancestor = os.path.dirname(slot.path)
            while ancestor != self.root and _is_within(self.root, ancestor):
                if ancestor in final_files:
                    raise _verification(
                        "Failed to create parent directories for %s: %s is a file in this patch"
                        % (slot.rel, os.path.relpath(ancestor, self.root))
                    )
                if os.path.lexists(ancestor) and not os.path.isdir(ancestor) and ancestor not in removed:
                    raise _verification(
                        "Failed to create parent directories for %s: %s is not a directory"
                        % (slot.rel, os.path.relpath(ancestor, self.root))
                    )
                ancestor = os.path.dirname(ancestor)
            directory = _nearest_existing_dir(os.path.dirname(slot.path))
            if not os.access(directory, os.W_OK | os.X_OK):
                raise _verification(
                    "Failed to write file %s: Permission denied (cannot write in %s)"
                    % (slot.rel, os.path.relpath(directory, self.root))
                )
        for path in sorted(removed):
            directory = os.path.dirname(path)
            if not os.access(directory, os.W_OK | os.X_OK):
                rel = self.slots[path].rel if path in self.slots else self.link_removals[path].rel
                raise _verification("Failed to delete file %s: Permission denied" % rel)


def _nearest_existing_dir(path: str) -> str:
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


# --------------------------------------------------------------------------------------
# Diffs
# --------------------------------------------------------------------------------------


def _diff_lines(text: str) -> List[str]:
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _file_diff(old: Optional[bytes], new: Optional[bytes], old_rel: str, new_rel: str) -> str:
    old_name = "a/" + old_rel if old is not None else "/dev/null"
    new_name = "b/" + new_rel if new is not None else "/dev/null"
    header = "--- %s\n+++ %s\n" % (old_name, new_name)
    try:
        old_text = old.decode("utf-8") if old is not None else ""
        new_text = new.decode("utf-8") if new is not None else ""
    except UnicodeDecodeError:
        size = len(old or b"")
        return header + "(binary file, %d bytes, %s)\n" % (size, "deleted" if new is None else "changed")
    if old_text == new_text:
        if old_rel != new_rel:
            return header + "(moved, content unchanged)\n"
        return "" if old is not None and new is not None else header
    out = [header]
    for index, line in enumerate(difflib.unified_diff(_diff_lines(old_text), _diff_lines(new_text), n=1, lineterm="")):
        if index < 2:
            continue  # difflib's own ---/+++ lines
        if line.startswith("@@"):
            out.append(line.rstrip("\n") + "\n")
            continue
        if line.endswith("\n"):
            body = line[:-1]
            out.append((body[:-1] if body.endswith("\r") else body) + "\n")
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _cap_diff(diff: str, limit: int) -> Tuple[str, bool]:
    if len(diff) <= limit:
        return diff, False
    lines = diff.splitlines(keepends=True)
    head_budget = limit * 3 // 4
    tail_budget = limit - head_budget
    head: List[str] = []
    size = 0
    for line in lines:
        if size + len(line) > head_budget:
            break
        head.append(line)
        size += len(line)
    tail: List[str] = []
    size = 0
    for line in reversed(lines[len(head) :]):
        if size + len(line) > tail_budget:
            break
        tail.append(line)
        size += len(line)
    tail.reverse()
    cut = lines[len(head) : len(lines) - len(tail)]
    note = "[... diff cut: %d lines (%d characters) not shown ...]\n" % (len(cut), sum(map(len, cut)))
    return "".join(head) + note + "".join(tail), True


# --------------------------------------------------------------------------------------
# Writing, with rollback
# --------------------------------------------------------------------------------------


def _write_file(path: str, data: bytes, mode: Optional[int]) -> None:
    """Write through a temporary file in the same directory, then rename over ``path``."""
    directory, name = os.path.split(path)
    base = ("." + name) if len(name) < 200 else ".codebox"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _attempt in range(100):
        tmp = os.path.join(directory, "%s.%s.codebox-tmp" % (base, os.urandom(4).hex()))
        try:
            fd = os.open(tmp, flags, 0o666)  # the umask applies, as for any new file
        except FileExistsError:
            continue
        break
    else:
        raise OSError("could not create a temporary file in %s" % directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class _Undo:
    """What was done so far, to be undone in reverse order."""

    def __init__(self) -> None:
        # (kind, path, content, mode, symlink target); kind: restore, remove, relink, rmdir
        self.steps: List[Tuple[str, str, Optional[bytes], Optional[int], str]] = []

    def rollback(self) -> List[str]:
        problems: List[str] = []
        for kind, path, data, mode, target in reversed(self.steps):
            try:
                if kind == "restore" and data is not None:
                    _write_file(path, data, mode)
                elif kind == "remove":
                    if os.path.lexists(path):
                        os.unlink(path)
                elif kind == "relink":
                    os.symlink(target, path)
                elif kind == "rmdir":
                    os.rmdir(path)
            except OSError as exc:
                problems.append("%s (%s)" % (path, _os_reason(exc)))
        return problems


def _make_parents(path: str, undo: _Undo) -> None:
    missing: List[str] = []
    directory = os.path.dirname(path)
    while not os.path.lexists(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for directory in reversed(missing):
        os.mkdir(directory)
        undo.steps.append(("rmdir", directory, None, None, ""))


def _commit(planner: _Planner) -> List[str]:
    """Perform the planned changes; on failure roll back and raise. Returns the changed paths."""
    undo = _Undo()
    changed: List[str] = []
    removals: List[Tuple[str, str]] = []
    writes: List[_Slot] = []
    for path in dict.fromkeys(planner.touched):
        link = planner.link_removals.get(path)
        if link is not None:
            removals.append((path, link.rel))
        slot = planner.slots.get(path)
        if slot is None:
            continue
        if slot.data is None and slot.orig is not None:
            removals.append((path, slot.rel))
        elif slot.data is not None and slot.data != slot.orig:
            writes.append(slot)
    action = ""
    try:
        for path, rel in removals:
            action = "Failed to delete file %s" % rel
            link = planner.link_removals.get(path)
            os.unlink(path)
            if link is not None:
                undo.steps.append(("relink", path, None, None, link.target))
            else:
                removed = planner.slots[path]
                undo.steps.append(("restore", path, removed.orig, removed.mode, ""))
            changed.append(rel)
        for slot in writes:
            action = "Failed to create parent directories for %s" % slot.rel
            _make_parents(slot.path, undo)
            action = "Failed to write file %s" % slot.rel
            mode = slot.new_mode if slot.new_mode is not None else slot.mode
            _write_file(slot.path, slot.data or b"", mode)
            if slot.orig is None:
                undo.steps.append(("remove", slot.path, None, None, ""))
            else:
                undo.steps.append(("restore", slot.path, slot.orig, slot.mode, ""))
            changed.append(slot.rel)
    except OSError as exc:
        problems = undo.rollback()
        message = "apply_patch failed: %s: %s" % (action, _os_reason(exc))
        if problems:
            message += (
                "\nRolling back the files already written failed for: %s. Those files may be left "
                "changed; read them before patching again." % ", ".join(problems)
            )
        else:
            message += "\nThe files already written were restored. " + _NOTHING_CHANGED
        raise PatchError(message) from None
    unique: List[str] = []
    for rel in changed:
        if rel not in unique:
            unique.append(rel)
    return unique


# --------------------------------------------------------------------------------------
# The entry points
# --------------------------------------------------------------------------------------


def apply_patch(
    text: str,
    root: str,
    *,
    max_patch_bytes: int = DEFAULT_MAX_PATCH_BYTES,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_diff_chars: int = DEFAULT_MAX_DIFF_CHARS,
) -> PatchResult:
    """Apply a patch under ``root``, all of it or nothing. Raises :class:`PatchError`."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_patch_bytes:
        raise _rejected(
            "patch rejected: the patch is %d bytes, over apply_patch's limit of %d bytes. "
            "Split it into several smaller patches." % (size, max_patch_bytes)
        )
    patch = parse_patch(text)
    if not patch.operations:
        raise PatchError(
            "patch rejected: empty patch. It has no '*** Add File:', '*** Delete File:' or "
            "'*** Update File:' section. No files were modified.",
            "No files were modified.",
        )
    planner = _Planner(root, max_file_bytes)
    for op in patch.operations:
        if op.kind == "add":
            planner.add(op)
        elif op.kind == "delete":
            planner.delete(op)
        else:
            planner.update(op)
    planner.finish()
    changed = _commit(planner)
    diff, truncated = _cap_diff("".join(planner.diffs), max_diff_chars)
    return PatchResult(list(planner.summary), diff, changed, truncated)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m sandbox.patch --root DIR``: apply the patch on standard input."""
    parser = argparse.ArgumentParser(
        prog="python -m sandbox.patch",
        description="Apply a Codex apply_patch-format patch read from standard input, atomically.",
    )
    parser.add_argument("--root", required=True, help="directory the patch paths are relative to")
    parser.add_argument("--diff", action="store_true", help="also print the unified diff")
    parser.add_argument("--max-patch-bytes", type=int, default=DEFAULT_MAX_PATCH_BYTES)
    parser.add_argument("--max-file-bytes", type=int, default=DEFAULT_MAX_FILE_BYTES)
    parser.add_argument("--max-diff-chars", type=int, default=DEFAULT_MAX_DIFF_CHARS)
    args = parser.parse_args(argv)
    raw = sys.stdin.buffer.read(args.max_patch_bytes + 1)
    try:
        if len(raw) > args.max_patch_bytes:
            raise _rejected(
                "patch rejected: the patch is over apply_patch's limit of %d bytes. "
                "Split it into several smaller patches." % args.max_patch_bytes
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _invalid_patch("the patch is not valid UTF-8 (%s)" % exc) from None
        result = apply_patch(
            text,
            args.root,
            max_patch_bytes=args.max_patch_bytes,
            max_file_bytes=args.max_file_bytes,
            max_diff_chars=args.max_diff_chars,
        )
    except PatchError as exc:
        sys.stderr.write(exc.cli_message.rstrip("\n") + "\n")
        return 1
    except Exception as exc:  # an engine bug must still leave a clear message and exit 1
        sys.stderr.write("apply_patch failed: %s: %s\n" % (type(exc).__name__, exc))
        return 1
    output = (
        result.text()
        if args.diff
        else "Success. Updated the following files:\n" + "".join(line + "\n" for line in result.summary)
    )
    sys.stdout.write(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
