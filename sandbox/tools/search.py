"""search {query, path?, glob?, regex?, max_results?}

One result per matching line, ``path:line: text``, path relative to the
repository root, in path order (ripgrep's ``--sort path``: depth first, the
entries of each directory sorted by name). Both engines give the same results:

- ripgrep when it is on PATH: ``rg --json --sort path --hidden --no-ignore
  --encoding none --no-config --binary --max-filesize 64M --debug``
  (``--fixed-strings`` unless ``regex``), the user's ``--glob``\\s then
  ``--glob '!.git'``; the debug log on stderr is read only for the files rg
  skipped as too large;
- a pure-Python walk otherwise (and for a literal query under ``--search-engine literal``,
  which codebox gives a gVisor sandbox: there starting rg costs more than the walk), with the
  same rules: hidden files searched,
  ``.git`` skipped, .gitignore NOT applied (``--no-ignore``), symlinks and
  anything but regular files not followed or searched during the walk, globs
  with gitignore syntax (``*`` does not cross ``/``, ``**``, ``?``, ``[...]``,
  ``{a,b}``, ``!`` negates, a glob without ``/`` matches the file name at any
  depth, with ``/`` it matches the path from the root, a
  trailing ``/`` only matches directories; the last matching glob wins; a
  positive glob filters files only, a negative one prunes directories too).
  This is the syntax of the policy's allow/deny globs too (agent/task/globs.py: gitignore via
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

This module reads the arguments, picks the engine and words the result; the engines are
search_rg.py (ripgrep) and search_python.py (the walk), and search_found.py holds what they
share: Match, Skipped and the size limits (MAX_COLUMNS, MAX_LINE_BYTES, MAX_FILE_BYTES).
"""

from __future__ import annotations

import re
import stat
import time

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
from sandbox.tools.paths import display, find
from sandbox.tools.search_found import MAX_FILE_BYTES, Skipped

# Not `from typing import ...` at run time: typing costs a first call ~3 ms and an idle
# sandbox ~1 MB; mypy reads these names, the interpreter never needs them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping, Optional

DEFAULT_MAX_RESULTS = 50
MAX_RESULTS_CAP = 500
DEFAULT_TIMEOUT_S = 30.0


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
    res = find(ctx.root, path, ctx.root_fd())
    st = res.st
    if st is None:
        raise ToolError(f"search: path not found: {display(path)!r}")
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
    if ctx.rg and (regex or not ctx.literal_in_python):
        engine = "rg"
        from sandbox.tools.search_rg import rg_search  # its imports (subprocess, threading) only when used

        found, more, timed_out, errors = rg_search(
            ctx.rg, ctx.root, res.rel, query, regex, globs, max_results, deadline, skipped, ctx.rg_via
        )
        if errors and not found:
            first = errors.splitlines()
            if regex and "regex" in errors.lower():
                raise ToolError(f"search: invalid regex {query!r}: {' '.join(first)[:500]}")
            raise ToolError(f"search: ripgrep failed: {' '.join(first)[:500]}")
    else:
        engine = "python"
        from sandbox.tools.search_python import python_search
        if regex:
            try:
                re.compile(query)
            except re.error as e:
                raise ToolError(f"search: invalid regex {query!r}: {e}") from None
        found, more, timed_out = python_search(
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
