"""search {query, path?, glob?, regex?, max_results?}

One result per matching line, ``path:line: text``, path relative to the
repository root, in path order (ripgrep's ``--sort path``: depth first, the
entries of each directory sorted by name). Both engines give the same results:

- ripgrep when it is on PATH: ``rg --json --sort path --hidden --no-ignore
  --encoding none --no-config`` (``--fixed-strings`` unless ``regex``), the
  user's ``--glob``\\s then ``--glob '!.git'``;
- a pure-Python walk otherwise, with the same rules: hidden files searched,
  ``.git`` skipped, .gitignore NOT applied (``--no-ignore``), symlinks not
  followed during the walk, binary files (a NUL byte in the first 64 KiB)
  skipped, globs with gitignore syntax (``*`` does not cross ``/``, ``**``,
  ``?``, ``[...]``, ``{a,b}``, ``!`` negates, a glob without ``/`` matches the
  file name at any depth, with ``/`` it matches the path from the root, a
  trailing ``/`` only matches directories; the last matching glob wins; a
  positive glob filters files only, a negative one prunes directories too).
  This is the syntax of the policy's allow/deny globs too (agent/globs.py: gitignore via
  pathspec, plus braces); the one difference in meaning is that a glob here selects files
  by their own path, so a glob naming only a folder (``src``) selects none: ``src/**``.
  README "Globs" has the table of cases both matchers are tested against.

Known differences: regex syntax (Rust regex vs Python re), and on lines that are
not valid UTF-8 a regex ``.`` matches an invalid byte in Python (as U+FFFD), not
in ripgrep; lines over 8 MiB are skipped (rg: JSON records over 8 MiB), and a
NUL byte past the first 64 KiB stops the file at slightly different points.
Lines are cut at MAX_COLUMNS characters. A path that names one file is searched
whatever the globs say (as ripgrep does), unless it is binary.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import threading
import time
from typing import Any, Iterator, Mapping, Optional

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
from sandbox.tools.output import HeadTail, drain_in_thread
from sandbox.tools.paths import display, resolve

DEFAULT_MAX_RESULTS = 50
MAX_RESULTS_CAP = 500
MAX_COLUMNS = 300
BINARY_SNIFF = 65536
MAX_LINE_BYTES = 8 * 1024 * 1024  # a longer line (rg: JSON record) is skipped
DEFAULT_TIMEOUT_S = 30.0


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


def _is_binary_file(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return b"\x00" in f.read(BINARY_SNIFF)
    except OSError:
        return False


# -- globs ----------------------------------------------------------------------------


class Glob:
    """One gitignore-style glob, as ripgrep's --glob reads it."""

    def __init__(self, pattern: str) -> None:
        self.source = pattern
        p = pattern
        self.negated = p.startswith("!")
        if self.negated:
            p = p[1:]
        self.dir_only = p.endswith("/") and len(p) > 1
        if self.dir_only:
            p = p.rstrip("/")
        anchored = p.startswith("/")
        if anchored:
            p = p.lstrip("/")
        elif "/" not in p and not p.startswith("**"):
            p = "**/" + p  # no slash: matches the name at any depth
        self.regex = re.compile(_glob_to_regex(p), re.DOTALL)

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        return self.regex.match(rel) is not None


def _glob_to_regex(p: str) -> str:
    out: list[str] = []
    i, n = 0, len(p)
    in_brace = 0
    while i < n:
        c = p[i]
        if p.startswith("**/", i) and (i == 0 or p[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
            continue
        if p.startswith("**", i) and (i == 0 or p[i - 1] == "/") and i + 2 == n:
            out.append(".*")
            i += 2
            continue
        if c == "*":
            while i < n and p[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and p[j] in "!^":
                j += 1
            if j < n and p[j] == "]":
                j += 1
            while j < n and p[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = p[i + 1 : j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "{":
            in_brace += 1
            out.append("(?:")
        elif c == "}" and in_brace:
            in_brace -= 1
            out.append(")")
        elif c == "," and in_brace:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(p[i]))
        else:
            out.append(re.escape(c))
        i += 1
    out.extend(")" * in_brace)
    return "".join(out) + r"\Z"


class GlobSet:
    def __init__(self, patterns: list[str]) -> None:
        self.globs = [Glob(p) for p in patterns]
        self.has_positive = any(not g.negated for g in self.globs)

    def _last(self, rel: str, is_dir: bool) -> Optional[Glob]:
        for g in reversed(self.globs):
            if g.matches(rel, is_dir):
                return g
        return None

    def allow_dir(self, rel: str) -> bool:
        g = self._last(rel, True)
        return g is None or not g.negated

    def allow_file(self, rel: str) -> bool:
        g = self._last(rel, False)
        if g is None:
            return not self.has_positive
        return not g.negated


# -- the two engines --------------------------------------------------------------------


def _walk(root: str, rel: str, globs: GlobSet) -> Iterator[tuple[str, str]]:
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
            if e.is_symlink():
                continue
            if e.is_dir(follow_symlinks=False):
                if globs.allow_dir(child):
                    yield from _walk(root, child, globs)
            elif e.is_file(follow_symlinks=False) and globs.allow_file(child):
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
) -> tuple[list[Match], bool, bool]:
    """(matches, more exist, timed out)."""
    pattern = re.compile(query) if regex else None
    needle = query.encode("utf-8", "surrogateescape")
    files: Iterator[tuple[str, str]] = iter([(os.path.join(root, rel), rel)]) if is_file else _walk(root, rel, globs)
    found: list[Match] = []
    for abs_path, rel_path in files:
        if time.monotonic() > deadline:
            return found, False, True
        try:
            hits = _search_file(abs_path, needle, pattern if regex else None)
        except OSError:
            continue
        for lineno, text in hits:
            if len(found) >= limit:
                return found, True, False
            found.append(Match(display(rel_path), lineno, text))
    return found, False, False


def _search_file(path: str, needle: bytes, pattern: Optional[re.Pattern[str]]) -> Iterator[tuple[int, str]]:
    with open(path, "rb") as f:
        if b"\x00" in f.read(BINARY_SNIFF):
            return
        f.seek(0)
        lineno = 0
        while True:
            raw = f.readline(MAX_LINE_BYTES)
            if not raw:
                return
            lineno += 1
            if not raw.endswith(b"\n") and len(raw) == MAX_LINE_BYTES:
                while True:  # over-long line: skip the rest of it
                    more = f.readline(1 << 20)
                    if not more or more.endswith(b"\n"):
                        break
                continue
            if b"\x00" in raw:  # binary after all: stop here, as rg does
                return
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
) -> tuple[list[Match], bool, bool, str]:
    """(matches, more exist, timed out, rg's error text)."""
    cmd = [rg, "--json", "--no-config", "--sort", "path", "--hidden", "--no-ignore"]
    cmd += ["--encoding", "none", "--color", "never"]
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
    drainer = drain_in_thread(proc.stderr, err)
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
                while True:
                    rest = proc.stdout.readline(1 << 20)
                    if not rest or rest.endswith(b"\n"):
                        break
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
    if not os.path.exists(res.abs):
        raise ToolError(f"search: path not found: {display(path)!r}")
    is_file = not os.path.isdir(res.abs)
    if is_file and _is_binary_file(res.abs):
        return ToolResult(
            output=f"{display(res.rel)!r} is a binary file; not searched",
            data={"count": 0, "truncated": False, "engine": "none", "binary": True},
        )

    deadline = time.monotonic() + (timeout_s if timeout_s else DEFAULT_TIMEOUT_S)
    errors = ""
    if ctx.rg:
        engine = "rg"
        found, more, timed_out, errors = _rg_search(
            ctx.rg, ctx.root, res.rel, query, regex, globs, max_results, deadline
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
            ctx.root, res.rel, is_file, query, regex, GlobSet([*globs, "!.git"]), max_results, deadline
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
    data: dict[str, Any] = {"count": shown, "truncated": more, "engine": engine}
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
