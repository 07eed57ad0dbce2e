"""run_test through the server on pipes: no shell, bounded output, nothing survives a run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sandbox.tools.processes import oom_kill_count, scan
from tests.sandbox.server_support import REPO, SERVER_PYTHON, ServerProc, alive, make_tree, vm_hwm_kb, wait_dead

PY = sys.executable

# Double fork + setsid: a daemon that is neither a child nor in the test's session,
# with its stdio on /dev/null (so it holds none of our pipes). Writes its pid to argv[1].
DAEMON = textwrap.dedent(
    """
    import os, sys, time
    pidfile = sys.argv[1]
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            fd = os.open(os.devnull, os.O_RDWR)
            for i in (0, 1, 2):
                os.dup2(fd, i)
            with open(pidfile + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(pidfile + ".tmp", pidfile)
            time.sleep(60)
        os._exit(0)
    os.wait()
    while not os.path.exists(pidfile):
        time.sleep(0.005)
    """
)

# A grandchild that ignores SIGTERM and keeps our stdout pipe open, then the daemon.
STUBBORN = textwrap.dedent(
    """
    import os, subprocess, sys, time
    d = sys.argv[1]
    subprocess.Popen([sys.executable, "-c",
        "import os, signal, sys, time\\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
        "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\\n"
        "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\\n"
        "time.sleep(60)\\n", os.path.join(d, "stubborn")])
    subprocess.run([sys.executable, "-c", sys.argv[2], os.path.join(d, "daemon")], check=True)
    while not os.path.exists(os.path.join(d, "stubborn")):
        time.sleep(0.005)
    print("ready", flush=True)
    time.sleep(60)
    """
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_tree(tmp_path_factory.mktemp("repo"))
    (root / "script.sh").write_text("#!/bin/sh\necho no exec bit\n")  # mode 0644
    return root


@pytest.fixture(scope="module")
def server(tree: Path) -> Iterator[ServerProc]:
    s = ServerProc(tree)
    yield s
    s.close()


def run(server: ServerProc, argv: list[str], timeout_s: float = 20, **args: Any) -> dict[str, Any]:
    return server.request("run_test", {"argv": argv, "timeout_s": timeout_s, **args}, wait=timeout_s + 10)


def children_of(pid: int) -> list[int]:
    return [p.pid for p in scan().values() if p.ppid == pid]


def test_ok(server: ServerProc) -> None:
    r = run(server, [PY, "-c", "print('hello')"])
    assert r["ok"] and r["outcome"] == "ok" and r["error"] is None
    d = r["data"]
    assert d["exit_code"] == 0 and d["signal"] is None and d["timed_out"] is False
    assert d["stdout_bytes"] == 6 and d["stderr_bytes"] == 0 and d["bytes_cut"] == 0
    assert d["killed"] == [] and d["killed_count"] == 0
    assert 0 < d["duration_s"] < 5
    lines = r["output"].splitlines()
    assert lines[0] == f"$ {PY} -c 'print('\"'\"'hello'\"'\"')'"
    assert lines[1].startswith("exit code 0 (passed) after ")
    assert lines[2:] == ["--- stdout (6 bytes) ---", "hello"]


def test_failed_keeps_both_streams(server: ServerProc) -> None:
    r = run(server, [PY, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    assert r["ok"] is False and r["outcome"] == "failed"
    assert r["error"] == "command failed with exit code 3"
    assert r["data"]["exit_code"] == 3
    assert "--- stdout (4 bytes) ---\nout" in r["output"] and "--- stderr (4 bytes) ---\nerr" in r["output"]


def test_environment_stdin_session_and_no_shell(server: ServerProc, tree: Path) -> None:
    script = textwrap.dedent(
        """
        import json, os, sys
        print(json.dumps({
            "env": {k: os.environ.get(k) for k in
                    ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "PYTHONNOUSERSITE", "FOO", "PYTHONPATH")},
            "home": os.environ["HOME"], "tmpdir": os.environ["TMPDIR"], "cache": os.environ["XDG_CACHE_HOME"],
            "hypothesis": os.environ["HYPOTHESIS_STORAGE_DIRECTORY"], "ruff": os.environ["RUFF_CACHE_DIR"],
            "coverage": os.environ["COVERAGE_FILE"],
            "home_empty": os.listdir(os.environ["HOME"]) == [] and os.listdir(os.environ["TMPDIR"]) == [],
            "stdin": os.readlink("/proc/self/fd/0"),
            "stdin_data": sys.stdin.read(),
            "session_leader": os.getsid(0) == os.getpid(),
            "pgrp_leader": os.getpgrp() == os.getpid(),
            "cwd": os.getcwd(),
            "argv": sys.argv[1:],
        }))
        """
    )
    r = run(server, [PY, "-c", script, "$HOME", "a b", ";", "*"], env={"FOO": "bar"})
    assert r["ok"], r["output"]
    info = json.loads(r["output"].split("---\n", 1)[1])
    assert info["env"] == {
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_ADDOPTS": "-p no:cacheprovider",
        "PYTHONNOUSERSITE": "1",
        "FOO": "bar",
        "PYTHONPATH": None,  # the server's own package path is not passed on
    }
    assert info["home_empty"] and info["cache"] == info["home"] + "/.cache"
    assert info["hypothesis"] == info["home"] + "/.hypothesis"  # not .hypothesis/ in the (read-only) repo
    assert info["ruff"] == info["home"] + "/.cache/ruff"  # nor .ruff_cache/
    assert info["coverage"] == info["home"] + "/.coverage"  # pytest-cov's data: not in /repo
    assert os.path.dirname(info["home"]) == os.path.dirname(info["tmpdir"])
    assert info["stdin"] == "/dev/null" and info["stdin_data"] == ""
    assert info["session_leader"] and info["pgrp_leader"]
    assert info["cwd"] == str(tree.resolve())
    assert info["argv"] == ["$HOME", "a b", ";", "*"]  # no shell: nothing expanded
    r = run(server, [PY, "-c", "import os; print(os.environ['HOME'])"], env={"HOME": "/elsewhere"})
    assert r["output"].endswith("/elsewhere")


def test_every_run_gets_a_fresh_home_and_tmpdir(server: ServerProc) -> None:
    """Issue 13: run 1 plants a usercustomize.py in its user site; run 2 must not see it."""
    plant = textwrap.dedent(
        """
        import os, site
        os.makedirs(site.getusersitepackages(), exist_ok=True)
        open(os.path.join(site.getusersitepackages(), "usercustomize.py"), "w").write("import os; os._exit(0)")
        open(os.path.join(os.environ["TMPDIR"], "marker"), "w").write("x")
        print(os.environ["HOME"])
        """
    )
    first = run(server, [PY, "-c", plant])
    assert first["ok"], first["output"]
    home = first["output"].rsplit("\n", 1)[-1]
    assert not os.path.exists(home)  # removed after the run
    second = run(server, [PY, "-c", "import os, sys; print(os.listdir(os.environ['TMPDIR'])); sys.exit(3)"])
    assert second["data"]["exit_code"] == 3 and "[]" in second["output"]


def test_cwd(server: ServerProc, tree: Path) -> None:
    r = run(server, [PY, "-c", "import os; print(os.getcwd())"], cwd="src/util")
    assert r["output"].endswith(str(tree.resolve() / "src" / "util"))
    for cwd, needle in [("../", "path escapes"), ("link_etc_dir", "path escapes"), ("README.md", "not a directory")]:
        r = run(server, ["true"], cwd=cwd)
        assert r["ok"] is False and needle in r["error"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["no-such-command-xyz", "--flag"], "command not found: 'no-such-command-xyz' (not on PATH)"),
        (["./no/such/file"], "command not found: './no/such/file' (no such file)"),
        (["./script.sh"], "permission denied: cannot execute './script.sh'"),
        ([], "missing 'argv'"),
        (["a\x00b"], "NUL byte"),
    ],
)
def test_commands_that_cannot_start(server: ServerProc, argv: list[str], needle: str) -> None:
    r = run(server, argv)
    assert r["ok"] is False and r["outcome"] == "error"
    assert needle in r["error"]
    assert "Traceback" not in r["output"]


def test_shell_needs_the_flag(server: ServerProc, tree: Path) -> None:
    r = server.request("run_test", {"shell": "echo $((1+2))", "timeout_s": 5})
    assert r["ok"] is False and "shell commands are disabled" in r["error"]
    r = server.request("run_test", {"shell": "echo hi", "argv": ["true"], "timeout_s": 5})
    assert r["ok"] is False and "not both" in r["error"]
    s = ServerProc(tree, "--allow-shell")
    try:
        r = s.request("run_test", {"shell": "echo $((1+2)) | tr 3 4", "timeout_s": 5})
        assert r["ok"] and r["output"].endswith("4") and r["output"].startswith("$ echo $((1+2)) | tr 3 4\n")
        assert r["data"]["command"] == "echo $((1+2)) | tr 3 4"
    finally:
        s.close()


def test_big_output_is_capped_and_server_memory_stays_flat(tree: Path) -> None:
    s = ServerProc(tree)
    try:
        run(s, [PY, "-c", "print('warm up')"])
        before = vm_hwm_kb(s.pid)
        script = textwrap.dedent(
            """
            import os, sys, threading
            block = b"0123456789abcde\\n" * 4096  # 64 KiB
            def spew(fd, tag):
                os.write(fd, b"BEGIN-" + tag + b"\\n")
                for _ in range(80):  # 5 MiB
                    os.write(fd, block)
                os.write(fd, b"END-" + tag + b"\\n")
            t = threading.Thread(target=spew, args=(2, b"ERR"))
            t.start()
            spew(1, b"OUT")
            t.join()
            """
        )
        r = run(s, [PY, "-c", script], timeout_s=30)
        after = vm_hwm_kb(s.pid)
    finally:
        s.close()
    assert r["ok"], r["output"][:2000]
    d = r["data"]
    total = 80 * 65536
    assert d["stdout_bytes"] == total + len("BEGIN-OUT\n") + len("END-OUT\n")
    assert d["stderr_bytes"] == total + len("BEGIN-ERR\n") + len("END-ERR\n")
    kept = 32000
    assert d["bytes_cut"] == d["stdout_bytes"] + d["stderr_bytes"] - 2 * kept
    out = r["output"]
    assert f"--- stdout ({d['stdout_bytes']} bytes, {d['stdout_bytes'] - kept} cut) ---\nBEGIN-OUT\n" in out
    assert f"\n... [{d['stdout_bytes'] - kept} bytes cut] ...\n" in out
    assert "END-OUT" in out and "BEGIN-ERR" in out and out.endswith("END-ERR")
    assert len(out.encode()) < 2 * kept + 1000
    grew_kb = after - before
    print(f"\nserver VmHWM {before} kB -> {after} kB (+{grew_kb} kB) for 10 MiB of output")
    assert grew_kb < 2048, (before, after)


def test_timeout_kills_the_group_a_sigterm_ignorer_and_a_setsid_daemon(server: ServerProc, tmp_path: Path) -> None:
    # run() waits for the answer only timeout_s + 10 s: an answer at all means the server did not
    # wait for the 60 s the stubborn processes would live.
    r = run(server, [PY, "-c", STUBBORN, str(tmp_path), DAEMON], timeout_s=1.5)
    stubborn = int((tmp_path / "stubborn").read_text())
    daemon = int((tmp_path / "daemon").read_text())
    assert r["ok"] is False and r["outcome"] == "timeout"
    assert r["error"] == "timed out after 1.5 s"
    assert "ready" in r["output"]
    d = r["data"]
    assert d["timed_out"] is True and d["signal"] in ("SIGTERM", "SIGKILL")
    killed = {k["pid"]: k["cmdline"] for k in d["killed"]}
    assert stubborn in killed and daemon in killed
    assert "signal.SIG_IGN" in killed[stubborn]
    assert d["killed_count"] == len(d["killed"]) >= 3  # the command itself too
    assert wait_dead([stubborn, daemon], timeout=1.0) == []
    assert d["duration_s"] >= 1.5  # the run was given its whole timeout, not cut short
    assert children_of(server.pid) == []  # killed and reaped: no zombies left


def test_leftovers_of_a_passing_command_are_killed(server: ServerProc, tmp_path: Path) -> None:
    """A background job holding our pipe and a setsid'd daemon, left by a command that exits 0."""
    script = DAEMON + "\nimport subprocess\nsubprocess.Popen(['sleep', '60'])\nprint('done')\n"
    # Answered within run()'s read deadline (30 s): the server did not wait for `sleep 60`,
    # which holds the output pipe.
    r = run(server, [PY, "-c", script, str(tmp_path / "daemon")])
    daemon = int((tmp_path / "daemon").read_text())
    assert r["ok"] and r["outcome"] == "ok" and r["data"]["exit_code"] == 0
    assert r["output"].splitlines()[-2] == "done"
    killed = {k["pid"]: k["cmdline"] for k in r["data"]["killed"]}
    assert daemon in killed and "sleep 60" in killed.values()
    assert r["output"].splitlines()[-1].startswith("[killed 2 process(es): ")
    assert wait_dead(list(killed)) == []
    assert children_of(server.pid) == []


def test_host_mode_spares_processes_that_are_not_ours(server: ServerProc, tmp_path: Path) -> None:
    bystander = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        r = run(server, [PY, "-c", DAEMON + "\ntime.sleep(30)", str(tmp_path / "d")], timeout_s=0.5)
        assert r["outcome"] == "timeout"
        assert bystander.pid not in {k["pid"] for k in r["data"]["killed"]}
        assert bystander.poll() is None and alive(server.pid)
    finally:
        bystander.kill()
        bystander.wait()


def test_request_timeout_is_the_default_and_the_cap(server: ServerProc) -> None:
    t0 = time.monotonic()
    r = server.request("run_test", {"argv": ["sleep", "30"]}, timeout_s=0.3)
    assert r["outcome"] == "timeout" and r["error"] == "timed out after 0.3 s"
    r = server.request("run_test", {"argv": ["sleep", "30"], "timeout_s": 100}, timeout_s=0.3)
    assert r["outcome"] == "timeout" and r["error"] == "timed out after 0.3 s"
    assert r["data"]["signal"] == "SIGTERM"  # sleep dies of the SIGTERM
    assert time.monotonic() - t0 < 20  # neither run waited for `sleep 30`


def test_killed_by_sigkill_without_timeout(server: ServerProc) -> None:
    r = run(server, [PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert r["ok"] is False and r["data"]["signal"] == "SIGKILL" and r["data"]["exit_code"] is None
    if oom_kill_count() is None:  # no cgroup counter: a SIGKILL is suspected to be the OOM killer
        assert r["outcome"] == "oom" and r["data"]["oom"] == "suspected"
    else:  # the counter did not move: not an OOM kill
        assert r["outcome"] == "failed" and r["data"]["oom"] is None
    assert "killed by SIGKILL" in r["output"]


def test_copy_repo(server: ServerProc, tree: Path) -> None:
    script = textwrap.dedent(
        """
        import os, json
        open("written_by_test.txt", "w").write("x")
        print(json.dumps({"cwd": os.getcwd(), "git": os.path.exists(".git"),
                          "nested_git": os.path.exists("sub/.git/config"),
                          "app": open("src/app.py").read().startswith("import os"),
                          "link": os.readlink("link_app") if os.path.islink("link_app") else None}))
        """
    )
    r = run(server, [PY, "-c", script], copy_repo=True)
    assert r["ok"], r["output"]
    info = json.loads(r["output"].split("---\n", 1)[1])
    copy_dir = r["data"]["copy_dir"]
    assert info["cwd"] == copy_dir != str(tree)
    assert info["git"] is False and info["nested_git"] is True and info["app"] is True
    assert info["link"] == "src/app.py"  # symlinks stay symlinks
    assert not os.path.exists(copy_dir) and not os.path.exists(os.path.dirname(copy_dir))
    assert not (tree / "written_by_test.txt").exists()
    assert r["data"]["copy_s"] >= 0
    # cwd maps into the copy
    r = run(server, [PY, "-c", "import os; print(os.getcwd())"], copy_repo=True, cwd="src")
    assert r["output"].endswith(os.path.join(r["data"]["copy_dir"], "src"))


def test_copy_is_removed_even_when_the_test_locks_it(server: ServerProc) -> None:
    script = "import os; os.makedirs('locked/inner'); open('locked/inner/f', 'w'); os.chmod('locked', 0o500)"
    r = run(server, [PY, "-c", script], copy_repo=True)
    assert r["ok"], r["output"]
    assert not os.path.exists(r["data"]["copy_dir"])


def _unshare_works() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(["unshare", "--fork", "--pid", "--mount-proc", "true"], timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not _unshare_works(), reason="needs root and unshare to make a pid namespace")
@pytest.mark.parametrize("layout", ["under_init", "as_pid_1"])
def test_reap_all_in_a_pid_namespace(tree: Path, tmp_path: Path, layout: str) -> None:
    """As in a container: the server is PID 1's child (docker --init) or PID 1 itself."""
    server = [SERVER_PYTHON, "-m", "sandbox.server", "--root", str(tree), "--reap-all"]
    if layout == "under_init":  # sh stays PID 1 and forks the server
        server = ["sh", "-c", " ".join(server) + "; exit $?"]
    proc = subprocess.Popen(
        ["unshare", "--fork", "--pid", "--mount-proc", *server],
        cwd=str(REPO),
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,
    )
    assert proc.stdin and proc.stdout
    try:

        def ask(req: dict[str, Any]) -> dict[str, Any]:
            assert proc.stdin and proc.stdout
            proc.stdin.write(json.dumps(req).encode() + b"\n")
            return dict(json.loads(proc.stdout.readline()))

        pong = ask({"id": 1, "tool": "ping", "args": {}})
        assert pong["data"]["reap_all"] is True
        assert (pong["data"]["pid"] == 1) is (layout == "as_pid_1")
        r = ask(
            {"id": 2, "tool": "run_test", "args": {"argv": [PY, "-c", DAEMON, str(tmp_path / "d")], "timeout_s": 10}}
        )
        assert r["ok"] and r["data"]["killed_count"] == 1
        assert "import os, sys, time" in r["data"]["killed"][0]["cmdline"]
        r = ask({"id": 3, "tool": "run_test", "args": {"argv": ["sleep", "30"], "timeout_s": 0.3}})
        assert r["outcome"] == "timeout" and r["data"]["killed_count"] == 1
        assert ask({"id": 4, "tool": "ping", "args": {}})["ok"]  # the server and its init survive
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
        proc.stdout.close()


def test_sigterm_to_the_server_kills_the_running_test(tree: Path, tmp_path: Path) -> None:
    s = ServerProc(tree)
    try:
        script = f"import os, time; open({str(tmp_path / 'p')!r}, 'w').write(str(os.getpid())); time.sleep(60)"
        s.send(
            json.dumps({"id": 1, "tool": "run_test", "args": {"argv": [PY, "-c", script], "timeout_s": 60}}).encode()
            + b"\n"
        )
        deadline = time.monotonic() + 10
        # exists() is not enough: the child may have created the file but not yet written the pid.
        while not _read(tmp_path / "p").strip() and time.monotonic() < deadline:
            time.sleep(0.01)
        pid = int((tmp_path / "p").read_text())
        os.kill(s.pid, signal.SIGTERM)
        assert s.proc.wait(timeout=10) == 4
        assert wait_dead([pid]) == []
    finally:
        s.close()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def test_report_file_comes_back_in_the_reply(server: ServerProc, tmp_path: Path) -> None:
    # In a container /tmp is the tmpfs; here the host's /tmp, so a name of our own.
    path = f"/tmp/codebox-test-report-{os.getpid()}.xml"
    link = path + ".link"
    try:
        write = f"open({path!r}, 'w').write('<testsuite/>'); import sys; sys.exit(1)"
        r = run(server, [PY, "-c", write], report_file=path)
        assert r["outcome"] == "failed" and r["data"]["report_file_text"] == "<testsuite/>"
        os.unlink(path)
        r = run(server, [PY, "-c", "pass"], report_file=path)
        assert "report_file_text" not in r["data"] and "No such file" in r["data"]["report_file_error"]
        os.symlink("/etc/hostname", link)
        r = run(server, [PY, "-c", "pass"], report_file=link)  # a symlink is never followed
        assert "report_file_text" not in r["data"] and r["data"]["report_file_error"]
        big = f"open({path!r}, 'w').write('x' * (2 * 1024 * 1024 + 1))"
        r = run(server, [PY, "-c", big], report_file=path)
        assert "larger than" in r["data"]["report_file_error"]
    finally:
        for p in (path, link):
            if os.path.lexists(p):
                os.unlink(p)
    for bad in ("/repo/x.xml", "/tmp/../etc/passwd", "relative.xml"):
        r = run(server, [PY, "-c", "pass"], report_file=bad)
        assert r["ok"] is False and "under /tmp" in r["error"]
