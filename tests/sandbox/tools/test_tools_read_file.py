"""read_file through the server on pipes."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tests.sandbox.server_support import ServerProc, make_tree


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_tree(tmp_path_factory.mktemp("repo"))
    (root / "numbers.txt").write_text("".join(f"line {i}\n" for i in range(1, 10001)))
    (root / "no_newline.txt").write_text("a\nb")
    (root / "empty.txt").write_text("")
    os.mkfifo(root / "pipe")
    many = root / "many"
    many.mkdir()
    for i in range(30):
        (many / f"f{i:02}.txt").write_text("x")
    return root


@pytest.fixture(scope="module")
def server(tree: Path) -> Iterator[ServerProc]:
    s = ServerProc(tree, "--output-limit", "2000")
    yield s
    s.close()


def read(server: ServerProc, **args: Any) -> dict[str, Any]:
    return server.request("read_file", dict(args))


def test_whole_small_file_numbered_without_footer(server: ServerProc) -> None:
    r = read(server, path="src/app.py")
    assert r["ok"] and r["outcome"] == "ok"
    assert r["output"] == (
        "     1\timport os\n     2\t\n     3\tdef main():\n"
        "     4\t    return 'needle'  # a.b(c\n     5\t\n     6\tNEEDLE = 1"
    )
    assert r["data"] == {
        "path": "src/app.py",
        "total_lines": 6,
        "start_line": 1,
        "end_line": 6,
        "truncated": False,
        "size_bytes": 64,
    }


def test_range_is_inclusive_and_footer_gives_the_total(server: ServerProc) -> None:
    r = read(server, path="numbers.txt", start_line=10, end_line=12)
    assert r["output"] == "    10\tline 10\n    11\tline 11\n    12\tline 12\n[lines 10-12 of 10000]"
    assert r["data"]["total_lines"] == 10000 and r["data"]["end_line"] == 12


def test_end_past_the_end_is_clamped(server: ServerProc) -> None:
    r = read(server, path="numbers.txt", start_line=9999, end_line=20000)
    assert r["output"] == "  9999\tline 9999\n 10000\tline 10000\n[lines 9999-10000 of 10000]"
    r = read(server, path="no_newline.txt", start_line=2)
    assert r["output"] == "     2\tb\n[lines 2-2 of 2]"


def test_big_file_is_truncated_with_a_way_to_continue(server: ServerProc) -> None:
    r = read(server, path="numbers.txt")
    out = r["output"]
    assert r["ok"] and r["data"]["truncated"] is True
    last = r["data"]["end_line"]
    assert 50 < last < 200
    assert len(out.encode()) < 2300
    assert out.endswith(f"[showing lines 1-{last} of 10000; output limit reached: continue with start_line={last + 1}]")
    r2 = read(server, path="numbers.txt", start_line=last + 1, end_line=last + 1)
    assert r2["output"].startswith(f"{last + 1:>6}\tline {last + 1}\n")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"start_line": 0}, "start_line must be >= 1"),
        ({"end_line": 0}, "end_line must be >= 1"),
        ({"start_line": 5, "end_line": 4}, "end_line (4) is before start_line (5)"),
        ({"start_line": 10001}, "start_line 10001 is past the end of the file (10000 lines)"),
    ],
)
def test_bad_ranges(server: ServerProc, args: dict[str, int], needle: str) -> None:
    r = read(server, path="numbers.txt", **args)
    assert r["ok"] is False and needle in r["error"]


def test_long_line_is_shortened(server: ServerProc) -> None:
    r = read(server, path="long.txt")
    assert r["ok"]
    assert r["output"].endswith("... [3006 more bytes on this line]")  # 5006 bytes, 2000 kept


def test_binary_is_reported_not_dumped(server: ServerProc) -> None:
    r = read(server, path="bin.dat")
    assert r["ok"] is False and "binary file" in r["error"]
    assert "\x00" not in r["output"]
    assert r["data"]["binary"] is True


def test_directory_is_refused_with_a_listing(server: ServerProc) -> None:
    r = read(server, path="src")
    assert r["ok"] is False
    assert "'src' is a directory" in r["error"] and "app.py" in r["error"] and "util/" in r["error"]
    r = read(server, path="many")
    assert "f00.txt" in r["error"] and "(30 entries)" in r["error"] and "f29.txt" not in r["error"]
    assert r["data"]["entry_count"] == 30


def test_missing_file_suggests_close_names(server: ServerProc) -> None:
    r = read(server, path="src/ap.py")
    assert r["ok"] is False and "file not found: 'src/ap.py'" in r["error"]
    assert "did you mean 'src/app.py'" in r["error"]
    r = read(server, path="README.md/x")
    assert "file not found" in r["error"]


def test_fifo_is_refused_without_blocking(server: ServerProc) -> None:
    r = read(server, path="pipe")
    assert r["ok"] is False and "not a regular file" in r["error"]


def test_empty_file(server: ServerProc) -> None:
    r = read(server, path="empty.txt")
    assert r["ok"] and r["output"] == "(empty file)" and r["data"]["total_lines"] == 0


def test_crlf_unicode_and_invalid_utf8(server: ServerProc) -> None:
    assert read(server, path="crlf.txt")["output"] == "     1\tone needle\n     2\ttwo\n     3\tthree needle"
    assert "café needle über" in read(server, path="unicode.txt")["output"]
    assert read(server, path="latin1.txt")["output"] == "     1\tneedle caf\ufffd"


def test_symlinks(server: ServerProc) -> None:
    r = read(server, path="link_app")
    assert r["ok"] and r["data"]["path"] == "src/app.py"
    for path in ("link_etc", "link_etc_dir/passwd", "src/rel_escape"):
        r = read(server, path=path)
        assert r["ok"] is False and "path escapes the repository" in r["error"], path
        assert "root:" not in r["output"]


def test_escapes(server: ServerProc) -> None:
    for path in ("/etc/passwd", "../../../../etc/passwd", "src/../../x"):
        r = read(server, path=path)
        assert r["ok"] is False and "path escapes the repository" in r["error"], path


def test_streamed_big_file(tree: Path, server: ServerProc) -> None:
    """Over SMALL_FILE_BYTES the file is read line by line: same output rules."""
    (tree / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, 300_001)))  # ~2.8 MB
    r = read(server, path="big.txt")
    last = r["data"]["end_line"]
    assert r["data"]["truncated"] and r["data"]["total_lines"] == 300_000
    assert r["output"].endswith(f"of 300000; output limit reached: continue with start_line={last + 1}]")
    r = read(server, path="big.txt", start_line=150_000, end_line=150_001)
    assert r["output"] == "150000\trow 150000\n150001\trow 150001\n[lines 150000-150001 of 300000]"


CONTENTS = [
    b"",
    b"a",
    b"a\n",
    b"a\nb",
    b"\n\n\n",
    b"one\r\ntwo\r\n",
    "caf\u00e9\n\u65e5\u672c\n".encode(),
    b"bad \xff byte\n",
    b"".join(b"line %d\n" % i for i in range(1, 400)),
]


@pytest.mark.parametrize("content", CONTENTS)
@pytest.mark.parametrize(
    ("first", "end", "budget"), [(1, None, 10_000), (2, 3, 10_000), (1, None, 200), (5, None, 300)]
)
def test_small_file_path_matches_the_streaming_path(content: bytes, first: int, end: int | None, budget: int) -> None:
    import io

    from sandbox.tools.read_file import _Budget, _small_file, _stream

    fast = _small_file(content, first, end, budget)
    slow, stopped = _stream(io.BytesIO(content), first, end, budget, _Budget(float("inf")))
    assert stopped == ""
    assert fast is not None
    assert fast[0] == slow[0] and fast[2] == slow[2] and fast[3] == slow[3]
    if fast[0]:
        assert fast[1] == slow[1]


def test_a_sparse_file_with_text_first_is_read_with_bounded_work(tree: Path, server: ServerProc) -> None:
    """Issue 13: 100 GB of holes after a text head used to be read to the end, past the host's deadline."""
    big = tree / "sparse.log"
    with open(big, "wb") as f:
        f.write(b"".join(b"head line %d\n" % i for i in range(2000)))  # 26 KB: past the 8 KiB sniff
        f.truncate(100 * 1024**3)
    r = read(server, path="sparse.log", start_line=1990)
    assert r["ok"], r["output"]
    assert "head line 1999" in r["output"] and "stopped reading: binary data" in r["output"]
    assert r["data"]["stopped"].startswith("binary data")
    r = read(server, path="sparse.log", start_line=2005)
    assert r["ok"] is False and "nothing to show from line 2005" in r["error"]


def test_a_nul_after_the_sniff_stops_reading_there(tree: Path, server: ServerProc) -> None:
    (tree / "late.txt").write_bytes(b"x\n" * 5000 + b"tail\x00secret\n")
    r = read(server, path="late.txt", start_line=4999)
    assert r["ok"] and "secret" not in r["output"] and "stopped reading: binary data" in r["output"]
