"""Apply the hunks of an Update File section to a file's text, or say why a hunk does not fit."""

from __future__ import annotations

from typing import List, Optional, Tuple

from sandbox.patch.errors import PatchError, shorten, verification_failed
from sandbox.patch.parser import Chunk
from sandbox.patch.seek import Matcher, at_level, closest_region

# Lines of the file or of the patch shown in an error.
_MAX_SHOWN_LINES = 40

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


def update_text(text: str, chunks: List[Chunk], path: str) -> str:
    """Apply the hunks of an Update File section to a file's text (Codex's semantics)."""
    bom, lines, preferred = _split_text(text)
    texts = [line for line, _ending in lines]
    matcher = Matcher(texts)
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
        if not found and header_at is not None and at_level(2, old[0]) == at_level(2, texts[header_at]):
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
                raise verification_failed(
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
    parts.append("%s: its '@@ %s' line must be copied from a line of the file%s." % (where, shorten(header), after))
    earlier = Matcher(texts).seek([header], 0, eof=False)
    if earlier and earlier[0] < position:
        parts.append(
            "That line is at line %d, before the end of the previous hunk: "
            "hunks must follow the order of the file." % (earlier[0] + 1)
        )
    else:
        best = closest_region(texts, [header])
        if best is not None and best[2] >= 0.5:
            parts.append("Closest line in %s:\n%s" % (path, _numbered(texts, best[0], 1)))
    return verification_failed("\n".join(parts))


def _lines_not_found(
    chunk: Chunk,
    path: str,
    texts: List[str],
    matcher: Matcher,
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
        best = closest_region(texts, old)
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
                        % (start + k + 1, shorten(old[k], 120), shorten(texts[start + k], 120))
                    )
                    break
            parts.append("Copy context and '-' lines exactly from the file.")
    return verification_failed("\n".join(parts))


def _ambiguous(chunk: Chunk, path: str, texts: List[str], found: List[int], old: List[str], where: str) -> PatchError:
    places = ", ".join(_line_range(start, len(old)) for start in found)
    more = " and possibly more" if len(found) >= 5 else ""
    return verification_failed(
        "Ambiguous hunk in %s: the expected lines match in %d places (%s%s):\n%s\n"
        "%s has no '@@' line to tell them apart. Add an '@@ <line>' line naming a unique line above "
        "the change (such as its def or class line), or more context lines, so that the hunk matches "
        "exactly one place." % (path, len(found), places, more, _listing(old), where)
    )


# --------------------------------------------------------------------------------------
# Showing lines in an error
# --------------------------------------------------------------------------------------


def _numbered(texts: List[str], start: int, count: int) -> str:
    shown = texts[start : start + min(count, _MAX_SHOWN_LINES)]
    width = len(str(start + len(shown)))
    out = ["%*d | %s" % (width, start + 1 + k, shorten(text)) for k, text in enumerate(shown)]
    if count > len(shown):
        out.append("... (%d more lines)" % (count - len(shown)))
    return "\n".join(out)


def _listing(lines: List[str]) -> str:
    shown = [shorten(text) for text in lines[:_MAX_SHOWN_LINES]]
    if len(lines) > len(shown):
        shown.append("... (%d more lines)" % (len(lines) - len(shown)))
    return "\n".join(shown)


def _line_range(start: int, count: int) -> str:
    return "line %d" % (start + 1) if count <= 1 else "lines %d-%d" % (start + 1, start + count)
