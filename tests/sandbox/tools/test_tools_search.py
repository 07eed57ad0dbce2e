"""search through the server: ripgrep and the pure-Python fallback give the same results."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sandbox.tools.search import Glob
from tests.sandbox.server_support import ServerProc, make_tree

HAVE_RG = shutil.which("rg") is not None
if not HAVE_RG and os.environ.get("CI"):
    raise RuntimeError("CI must have ripgrep on PATH: the rg engine's tests are required there")
ENGINES = ["python", pytest.param("rg", marks=pytest.mark.skipif(not HAVE_RG, reason="rg is not on PATH"))]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_tree(tmp_path_factory.mktemp("repo"))
    (root / "many").mkdir()
    for i in range(600):
        (root / "many" / f"m{i:03}.txt").write_text("hit\n")
    (root / "Zeta.txt").write_text("needle upper-case name\n")  # byte order: before lower case
    (root / "src" / "a_file_before_util.py").write_text("needle\n")
    os.mkfifo(root / "fifo")
    (root / "bad_name_\udcff.txt".encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")).write_text(
        "needle in a badly named file\n"
    )
    return root


@pytest.fixture(scope="module")
def servers(tree: Path) -> Iterator[dict[str, ServerProc]]:
    s = {"python": ServerProc(tree, "--search-engine", "python")}
    if HAVE_RG:
        s["rg"] = ServerProc(tree, "--search-engine", "rg")
        s["literal"] = ServerProc(tree, "--search-engine", "literal")
    yield s
    for server in s.values():
        server.close()


def search(server: ServerProc, **args: Any) -> dict[str, Any]:
    return server.request("search", args)


AGREEMENT_CASES: list[dict[str, Any]] = [
    {"query": "needle"},
    {"query": "NEEDLE"},
    {"query": "a.b(c"},
    {"query": r"a\.b\(c", "regex": True},
    {"query": r"^def \w+", "regex": True},
    {"query": r"needle$", "regex": True},  # CRLF lines: $ does not match before \r
    {"query": r"caf. needle", "regex": True},
    {"query": "caf"},  # a line with invalid UTF-8
    {"query": "café"},
    {"query": "needle", "path": "src"},
    {"query": "needle", "path": "link_src"},
    {"query": "needle", "path": "src/app.py"},
    {"query": "needle", "path": "src/app.py", "glob": "*.md"},  # a file named is searched anyway
    {"query": "needle", "glob": "*.py"},
    {"query": "needle", "glob": "!*.py"},
    {"query": "needle", "glob": "src/**"},
    {"query": "needle", "glob": "src/*.py"},
    {"query": "needle", "glob": "**/util/*"},
    {"query": "needle", "glob": "*.{json,md}"},
    {"query": "needle", "glob": ["*.txt", "!long*"]},
    {"query": "needle", "glob": "/README.md"},
    {"query": "needle", "glob": "!src"},
    {"query": "needle", "glob": "util/"},
    {"query": "needle", "glob": "[a-c]*.txt"},
    {"query": "needle", "glob": ".hidden/*"},
    {"query": "needle", "glob": "*.PY"},
    {"query": "needle", "max_results": 3},
    {"query": "hit", "max_results": 1000},
    {"query": "hit", "path": "many", "glob": "m1?5.txt"},
    {"query": "nothing matches this"},
]


@pytest.mark.skipif(not HAVE_RG, reason="rg is not on PATH")
@pytest.mark.parametrize("case", AGREEMENT_CASES, ids=lambda c: repr(c))
def test_rg_and_python_agree(servers: dict[str, ServerProc], case: dict[str, Any]) -> None:
    a = search(servers["rg"], **case)
    b = search(servers["python"], **case)
    assert a["data"].pop("engine") == "rg" and b["data"].pop("engine") == "python"
    assert a == {**b, "id": a["id"]}


@pytest.mark.skipif(not HAVE_RG, reason="rg is not on PATH")
@pytest.mark.parametrize("case", AGREEMENT_CASES, ids=lambda c: repr(c))
def test_the_literal_engine_gives_rgs_results_searching_literals_itself(
    servers: dict[str, ServerProc], case: dict[str, Any]
) -> None:
    a = search(servers["rg"], **case)
    b = search(servers["literal"], **case)
    assert a["data"].pop("engine") == "rg"
    assert b["data"].pop("engine") == ("rg" if case.get("regex") else "python")
    assert a == {**b, "id": a["id"]}


@pytest.mark.parametrize("engine", ENGINES)
def test_default_search_results(servers: dict[str, ServerProc], engine: str) -> None:
    r = search(servers[engine], query="needle")
    assert r["ok"] and r["outcome"] == "ok"
    lines = r["output"].splitlines()
    paths = [line.split(":", 1)[0] for line in lines]
    # hidden files and binary files (named as such) yes; .git (even nested), symlinks, fifos: no
    assert ".hidden/config.txt" in paths
    assert not any(".git" in p for p in paths)
    assert "bin.dat:1: needle" in lines and "bin.dat:2: \x01\x02binary needle" in lines
    assert lines[-3:] == [
        "[matches in binary files (NUL bytes; each NUL ends a line): bin.dat]",
        "[3 symlink(s) not followed: link_app, link_etc, src/rel_escape]",
        "[1 FIFO, socket or device file(s) not searched: fifo]",
    ]
    assert r["data"]["binary_files"] == ["bin.dat"]
    assert r["data"]["symlinks_skipped"] == 3 and r["data"]["special_files_skipped"] == 1
    lines, paths = lines[:-3], paths[:-3]
    assert not any(p.startswith("link_") for p in paths)
    # rg's --sort path order: byte order of names, depth first
    assert (
        paths.index(".hidden/config.txt") < paths.index("README.md") < paths.index("Zeta.txt") < paths.index("crlf.txt")
    )
    assert paths.index("src/a_file_before_util.py") < paths.index("src/app.py") < paths.index("src/util/data.json")
    assert "src/app.py:4:     return 'needle'  # a.b(c" in lines
    assert "crlf.txt:1: one needle" in lines  # no \r left
    assert "bad_name_\ufffd.txt:1: needle in a badly named file" in lines
    long_line = next(line for line in lines if line.startswith("long.txt:1: "))
    assert long_line.endswith(" ... [4706 more chars]") and len(long_line) < 400
    assert r["data"]["count"] == len(lines) and r["data"]["truncated"] is False


@pytest.mark.parametrize("engine", ENGINES)
def test_max_results_and_truncation(servers: dict[str, ServerProc], engine: str) -> None:
    r = search(servers[engine], query="hit", max_results=5)
    lines = r["output"].splitlines()
    assert lines[:5] == [f"many/m00{i}.txt:1: hit" for i in range(5)]
    assert lines[5].startswith("[showing the first 5 matches; more exist")
    assert r["data"] == {"count": 5, "truncated": True, "engine": engine}
    r = search(servers[engine], query="hit", max_results=1000)  # capped at 500
    assert r["data"]["count"] <= 500 and r["data"]["truncated"] is True
    r = search(servers[engine], query="hit", path="many", glob="m00*.txt")
    assert r["data"] == {"count": 10, "truncated": False, "engine": engine}


@pytest.mark.parametrize("engine", ENGINES)
def test_errors(servers: dict[str, ServerProc], engine: str) -> None:
    s = servers[engine]
    r = search(s, query="a(", regex=True)
    assert r["ok"] is False and "invalid regex 'a('" in r["error"]
    r = search(s, query="a(")  # literal: fine
    assert r["ok"] and r["output"].startswith("no matches for 'a('\n[3 symlink(s) not followed")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"query": ""}, "query is empty"),
        ({"query": "a\nb"}, "single line"),
        ({"query": "x", "max_results": 0}, "max_results must be >= 1"),
        ({"query": "x", "path": "nope"}, "path not found: 'nope'"),
        ({"query": "x", "path": "/etc"}, "path escapes the repository"),
        ({"query": "x", "path": "../"}, "path escapes the repository"),
        ({"query": "x", "path": "link_etc_dir"}, "path escapes the repository"),
        ({"query": "root", "path": "link_etc"}, "path escapes the repository"),
    ]
    for args, needle in cases:
        r = search(s, **args)
        assert r["ok"] is False and needle in r["error"], (args, r["error"])


@pytest.mark.parametrize("engine", ENGINES)
def test_binary_file_named_explicitly(servers: dict[str, ServerProc], engine: str) -> None:
    r = search(servers[engine], query="binary", path="bin.dat")
    assert r["ok"] and r["output"].startswith("bin.dat:1: needle\x00\x01\x02binary needle\n[matches in binary files")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Issue 13: matches after a NUL byte, in an over-long line, in a huge sparse file."""
    root = tmp_path_factory.mktemp("hostile")
    (root / "a_nul_first.bin").write_bytes(b"\x00\x00head\nsecret after nul\n")
    (root / "b_nul_late.txt").write_bytes(b"secret one\n" + b"x\n" * 40000 + b"\x00\nsecret two\n")
    (root / "c_long.txt").write_bytes(b"x" * (9 * 1024 * 1024) + b" secret\nshort secret\n")
    with open(root / "d_sparse.dat", "wb") as f:
        f.write(b"secret at the start\n")
        f.truncate(100 * 1024**3)
    (root / "e_plain.txt").write_text("plain secret\n")
    os.mkfifo(root / "f_fifo")
    os.symlink("/proc/self/environ", root / "g_environ")
    return root


@pytest.mark.parametrize("engine", ENGINES)
def test_search_says_what_it_skipped(hostile: Path, engine: str) -> None:
    server = ServerProc(hostile, "--search-engine", engine)
    try:
        r = search(server, query="secret")
        assert r["ok"], r["output"]
        lines = r["output"].splitlines()
        assert "a_nul_first.bin:4: secret after nul" in lines
        assert "b_nul_late.txt:1: secret one" in lines and "b_nul_late.txt:40004: secret two" in lines
        assert "c_long.txt:2: short secret" in lines and "e_plain.txt:1: plain secret" in lines
        assert "[matches in binary files (NUL bytes; each NUL ends a line): a_nul_first.bin, b_nul_late.txt]" in lines
        assert "[1 file(s) over 64 MiB not searched: d_sparse.dat]" in lines
        assert any(line.startswith("[1 line(s) over 8 MiB ") for line in lines)
        assert r["data"]["large_files_skipped"] == 1 and r["data"]["long_lines_skipped"] == 1
        assert "[1 FIFO, socket or device file(s) not searched: f_fifo]" in lines
        assert "[1 symlink(s) not followed: g_environ]" in lines
        r = search(server, query="secret", path="f_fifo")
        assert r["ok"] is False and "not a regular file" in r["error"]
        r = search(server, query="secret", path="d_sparse.dat")
        assert r["ok"] and "over search's limit of 64 MiB; not searched" in r["output"]
    finally:
        server.close()


def test_python_search_stops_at_the_deadline(servers: dict[str, ServerProc]) -> None:
    r = servers["python"].request("search", {"query": "hit"}, timeout_s=1e-9)
    assert r["ok"] is False and r["outcome"] == "timeout"


@pytest.mark.parametrize(
    ("glob", "path", "is_dir", "expected"),
    [
        ("*.py", "a/b/c.py", False, True),
        ("*.py", "c.py", False, True),
        ("src/*.py", "src/a/c.py", False, False),
        ("src/**", "src/a/c.py", False, True),
        ("**/util/*", "x/util/y", False, True),
        ("**/util/*", "util/y", False, True),
        ("/README.md", "docs/README.md", False, False),
        ("util/", "src/util", True, True),
        ("util/", "src/util", False, False),
        ("*.{json,md}", "a.md", False, True),
        ("[!a]*", "b", False, True),
        ("[!a]*", "a", False, False),
        ("a?c", "a/c", False, False),
    ],
)
def test_glob_translation(glob: str, path: str, is_dir: bool, expected: bool) -> None:
    assert Glob(glob).matches(path, is_dir) is expected
