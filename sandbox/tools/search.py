"""search {query, path?, glob?, regex?, max_results?}

One result per matching line, ``path:line: text``, path relative to the
repository root, in path order (ripgrep's ``--sort path``: depth first, the
entries of each directory sorted by name). Both engines give the same results:

- ripgrep when it is on PATH: ``rg --json --sort path --hidden --no-ignore
  --encoding none --no-config --binary --max-filesize 64M --debug``
  (``--fixed-strings`` unless ``regex``), the user's ``--glob``\\s then
  ``--glob '!.git'``; the debug log on stderr is read only for the files rg
  skipped as too large;
- a pure-Python walk otherwise, with the same rules: hidden files searched,
  ``.git`` skipped, .gitignore NOT applied (``--no-ignore``), symlinks and
  anything but regular files not followed or searched during the walk, globs
  with gitignore syntax (``*`` does not cross ``/``, ``**``, ``?``, ``[...]``,
  ``{a,b}``, ``!`` negates, a glob without ``/`` matches the file name at any
  depth, with ``/`` it matches the path from the root, a
  trailing ``/`` only matches directories; the last matching glob wins; a
  positive glob filters files only, a negative one prunes directories too).
  This is the syntax of the policy's allow/deny globs too (agent/globs.py: gitignore via
  pathspec, plus braces); the one difference in meaning is that a glob here selects files
  by their own path, so a glob naming only a folder (``src``) selects none: ``src/**``.
  README "Globs" has the table of cases both matchers are tested against.

Nothing is skipped silently; the result of a search that ran to the end (not
cut by max_results or the deadline) says what was not searched or shown:
- binary files (a NUL byte) ARE searched (rg's ``--binary``: in a file found
  by the walk each NUL ends a line, in a file named by ``path`` NULs are kept);
  matches in them are listed, and the files named as binary;
- files over MAX_FILE_BYTES are not searched (a sparse 100 GB file would take
  minutes): counted and named;
- lines over MAX_LINE_BYTES: rg's JSON record of such a match is not shown,
  the Python engine does not search such a line: counted.
- symlinks are not followed, FIFOs, sockets and devices never opened: counted
  and named (rg's walk passes over links to directories without a word, so
  neither engine lists those).
A path that names a FIFO, socket or device is refused at once; the search has
its own deadline (DEFAULT_TIMEOUT_S, or the request's timeout if shorter).

Known differences: regex syntax (Rust regex vs Python re), and on lines that are
not valid UTF-8 a regex ``.`` matches an invalid byte in Python (as U+FFFD), not
in ripgrep. Lines are cut at MAX_COLUMNS characters. A path that names one file
is searched whatever the globs say (as ripgrep does).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import stat
import subprocess
import threading
import time
from typing import IO, Any, Iterator, List, Mapping, Optional

from sandbox.tools import (
    Context,
    ToolError,
    ToolResult,
    check_names,
    opt_bool,
    opt_int,
    opt_str,
    opt_str_list,
    req_str,
)
from sandbox.tools.globs import Glob, GlobSet  # noqa: F401 (Glob: tests and callers import it from here)
from sandbox.tools.output import HeadTail
from sandbox.tools.paths import display, resolve

DEFAULT_MAX_RESULTS = 50
MAX_RESULTS_CAP = 500
MAX_COLUMNS = 300
MAX_LINE_BYTES = 8 * 1024 * 1024  # a longer line (rg: JSON record) is skipped
MAX_FILE_BYTES = 64 * 1024 * 1024  # a larger file is not searched (rg --max-filesize 64M)
DEFAULT_TIMEOUT_S = 30.0
NAMED_SKIPS = 5  # how many skipped or binary files the result names
_RG_TOO_LARGE = re.compile(r"\bignoring (.+): (\d+) bytes$")
_RG_NOT_A_FILE = re.compile(r"\bignoring (.+): failed to pass subject filter: file type: Some\(\w+\(\w+ \{ mode: (\d+)")


class Skipped:
    """What a search did not search or show, and why: the result says it."""

    def __init__(self) -> None:
        self.large: list[str] = []  # files over MAX_FILE_BYTES
        self.long_lines = 0  # lines over MAX_LINE_BYTES
        self.binary: list[str] = []  # files with a NUL byte that had matches
        self.links: list[str] = []  # symlinks (but to directories), not followed
        self.special: list[str] = []  # FIFOs, sockets, devices: never opened

    def note_binary(self, path: str) -> None:
        if path not in self.binary:
            self.binary.append(path)

    def lines(self, engine: str) -> list[str]:
        out = []
        if self.binary:
            out.append(f"[matches in binary files (NUL bytes; each NUL ends a line): {_names(self.binary)}]")
        if self.large:
            mib = MAX_FILE_BYTES // (1024 * 1024)
            out.append(f"[{len(self.large)} file(s) over {mib} MiB not searched: {_names(self.large)}]")
        if self.long_lines:
            what = "matched but not shown" if engine == "rg" else "not searched"
            out.append(f"[{self.long_lines} line(s) over {MAX_LINE_BYTES // (1024 * 1024)} MiB {what}]")
        if self.links:
            out.append(f"[{len(self.links)} symlink(s) not followed: {_names(self.links)}]")
        if self.special:
            out.append(f"[{len(self.special)} FIFO, socket or device file(s) not searched: {_names(self.special)}]")
        return out

    def data(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.binary:
            out["binary_files"] = self.binary[:NAMED_SKIPS]
        if self.large:
            out["large_files_skipped"] = len(self.large)
        if self.long_lines:
            out["long_lines_skipped"] = self.long_lines
        if self.links:
            out["symlinks_skipped"] = len(self.links)
        if self.special:
            out["special_files_skipped"] = len(self.special)
        return out


def _names(paths: list[str]) -> str:
    more = f" and {len(paths) - NAMED_SKIPS} more" if len(paths) > NAMED_SKIPS else ""
    return ", ".join(paths[:NAMED_SKIPS]) + more


class Match:
    """One matching line, its text already cut to MAX_COLUMNS (500 of them stay small)."""

    __slots__ = ("line", "more", "path", "text")

    def __init__(self, path: str, line: int, text: str) -> None:
        self.path = path
        self.line = line
        self.text = text[:MAX_COLUMNS]
        self.more = max(0, len(text) - MAX_COLUMNS)

    def render(self) -> str:
        more = f" ... [{self.more} more chars]" if self.more else ""
        return f"{self.path}:{self.line}: {self.text}{more}"


def _clean_line(raw: bytes) -> str:
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", "replace")


# -- the two engines --------------------------------------------------------------------


def _walk(root: str, rel: str, globs: GlobSet, skipped: Skipped) -> Iterator[tuple[str, str]]:
    """(absolute path, path relative to root) of the files to search, in rg's order."""
    base = root if rel == "." else os.path.join(root, rel)
    try:
        with os.scandir(base) as it:
            entries = sorted(it, key=lambda e: os.fsencode(e.name))
    except OSError:
        return
    for e in entries:
        child = e.name if rel == "." else rel + "/" + e.name
        try:
            if e.is_dir(follow_symlinks=False):
                if globs.allow_dir(child):
                    yield from _walk(root, child, globs, skipped)
            elif not globs.allow_file(child):
                continue
            elif e.is_symlink():
                if not os.path.isdir(e.path):  # rg passes over links to directories without a word
                    skipped.links.append(display(child))
            elif not e.is_file(follow_symlinks=False):
                skipped.special.append(display(child))
            elif e.stat(follow_symlinks=False).st_size > MAX_FILE_BYTES:
                skipped.large.append(display(child))
            else:
                yield e.path, child
        except OSError:
            continue


def _python_search(
    root: str,
    rel: str,
    is_file: bool,
    query: str,
    regex: bool,
    globs: GlobSet,
    limit: int,
    deadline: float,
    skipped: Skipped,
) -> tuple[list[Match], bool, bool]:
    """(matches, more exist, timed out)."""
    pattern = re.compile(query) if regex else None
    needle = query.encode("utf-8", "surrogateescape")
    files: Iterator[tuple[str, str]]
    files = iter([(os.path.join(root, rel), rel)]) if is_file else _walk(root, rel, globs, skipped)
    found: list[Match] = []
    for abs_path, rel_path in files:
        if time.monotonic() > deadline:
            return found, False, True
        shown = display(rel_path)
        binary: List[bool] = []
        had = len(found)
        try:
            hits = _search_file(abs_path, needle, pattern if regex else None, skipped, binary, not is_file)
            for lineno, text in hits:
                if len(found) >= limit:
                    return found, True, False
                found.append(Match(shown, lineno, text))
                if time.monotonic() > deadline:
                    return found, False, True
        except OSError:
            continue
        finally:
            if binary and len(found) > had:
                skipped.note_binary(shown)
    return found, False, False


def _file_lines(f: Any, skipped: Skipped, binary: List[bool], split_nul: bool) -> Iterator[bytes]:
    """The lines as rg --binary sees them: a NUL byte makes ``binary`` non-empty and, in a file
    found by the walk (``split_nul``), ends a line too; rg keeps the NULs of a file named
    explicitly. Over-long lines are skipped and counted (b"" in their place)."""
    while True:
        raw = f.readline(MAX_LINE_BYTES)
        if not raw:
            return
        if not raw.endswith(b"\n") and len(raw) == MAX_LINE_BYTES:
            skipped.long_lines += 1
            while True:  # over-long line: skip the rest of it
                more = f.readline(1 << 20)
                if not more or more.endswith(b"\n"):
                    break
            yield b""  # it still counts as a line
            continue
        if b"\x00" in raw:
            if not binary:
                binary.append(True)
            if not split_nul:
                yield raw
                continue
            parts = raw.split(b"\x00")
            for part in parts[:-1]:
                yield part + b"\n"
            if parts[-1]:
                yield parts[-1]
            continue
        yield raw


def _search_file(
    path: str,
    needle: bytes,
    pattern: Optional[re.Pattern[str]],
    skipped: Skipped,
    binary: List[bool],
    split_nul: bool,
) -> Iterator[tuple[int, str]]:
    """(line number, text) of each matching line."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(_file_lines(f, skipped, binary, split_nul), 1):
            if not raw:
                continue
            if pattern is not None:
                # match the line without its "\n" but with any "\r", as rg does
                text = raw[:-1] if raw.endswith(b"\n") else raw
                if pattern.search(text.decode("utf-8", "replace")) is not None:
                    yield lineno, _clean_line(raw)
            elif needle in raw:
                yield lineno, _clean_line(raw)


def _rg_field(obj: Any) -> bytes:
    if not isinstance(obj, dict):
        return b""
    if isinstance(obj.get("text"), str):
        return str(obj["text"]).encode("utf-8", "surrogateescape")
    if isinstance(obj.get("bytes"), str):
        return base64.b64decode(obj["bytes"])
    return b""


def _rg_search(
    rg: str,
    root: str,
    rel: str,
    query: str,
    regex: bool,
    globs: list[str],
    limit: int,
    deadline: float,
    skipped: Skipped,
) -> tuple[list[Match], bool, bool, str]:
    """(matches, more exist, timed out, rg's error text)."""
    cmd = [rg, "--json", "--no-config", "--sort", "path", "--hidden", "--no-ignore"]
    cmd += ["--encoding", "none", "--color", "never", "--binary", "--debug"]
    cmd += ["--max-filesize", str(MAX_FILE_BYTES)]
    if not regex:
        cmd.append("--fixed-strings")
    for g in globs:
        cmd += ["--glob", g]
    cmd += ["--glob", "!.git", "--regexp", query, "--", rel]
    env = {k: v for k, v in os.environ.items() if k != "RIPGREP_CONFIG_PATH"}
    proc = subprocess.Popen(
        cmd,
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    err = HeadTail(4000)
    drainer = threading.Thread(target=_read_rg_log, args=(proc.stderr, err, skipped), daemon=True)
    drainer.start()
    timed_out = threading.Event()

    def on_deadline() -> None:
        timed_out.set()
        proc.kill()

    timer = threading.Timer(max(0.0, deadline - time.monotonic()), on_deadline)
    timer.daemon = True
    timer.start()
    found: list[Match] = []
    more = False
    try:
        while True:
            line = proc.stdout.readline(MAX_LINE_BYTES)
            if not line:
                break
            if not line.endswith(b"\n"):  # over-long record: skip it
                skipped.long_lines += line.startswith(b'{"type":"match"')
                while True:
                    rest = proc.stdout.readline(1 << 20)
                    if not rest or rest.endswith(b"\n"):
                        break
                continue
            if line.startswith(b'{"type":"end"'):
                _note_rg_binary(line, skipped, found)
                continue
            if not line.startswith(b'{"type":"match"'):
                continue
            try:
                data = json.loads(line)["data"]
                path = _rg_field(data["path"]).decode("utf-8", "replace")
                lineno = int(data["line_number"])
                text = _clean_line(_rg_field(data["lines"]))
            except (ValueError, KeyError, TypeError):
                continue
            if path.startswith("./"):
                path = path[2:]
            if len(found) >= limit:
                more = True
                break
            found.append(Match(path, lineno, text))
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.wait()
        drainer.join(timeout=2.0)
    errors = ""
    if proc.returncode == 2 and not more and not timed_out.is_set():
        errors = err.render()[0].strip()
    return found, more, timed_out.is_set(), errors


def _note_rg_binary(line: bytes, skipped: Skipped, found: List[Match]) -> None:
    """An "end" record with a binary_offset: the file had a NUL byte (its matches are listed)."""
    try:
        data = json.loads(line)["data"]
        if data.get("binary_offset") is None:
            return
        path = _rg_field(data["path"]).decode("utf-8", "replace")
    except (ValueError, KeyError, TypeError, AttributeError):
        return
    path = path[2:] if path.startswith("./") else path
    if any(m.path == path for m in found):
        skipped.note_binary(path)


def _note_rg_skip(text: str, skipped: Skipped) -> None:
    """A file rg's walk left out, from its debug log: too large, a symlink, or not a file."""
    large = _RG_TOO_LARGE.search(text)
    if large and int(large.group(2)) > MAX_FILE_BYTES:
        skipped.large.append(_rg_path(large.group(1)))
        return
    other = _RG_NOT_A_FILE.search(text)
    if other:
        kind = skipped.links if stat.S_ISLNK(int(other.group(2))) else skipped.special
        kind.append(_rg_path(other.group(1)))


def _rg_path(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _read_rg_log(stream: IO[bytes], err: HeadTail, skipped: Skipped) -> None:
    """rg's stderr with --debug: files skipped by --max-filesize are noted, DEBUG lines dropped,
    the rest (real errors) kept in ``err``."""
    try:
        for raw in iter(lambda: stream.readline(65536), b""):
            text = raw.decode("utf-8", "replace").rstrip("\n")
            if text.startswith("DEBUG|"):
                _note_rg_skip(text, skipped)
                continue
            err.feed(raw)
    except (OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(OSError):
            stream.close()


# -- the tool ---------------------------------------------------------------------------


def search(ctx: Context, args: Mapping[str, Any], timeout_s: Optional[float]) -> ToolResult:
    tool = "search"
    check_names(tool, args, {"query", "path", "glob", "regex", "max_results"})
    query = req_str(tool, args, "query")
    path = opt_str(tool, args, "path") or "."
    glob_arg = args.get("glob")
    globs: list[str]
    if glob_arg is None:
        globs = []
    elif isinstance(glob_arg, str):
        globs = [glob_arg] if glob_arg else []
    else:
        globs = opt_str_list(tool, args, "glob") or []
    regex = bool(opt_bool(tool, args, "regex"))
    max_results = opt_int(tool, args, "max_results")
    if max_results is None:
        max_results = DEFAULT_MAX_RESULTS
    if max_results < 1:
        raise ToolError(f"search: max_results must be >= 1, got {max_results}")
    max_results = min(max_results, MAX_RESULTS_CAP)

    if query == "":
        raise ToolError("search: query is empty")
    if "\n" in query or "\r" in query or "\x00" in query:
        raise ToolError("search: query must be a single line (no newline or NUL)")
    for g in globs:
        if "\x00" in g or "\n" in g:
            raise ToolError(f"search: bad glob {g!r}")
    res = resolve(ctx.root, path)
    try:
        st = os.stat(res.abs)
    except OSError:
        raise ToolError(f"search: path not found: {display(path)!r}") from None
    is_file = not stat.S_ISDIR(st.st_mode)
    if is_file and not stat.S_ISREG(st.st_mode):
        raise ToolError(f"search: {display(res.rel)!r} is not a regular file (a FIFO, socket or device); not searched")
    if is_file and st.st_size > MAX_FILE_BYTES:
        mib = MAX_FILE_BYTES // (1024 * 1024)
        return ToolResult(
            output=f"{display(res.rel)!r} is {st.st_size} bytes, over search's limit of {mib} MiB; not searched "
            "(read_file can show parts of it)",
            data={"count": 0, "truncated": False, "engine": "none", "large_files_skipped": 1},
        )

    deadline = time.monotonic() + (min(timeout_s, DEFAULT_TIMEOUT_S) if timeout_s else DEFAULT_TIMEOUT_S)
    errors = ""
    skipped = Skipped()
    if ctx.rg:
        engine = "rg"
        found, more, timed_out, errors = _rg_search(
            ctx.rg, ctx.root, res.rel, query, regex, globs, max_results, deadline, skipped
        )
        if errors and not found:
            first = errors.splitlines()
            if regex and "regex" in errors.lower():
                raise ToolError(f"search: invalid regex {query!r}: {' '.join(first)[:500]}")
            raise ToolError(f"search: ripgrep failed: {' '.join(first)[:500]}")
    else:
        engine = "python"
        if regex:
            try:
                re.compile(query)
            except re.error as e:
                raise ToolError(f"search: invalid regex {query!r}: {e}") from None
        found, more, timed_out = _python_search(
            ctx.root, res.rel, is_file, query, regex, GlobSet([*globs, "!.git"]), max_results, deadline, skipped
        )

    lines: list[str] = []
    used = 0
    budget = max(ctx.output_limit, 1000)
    for m in found:
        line = m.render()
        cost = len(line.encode("utf-8", "replace")) + 1
        if used + cost > budget:
            more = True
            break
        lines.append(line)
        used += cost
    shown = len(lines)
    where = "" if res.rel == "." else f" in {display(res.rel)}"
    body = "\n".join(lines) if shown or timed_out else f"no matches for {query!r}{where}"
    if more:
        body += f"\n[showing the first {shown} matches; more exist: narrow the query, the path or the glob]"
    if timed_out:
        body += f"\n[search timed out after {shown} matches]"
    if more or timed_out:
        skipped = Skipped()  # the walk stopped early: what it passed over so far is a partial list
    for note in skipped.lines(engine):
        body += "\n" + note
    data: dict[str, Any] = {"count": shown, "truncated": more, "engine": engine, **skipped.data()}
    if errors:
        data["errors"] = errors[:1000]
    if timed_out:
        return ToolResult(
            output=body.lstrip("\n"),
            ok=False,
            outcome="timeout",
            error="search timed out",
            data=data,
        )
    return ToolResult(output=body, data=data)
