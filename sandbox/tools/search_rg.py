"""The ripgrep search engine: runs ``rg --json`` and reads its records into Matches.

``rg_search`` builds the command line (the flags are listed in search.py's docstring), stops rg
at the deadline or at the limit, and reads rg's ``--debug`` log on stderr for the files its walk
left out (too large, symlinks, FIFOs/sockets/devices); other stderr lines are rg's errors.
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

from sandbox.tools.output import HeadTail
from sandbox.tools.search_found import MAX_FILE_BYTES, MAX_LINE_BYTES, Match, Skipped, clean_line

# Not `from typing import ...` at run time: typing costs a first call ~3 ms and an idle
# sandbox ~1 MB; mypy reads these names, the interpreter never needs them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any, List, Sequence

_RG_TOO_LARGE = re.compile(r"\bignoring (.+): (\d+) bytes$")
_RG_NOT_A_FILE = re.compile(r"\bignoring (.+): failed to pass subject filter: file type: Some\(\w+\(\w+ \{ mode: (\d+)")


def _rg_field(obj: Any) -> bytes:
    if not isinstance(obj, dict):
        return b""
    if isinstance(obj.get("text"), str):
        return str(obj["text"]).encode("utf-8", "surrogateescape")
    if isinstance(obj.get("bytes"), str):
        return base64.b64decode(obj["bytes"])
    return b""


def rg_search(
    rg: str,
    root: str,
    rel: str,
    query: str,
    regex: bool,
    globs: list[str],
    limit: int,
    deadline: float,
    skipped: Skipped,
    via: Sequence[str] = (),
) -> tuple[list[Match], bool, bool, str]:
    """(matches, more exist, timed out, rg's error text). ``via``: the loader argv rg starts through."""
    cmd = [*via, rg, "--json", "--no-config", "--sort", "path", "--hidden", "--no-ignore"]
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
                text = clean_line(_rg_field(data["lines"]))
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
