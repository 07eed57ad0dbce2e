"""read_file {path, start_line?, end_line?}

Output: the lines, numbered like ``cat -n`` (``{n:>6}\\t{text}``) so the model
can cite them; 1-based inclusive range. A footer in brackets says which lines
of how many were shown whenever that is not the whole file, and how to go on
when the output limit cut the range short. Lines longer than MAX_LINE_BYTES
are shortened (``... [N more bytes on this line]``). Files are read line by
line: memory stays bounded whatever the file's size.

Refused: directories (the error lists a few entries), anything that is not a
regular file (opened with O_NONBLOCK and O_NOCTTY, so a FIFO does not block nor a
tty become ours, and refused on what ``fstat`` says of that descriptor: what is
checked is what was opened), binary files (a NUL byte in the first 8 KiB).

Few system calls (under gVisor each one is a trip through its user-space kernel): the path is
walked once (paths.find: one ``openat`` per directory, then the file's ``openat``, which is its
look, and ``fstat``) and a small file is read whole by one ``read`` (rawread), without a
buffered file.

Bounded work whatever the file (a 100 GB sparse file included): reading stops
at a NUL byte met later (binary data from there on: said in the footer), after
MAX_SCAN_BYTES read, or at the tool's own deadline (READ_TIMEOUT_S, or the
request's timeout if shorter); what was read so far is shown, with the reason.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import time

from sandbox.tools import Context, ToolError, ToolResult, check_names, opt_int, req_str
from sandbox.tools.paths import display, find
from sandbox.tools.rawread import read_up_to

# Not `from typing import ...` at run time: typing costs a first call ~3 ms and an idle
# sandbox ~1 MB; mypy reads these names, the interpreter never needs them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Iterator, List, Mapping, Optional, Tuple

    _Shown = Tuple[List[str], int, Optional[int], bool]  # lines, last line shown, total lines, truncated

SNIFF_BYTES = 8192
MAX_LINE_BYTES = 2000
LIST_ENTRIES = 20
COUNT_LIMIT_BYTES = 256 * 1024 * 1024  # past this, the total line count is not computed
SMALL_FILE_BYTES = 1024 * 1024  # read whole, split in C
MAX_SCAN_BYTES = 256 * 1024 * 1024  # one call never reads more than this
READ_TIMEOUT_S = 20.0


class _Budget:
    """Bytes and time one call may spend reading; ``spend`` raises _Stop past either."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.left = MAX_SCAN_BYTES

    def spend(self, data: bytes) -> bytes:
        self.left -= len(data)
        if self.left < 0:
            raise _Stop(f"read limit of {MAX_SCAN_BYTES // (1024 * 1024)} MiB reached")
        if time.monotonic() > self.deadline:
            raise _Stop("time limit reached")
        return data


class _Stop(Exception):
    """Reading stopped early: the reason goes in the footer."""
_CR = b"\r"


def _list_dir(path: str) -> tuple[list[str], int]:
    try:
        with os.scandir(path) as it:
            entries = sorted((e.name + "/" if e.is_dir(follow_symlinks=False) else e.name) for e in it)
    except OSError:
        return [], 0
    return entries[:LIST_ENTRIES], len(entries)


def _not_found(rel_input: str, abs_path: str) -> ToolError:
    msg = f"file not found: {display(rel_input)!r}"
    parent = os.path.dirname(abs_path)
    try:
        names = os.listdir(parent)
    except OSError:
        names = []
    import difflib  # only for a missing file's "did you mean"

    close = difflib.get_close_matches(os.path.basename(abs_path), names, n=3, cutoff=0.6)
    if close:
        prefix = os.path.dirname(rel_input.rstrip("/"))
        guesses = [display(os.path.join(prefix, c) if prefix else c) for c in close]
        msg += "; did you mean " + " or ".join(repr(g) for g in guesses) + "?"
    return ToolError(msg)


def _lines(f: BinaryIO, budget: _Budget) -> Iterator[tuple[bytes, int]]:
    """(line without its newline, capped to MAX_LINE_BYTES; bytes dropped from it).
    Raises _Stop at a NUL byte (binary data) or when the budget is spent."""
    while True:
        piece = budget.spend(f.readline(MAX_LINE_BYTES + 1))
        if not piece:
            return
        if b"\x00" in piece:
            raise _Stop("binary data (a NUL byte) from here on")
        dropped = 0
        if not piece.endswith(b"\n") and len(piece) > MAX_LINE_BYTES:
            dropped = len(piece) - MAX_LINE_BYTES
            piece = piece[:MAX_LINE_BYTES]
            while True:  # skip the rest of the long line, chunk by chunk
                rest = budget.spend(f.readline(65536))
                if not rest:
                    break
                if b"\x00" in rest:
                    raise _Stop("binary data (a NUL byte) from here on")
                if rest.endswith(b"\n"):
                    dropped += len(rest) - 1
                    break
                dropped += len(rest)
        if piece.endswith(b"\n"):
            piece = piece[:-1]
        if piece.endswith(b"\r"):
            piece = piece[:-1]
        yield piece, dropped


def read_file(ctx: Context, args: Mapping[str, Any], timeout_s: Optional[float]) -> ToolResult:
    check_names("read_file", args, {"path", "start_line", "end_line"})
    path = req_str("read_file", args, "path")
    start = opt_int("read_file", args, "start_line")
    end = opt_int("read_file", args, "end_line")
    if start is not None and start < 1:
        raise ToolError(f"read_file: start_line must be >= 1 (lines are numbered from 1), got {start}")
    if end is not None and end < 1:
        raise ToolError(f"read_file: end_line must be >= 1 (lines are numbered from 1), got {end}")
    if start is not None and end is not None and end < start:
        raise ToolError(f"read_file: end_line ({end}) is before start_line ({start})")

    limit = min(timeout_s, READ_TIMEOUT_S) if timeout_s else READ_TIMEOUT_S
    budget = _Budget(time.monotonic() + limit)
    found = find(ctx.root, path, ctx.root_fd(), open_file=True)
    st = found.st
    if st is None:
        if found.error is None or found.error.errno in (errno.ENOENT, errno.ENOTDIR):
            raise _not_found(path, found.abs)
        raise ToolError(f"cannot read {display(found.rel)!r}: {found.error.strerror}")
    if stat.S_ISDIR(st.st_mode):
        entries, total = _list_dir(found.abs)
        listing = ", ".join(display(e) for e in entries)
        more = f", ... ({total} entries)" if total > len(entries) else ""
        what = f"it contains: {listing}{more}" if total else "it is empty"
        raise ToolError(
            f"{display(found.rel)!r} is a directory, not a file; {what}. Read a file inside it, or use search.",
            data={"is_directory": True, "entries": entries, "entry_count": total},
        )
    if found.fd < 0:  # find opens regular files only
        raise ToolError(f"{display(found.rel)!r} is not a regular file (a device, FIFO or socket)")
    try:
        head = read_up_to(found.fd, st.st_size, SMALL_FILE_BYTES)
        if b"\x00" in head[:SNIFF_BYTES]:
            raise ToolError(
                f"{display(found.rel)!r} is a binary file ({st.st_size} bytes); not shown",
                data={"binary": True, "size_bytes": st.st_size, "path": display(found.rel)},
            )
        return _render(ctx, head, found.fd, found.rel, st.st_size, start, end, budget)
    finally:
        os.close(found.fd)


def _render(
    ctx: Context, head: bytes, fd: int, rel: str, size: int, start: Optional[int], end: Optional[int], scan: _Budget
) -> ToolResult:
    """``head``: the file's first bytes (read_up_to: all of them when at most SMALL_FILE_BYTES)."""
    first = start or 1
    budget = max(ctx.output_limit, 200)
    whole = len(head) <= SMALL_FILE_BYTES
    shown = _small_file(head, first, end, budget) if whole else None
    stopped = ""
    if shown is None:
        if whole:
            shown, stopped = _stream(io.BytesIO(head), first, end, budget, scan)
        else:
            os.lseek(fd, 0, os.SEEK_SET)
            with os.fdopen(fd, "rb", closefd=False) as f:
                shown, stopped = _stream(f, first, end, budget, scan)
    out, shown_last, total, truncated = shown
    if stopped and not out:
        raise ToolError(
            f"read_file: nothing to show from line {first} of {display(rel)!r}: {stopped}",
            data={"path": display(rel), "stopped": stopped, "size_bytes": size},
        )

    if total is not None and total == 0:
        if start is not None and start > 1:
            raise ToolError(f"read_file: start_line {start} is past the end of the file (it is empty)")
        return ToolResult(
            output="(empty file)",
            data={
                "path": display(rel),
                "total_lines": 0,
                "start_line": None,
                "end_line": None,
                "truncated": False,
                "size_bytes": size,
            },
        )
    if total is not None and first > total:
        raise ToolError(f"read_file: start_line {first} is past the end of the file ({total} lines)")

    body = "".join(out)
    total_s = str(total) if total is not None else "unknown (huge file)"
    whole = first == 1 and not truncated and total is not None and shown_last == total
    footer = ""
    if stopped:
        footer = f"[showing lines {first}-{shown_last}; stopped reading: {stopped}]"
    elif truncated:
        footer = (
            f"[showing lines {first}-{shown_last} of {total_s}; output limit reached: "
            f"continue with start_line={shown_last + 1}]"
        )
    elif not whole:
        footer = f"[lines {first}-{shown_last} of {total_s}]"
    output = body + footer if footer else body.rstrip("\n")
    return ToolResult(
        output=output,
        data={
            "path": display(rel),
            "total_lines": total,
            "start_line": first,
            "end_line": shown_last,
            "truncated": truncated,
            "size_bytes": size,
            **({"stopped": stopped} if stopped else {}),
        },
    )




def _small_file(data: bytes, first: int, end: Optional[int], budget: int) -> Optional[_Shown]:
    """The same as _stream, 3x faster, for a whole file of at most SMALL_FILE_BYTES with no
    over-long line (None: use _stream). Lines are split and formatted by comprehensions."""
    if b"\x00" in data:
        return None  # a NUL past the sniff: _stream stops there and says so
    parts = data.split(b"\n")
    if parts[-1] == b"":  # the file ends with a newline, or is empty
        parts.pop()
    total = len(parts)
    picked = parts[first - 1 : end]
    if any(len(p) > MAX_LINE_BYTES for p in picked):
        return None
    lines = [
        f"{n:>6}\t{(p[:-1] if p.endswith(_CR) else p).decode('utf-8', 'replace')}\n"
        for n, p in enumerate(picked, first)
    ]
    used = 0
    count = 0
    for line in lines:
        used += len(line) if line.isascii() else len(line.encode("utf-8", "replace"))
        if used > budget and count:
            break
        count += 1
    truncated = count < len(lines)
    return lines[:count], first + count - 1 if count else 0, total, truncated


def _stream(f: BinaryIO, first: int, end: Optional[int], budget: int, scan: _Budget) -> Tuple[_Shown, str]:
    """Line by line, whatever the file's size: memory and work stay bounded.
    Returns what was shown and, if reading stopped early, why."""
    out: list[str] = []
    used = 0
    shown_last = 0  # last line number shown
    n = 0
    truncated = False
    stopped_early = False
    lines = _lines(f, scan)
    while True:
        try:
            raw, dropped = next(lines)
        except StopIteration:
            break
        except _Stop as stop:
            return (out, shown_last, None, truncated), str(stop)
        n += 1
        if n < first:
            continue
        if end is not None and n > end:
            stopped_early = True
            break
        text = raw.decode("utf-8", "replace")
        if dropped:
            text += f" ... [{dropped} more bytes on this line]"
        line = f"{n:>6}\t{text}\n"
        used += len(line) if line.isascii() else len(line.encode("utf-8", "replace"))
        if used > budget and out:
            truncated = True
            stopped_early = True
            break
        out.append(line)
        shown_last = n
    total: Optional[int] = n
    if stopped_early:
        # line n was read but not shown: count it and everything after it
        rest = _count_remaining_lines(f, scan)
        total = None if rest is None else n + rest
    return (out, shown_last, total, truncated), ""


def _count_remaining_lines(f: BinaryIO, scan: _Budget) -> Optional[int]:
    """Lines from the current position to the end (None past COUNT_LIMIT_BYTES).

    Every newline ends a line; a final piece without a newline is one more.
    """
    count = 0
    read = 0
    last = b"\n"
    while True:
        chunk = f.read(1 << 20)
        if not chunk:
            break
        read += len(chunk)
        if read > COUNT_LIMIT_BYTES or time.monotonic() > scan.deadline:
            return None
        count += chunk.count(b"\n")
        last = chunk[-1:]
    if last != b"\n":
        count += 1
    return count
