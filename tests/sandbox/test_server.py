"""The in-container server's protocol, on the host: a subprocess on pipes, JSON lines."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sandbox import wire
from tests.sandbox.server_support import SERVER_PYTHON, ServerProc, alive, make_tree, wait_dead


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("repo"))


@pytest.fixture(scope="module")
def server(tree: Path) -> Iterator[ServerProc]:
    s = ServerProc(tree)
    yield s
    s.close()


def test_ping(server: ServerProc) -> None:
    r = server.call("ping")
    assert r["ok"] and r["outcome"] == "ok" and r["error"] is None
    assert r["data"]["version"] == wire.PROTOCOL_VERSION
    if sys.executable == SERVER_PYTHON:
        assert r["data"]["python"] == sys.version
    assert isinstance(r["data"]["rg"], bool)
    assert r["data"]["reap_all"] is False and r["data"]["allow_shell"] is False
    assert r["data"]["subreaper"] is True  # Linux: orphans of tests come back to the server
    assert r["data"]["undumpable"] is True


@pytest.mark.parametrize(
    ("line", "rid", "needle"),
    [
        (b"not json at all", None, "not valid JSON"),
        (b'{"id": 5, "tool": "ping", ', 5, "not valid JSON"),  # truncated: id still recovered
        (b"[1, 2, 3]", None, "not a JSON object"),
        (b'{"id": 7, "tool": "rm_rf", "args": {}}', 7, "unknown tool 'rm_rf'"),
        (b'{"id": 8, "args": {}}', 8, "unknown tool missing"),
        (b'{"id": 9, "tool": "read_file", "args": ["a"]}', 9, "'args' of read_file must be an object"),
        (b'{"id": [1], "tool": "ping"}', None, "'id' must be an integer or a string"),
        (b'{"id": true, "tool": "ping"}', None, "'id' must be an integer or a string"),
        (b'{"id": 10, "tool": "ping", "timeout_s": "5"}', 10, "'timeout_s' must be a number"),
        (b'{"id": 11, "tool": "ping", "timeout_s": -1}', 11, "'timeout_s' must be > 0"),
        (b'{"id": 12, "tool": "ping", "timeout_s": Infinity}', 12, "'timeout_s' must be > 0"),
        (b'{"id": "s1", "tool": "ping", "args": {"x": 1}}', "s1", "unknown argument(s) 'x'"),
        (b"\xff\xfe garbage bytes", None, "not valid JSON"),
        (b"[" * 100000 + b"]" * 100000, None, "not valid JSON"),  # recursion: no crash
        (b"   ", None, "empty line"),
    ],
)
def test_malformed_requests_get_errors_and_the_server_goes_on(
    server: ServerProc, line: bytes, rid: object, needle: str
) -> None:
    server.send(line + b"\n")
    r = server.read_response()
    assert r["ok"] is False and r["outcome"] == "error"
    assert r["id"] == rid
    assert needle in r["error"], r["error"]
    assert server.call("ping")["ok"]


@pytest.mark.parametrize(
    ("tool", "args", "needle"),
    [
        ("read_file", {}, "missing required argument 'path'"),
        ("read_file", {"path": 5}, "'path' must be a string, got number"),
        ("read_file", {"path": "README.md", "start_line": "1"}, "'start_line' must be an integer, got string"),
        ("read_file", {"path": "README.md", "start_line": True}, "'start_line' must be an integer, got boolean"),
        ("read_file", {"path": "README.md", "end_line": 2.5}, "'end_line' must be an integer"),
        ("read_file", {"path": "README.md", "lines": 3}, "unknown argument(s) 'lines'"),
        ("search", {}, "missing required argument 'query'"),
        ("search", {"query": "x", "regex": "yes"}, "'regex' must be true or false"),
        ("search", {"query": "x", "max_results": "10"}, "'max_results' must be an integer"),
        ("search", {"query": "x", "glob": 3}, "'glob' must be an array of strings"),
        ("run_test", {"argv": "ls -l", "timeout_s": 5}, "'argv' must be an array of strings"),
        ("run_test", {"argv": ["ls", 1], "timeout_s": 5}, "'argv' must be an array of strings"),
        ("run_test", {"argv": ["true"], "timeout_s": "5"}, "'timeout_s' must be a number"),
        ("run_test", {"argv": ["true"], "env": {"A": 1}}, "'env' must be an object of string values"),
        ("run_test", {"argv": ["true"], "copy_repo": 1}, "'copy_repo' must be true or false"),
        ("apply_patch", {"patch": 5}, "'patch' must be a string"),
    ],
)
def test_wrong_argument_types(server: ServerProc, tool: str, args: dict[str, object], needle: str) -> None:
    r = server.request(tool, args)
    assert r["ok"] is False and r["outcome"] == "error"
    assert needle in r["error"], r["error"]


def test_a_line_over_the_limit_is_refused_and_skipped(tree: Path) -> None:
    s = ServerProc(tree, "--max-request-bytes", "4096")
    try:
        s.send(b'{"id": 41, "tool": "read_file", "args": {"path": "' + b"a" * 100_000 + b'"}}\n')
        r = s.read_response()
        assert r["id"] == 41 and r["ok"] is False
        assert "longer than 4096 bytes" in r["error"]
        s.send(b"x" * 9000 + b"\n")  # no id to recover
        r = s.read_response()
        assert r["id"] is None and "longer than" in r["error"]
        assert s.call("ping")["ok"]
        # a line of exactly the limit is fine
        req = {"id": 42, "tool": "ping", "args": {}}
        raw = json.dumps(req).encode()
        raw = raw[:-1] + b" " * (4096 - len(raw)) + b"}\n"
        assert len(raw) == 4097
        s.send(raw)
        assert s.read_response()["ok"]
    finally:
        assert s.close() == 0


def test_eof_exits_cleanly(tree: Path) -> None:
    s = ServerProc(tree)
    assert s.call("ping")["ok"]
    t0 = time.monotonic()
    assert s.close() == wire.EXIT_EOF
    assert time.monotonic() - t0 < 2.0


def test_request_without_newline_before_eof_is_answered(tree: Path) -> None:
    s = ServerProc(tree)
    s.send(b'{"id": 3, "tool": "ping"}')
    assert s.proc.stdin is not None
    s.proc.stdin.close()
    r = s.read_response()
    assert r["id"] == 3 and r["ok"]
    assert s.close() == 0


def test_bad_root_and_bad_flags_fail_at_start(tmp_path: Path) -> None:
    s = ServerProc(tmp_path / "missing")
    assert s.close() == 2
    s = ServerProc(tmp_path, "--output-limit", "0")
    assert s.close() == 2


def test_reap_all_is_ignored_in_the_host_pid_namespace(tree: Path) -> None:
    s = ServerProc(tree, "--reap-all")
    try:
        assert s.call("ping")["data"]["reap_all"] is False
        assert "--reap-all ignored" in s.stderr()
    finally:
        s.close()


def test_lifetime_answers_the_call_in_flight_kills_the_test_and_exits(tree: Path, tmp_path: Path) -> None:
    s = ServerProc(tree, "--lifetime-s", "1")
    pidfile = tmp_path / "pid"
    script = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    t0 = time.monotonic()
    s.send(
        json.dumps(
            {"id": 1, "tool": "run_test", "args": {"argv": [sys.executable, "-c", script], "timeout_s": 60}}
        ).encode()
        + b"\n"
    )
    r = s.read_response(timeout=10)
    assert r["id"] == 1 and r["ok"] is False and "lifetime" in r["error"]
    assert s.proc.wait(timeout=10) == wire.EXIT_LIFETIME
    assert time.monotonic() - t0 < 5
    pid = int(pidfile.read_text())
    assert wait_dead([pid]) == []
    s.close()


def test_sigalrm_is_a_lifetime_cap_too(tree: Path) -> None:
    """The host may arm alarm() before exec'ing the server: as PID 1 it needs a handler."""
    s = ServerProc(tree)
    try:
        assert s.call("ping")["ok"]
        s.send(
            json.dumps({"id": 5, "tool": "run_test", "args": {"argv": ["sleep", "30"], "timeout_s": 30}}).encode()
            + b"\n"
        )
        time.sleep(0.3)
        os.kill(s.pid, signal.SIGALRM)
        r = s.read_response(timeout=10)
        assert r["id"] == 5 and r["ok"] is False and "SIGALRM" in r["error"]
        assert s.proc.wait(timeout=10) == wire.EXIT_LIFETIME
    finally:
        s.close()


def test_nothing_but_responses_reach_stdout(tree: Path) -> None:
    """A child writing to fd 1 / fd 2 of its own, or to the server's fd 1, never garbles the stream."""
    s = ServerProc(tree)
    try:
        pid = s.pid
        script = (
            "import os, sys\n"
            "print('to my stdout'); print('to my stderr', file=sys.stderr)\n"
            f"fd = os.open('/proc/{pid}/fd/1', os.O_WRONLY)\n"  # the server's fd 1 is now its stderr
            'os.write(fd, b\'{"id": 1, "ok": true, "fake": 1}\\n\')\n'
        )
        r = s.call("run_test", argv=[sys.executable, "-c", script], timeout_s=10)
        assert r["ok"], r["output"]
        assert "to my stdout" in r["output"] and "to my stderr" in r["output"]
        p = s.call("ping")
        assert p["ok"] and "fake" not in p
        assert '"fake": 1' in s.stderr()  # it went to stderr
    finally:
        s.close()


def test_many_requests_in_a_row_each_get_their_answer(server: ServerProc) -> None:
    """1000 reads back to back (the round trip's speed is measured in bench/sandbox_latency.py)."""
    for i in range(1000):
        req = json.dumps({"id": i, "tool": "read_file", "args": {"path": "README.md"}}).encode() + b"\n"
        server.send(req)
        response = json.loads(server.read_line())
        assert response["id"] == i and response["ok"] is True


def test_server_survives_its_children_being_killed(server: ServerProc) -> None:
    r = server.call("run_test", argv=["sh", "-c", "kill -9 $$"], timeout_s=5)
    assert r["data"]["signal"] == "SIGKILL"
    assert alive(server.pid)
    assert server.call("ping")["ok"]


def test_a_tool_module_is_loaded_at_its_first_call_not_at_boot(tree: Path) -> None:
    s = ServerProc(tree, "--tools", "read_file,search")
    try:
        assert s.call("ping")["data"]["tools_loaded"] == []
        assert s.call("read_file", path="README.md")["ok"]
        assert s.call("ping")["data"]["tools_loaded"] == ["read_file"]
        refused = s.call("run_test", argv=["true"])  # not served here: refused, never loaded
        assert not refused["ok"] and "this server runs: ping, read_file, search" in refused["output"]
        assert s.call("ping")["data"]["tools_loaded"] == ["read_file"]
    finally:
        s.close()


def test_the_injected_runtimes_ripgrep_starts_through_its_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sandbox import server

    runtime = tmp_path / "rt"
    runtime.mkdir()
    (runtime / "runtime.json").write_text(json.dumps({"loader": "lib/ld-linux-x86-64.so.2", "rg": "bin/rg"}))
    rg, via = server._ripgrep(str(runtime))
    assert rg == f"{runtime}/bin/rg"
    assert via == [f"{runtime}/lib/ld-linux-x86-64.so.2", "--library-path", f"{runtime}/lib"]
    # a runtime without ripgrep, or without a readable manifest: the image's rg on PATH, started as it is
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "rg").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "rg").chmod(0o755)
    (runtime / "runtime.json").write_text(json.dumps({"loader": "lib/ld.so", "rg": ""}))
    assert server._ripgrep(str(runtime)) == (str(tmp_path / "bin" / "rg"), [])
    (runtime / "runtime.json").write_text("{")
    assert server._ripgrep(str(runtime)) == (str(tmp_path / "bin" / "rg"), [])
    assert server._ripgrep(None) == (str(tmp_path / "bin" / "rg"), [])
