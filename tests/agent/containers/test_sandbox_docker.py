"""The container boundary against real containers (agent.containers.sandbox + the in-container server).

Every test needs a Docker daemon and the sandbox image (built on demand by
``agent.containers.image.ensure_sandbox_image``); they skip only when ``docker info`` does
not answer. No test sends traffic to any address from the host: the network
checks run inside ``--network none`` containers, where a connect fails at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.containers.engine_api import EngineClient, NotFound
from agent.containers.leftovers import LABEL_TASK
from agent.containers.sandbox import (
    STARTUP_TIMEOUT_S,
    Sandbox,
    SandboxConfig,
    SandboxError,
    reap_leftovers,
)
from sandbox import wire
from tests import engine

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[3]
# Every container these tests start carries a task label with this prefix.
TASK = f"pytest-{os.getpid()}"
OWNER_UID, OWNER_GID = 1000, 1000


def _ours(client: EngineClient) -> list[dict[str, Any]]:
    found = engine.containers(client, LABEL_TASK)
    return [c for c in found if (c.get("Labels") or {}).get(LABEL_TASK, "").startswith(TASK)]


def _wait_gone(client: EngineClient, container_id: str, timeout_s: float) -> bool:
    return engine.wait_gone(client, container_id, timeout_s)


@pytest.fixture(scope="session")
def docker_client() -> Iterator[EngineClient]:
    try:
        client = engine.docker(timeout_s=60)
        client.ping()
    except Exception as exc:
        if os.environ.get("CI"):  # required in CI: a missing daemon fails, never skips
            raise
        pytest.skip(f"no Docker daemon answers (docker info fails: {exc})")
    yield client
    # Session end: nothing these tests started may be left, running or stopped.
    deadline = time.monotonic() + 10
    while _ours(client) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [(c["Names"], c["State"]) for c in _ours(client)]
    for c in _ours(client):
        client.remove(c["Id"], force=True)
    assert not left, f"leaked sandbox containers: {left}"


@pytest.fixture(scope="session")
def image(docker_client: EngineClient) -> str:
    from agent.containers.image import ensure_sandbox_image

    return ensure_sandbox_image(log=lambda _msg: None)


def _make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "README.md").write_text("# demo\nhello sandbox\n")
    (path / "lines.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    (path / "src").mkdir(exist_ok=True)
    (path / "src" / "calc.py").write_text("def add(a, b):\n    return a + b  # NEEDLE\n")
    (path / "tests").mkdir(exist_ok=True)
    (path / "tests" / "test_calc.py").write_text(
        "import sys\nsys.path.insert(0, 'src')\nfrom calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    git = path / ".git"
    git.mkdir(exist_ok=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    for p in [path, *path.rglob("*")]:
        os.lchown(p, OWNER_UID, OWNER_GID)
    return path


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return _make_repo(tmp_path / "repo")


@pytest.fixture(scope="module")
def shared_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _make_repo(tmp_path_factory.mktemp("shared") / "repo")


def _config(image: str, **kw: Any) -> SandboxConfig:
    return SandboxConfig(image=image, **kw)


@pytest.fixture(scope="module")
def sb(image: str, shared_repo: Path) -> Iterator[Sandbox]:
    """One sandbox for the tests that leave the tool container usable."""
    with Sandbox(shared_repo, _config(image), task_id=f"{TASK}-shared") as sandbox:
        yield sandbox


def _py(sandbox: Sandbox, code: str, timeout_s: float = 20.0) -> Any:
    return sandbox.call("run_test", {"argv": ["python3", "-c", textwrap.dedent(code)], "timeout_s": timeout_s})


def _json_out(reply: Any) -> Any:
    """The last line of a run_test's output that is a JSON object."""
    for line in reversed(reply.output.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"no JSON line in output: {reply.output[-2000:]!r}")


# --- the container -------------------------------------------------------------------------------


def test_tool_container_is_hardened(sb: Sandbox, docker_client: EngineClient, shared_repo: Path) -> None:
    assert sb.startup_s is not None and 0 < sb.startup_s <= STARTUP_TIMEOUT_S  # recorded, within its own bound
    [cid] = sb.container_ids
    info = docker_client.inspect_container(cid)
    host, cfg = info["HostConfig"], info["Config"]
    assert host["NetworkMode"] == "none"
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["ReadonlyRootfs"] is True
    assert "exec" in host["Tmpfs"]["/tmp"].split(",") and "noexec" not in host["Tmpfs"]["/tmp"]
    assert host["PidsLimit"] == 256
    assert host["Memory"] == host["MemorySwap"] == 1024**3
    assert host["NanoCpus"] == 10**9
    assert not host["Init"] and host["AutoRemove"] is True  # PID 1 is sandbox.container_init
    assert cfg["User"] == f"{OWNER_UID}:{OWNER_GID}"
    assert cfg["OpenStdin"] is True and cfg["StdinOnce"] is True and cfg["Tty"] is False
    assert cfg["WorkingDir"] == "/"  # never the repo: see test_a_repository_cannot_replace_the_server
    assert cfg["Entrypoint"] in ([], None)  # never the image's
    assert {"HOME=/tmp", "PYTHONDONTWRITEBYTECODE=1"} <= set(cfg["Env"])
    # nothing of the injected runtime in what the tests inherit
    assert not any(v.startswith(("PYTHONPATH=", "PYTHONHOME=", "LD_")) for v in cfg["Env"]), cfg["Env"]
    labels = cfg["Labels"]
    assert labels["codebox.role"] == "tools" and labels["codebox.owner"] == str(os.getpid())
    assert labels["codebox.host"] == socket.gethostname() and float(labels["codebox.expires"]) > time.time()
    mounts = {m["Destination"]: m for m in info["Mounts"]}
    assert mounts["/repo"]["Source"] == str(shared_repo) and mounts["/repo"]["RW"] is False
    assert mounts["/.codebox"]["RW"] is False and mounts["/.codebox/lib/python3.11/sandbox"]["RW"] is False
    assert info["Name"].startswith(f"/codebox-{TASK}-shared-tools-")
    # The server runs under our init (PID 1).
    cmd = " ".join(cfg["Cmd"])
    runtime = "/.codebox/lib/ld-linux-x86-64.so.2 --library-path /.codebox/lib /.codebox/bin/python3.11 -I -S"
    assert cmd.startswith(f"{runtime} -m sandbox.container_init"), cmd
    assert "-- /.codebox/bin/python3.11 -I -S -m sandbox.server" in cmd and "--runtime /.codebox" in cmd


def test_missing_image_is_a_clear_error(repo: Path, docker_client: EngineClient) -> None:
    sandbox = Sandbox(repo, SandboxConfig(image="codebox-no-such-image:absent"), task_id=f"{TASK}-noimg")
    with pytest.raises(SandboxError, match="codebox image build"):
        sandbox.start()
    sandbox.close()


# --- the tools -----------------------------------------------------------------------------------


def test_ping_and_read_file(sb: Sandbox) -> None:
    pong = sb.call("ping", {})
    assert pong.ok and pong.data.get("version") == wire.PROTOCOL_VERSION
    whole = sb.call("read_file", {"path": "README.md"})
    assert whole.ok and whole.outcome == "ok" and "hello sandbox" in whole.output
    part = sb.call("read_file", {"path": "lines.txt", "start_line": 10, "end_line": 12})
    assert part.ok and "line 10" in part.output and "line 12" in part.output
    assert "line 9\n" not in part.output and "line 13" not in part.output
    missing = sb.call("read_file", {"path": "nope.txt"})
    assert not missing.ok and missing.outcome == "error" and missing.error
    for escape in ("../etc/passwd", "/etc/passwd"):
        refused = sb.call("read_file", {"path": escape})
        assert not refused.ok and refused.outcome == "error", escape
        assert "root:" not in refused.output


def test_many_reads_share_one_container(sb: Sandbox) -> None:
    """50 reads in a row are served by the same container (how fast: bench/sandbox_latency.py)."""
    first = sb.container_ids
    for _ in range(50):
        assert sb.call("read_file", {"path": "README.md"}).ok
    assert sb.container_ids == first


def test_search(sb: Sandbox) -> None:
    found = sb.call("search", {"query": "NEEDLE"})
    assert found.ok and "src/calc.py" in found.output
    globbed = sb.call("search", {"query": "line 5", "glob": "*.md"})
    assert "lines.txt" not in globbed.output
    regex = sb.call("search", {"query": r"def \w+\(a, b\)", "regex": True, "path": "src"})
    assert regex.ok and "calc.py" in regex.output


def test_run_test_pass_and_fail(sb: Sandbox) -> None:
    passed = sb.call("run_test", {"argv": ["python3", "-m", "pytest", "-q", "tests"], "timeout_s": 60})
    assert passed.ok and passed.outcome == "ok", passed.output
    assert "1 passed" in passed.output
    failed = _py(sb, "import sys; print('bad'); sys.exit(3)")
    assert not failed.ok and failed.outcome == "failed"
    assert failed.data.get("exit_code") == 3 and "bad" in failed.output


def test_git_reads_a_repository_another_user_owns(image: str, tmp_path: Path) -> None:
    # A root-owned repository's tools run as the unprivileged user: git called /repo "dubious" and
    # stopped, and jaraco.vcs's doctest (git on its own checkout) failed where it passes on the host.
    repo = _make_repo(tmp_path / "repo")
    shutil.rmtree(repo / ".git")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", "-c", "safe.directory=*", *command], cwd=repo, check=True, capture_output=True, env=env)
    for p in [repo, *repo.rglob("*")]:
        os.lchown(p, OWNER_UID, OWNER_GID)
    with Sandbox(repo, _config(image, user="65534:65534"), task_id=f"{TASK}-git") as sandbox:
        reply = sandbox.call("run_test", {"argv": ["git", "-C", "/repo", "rev-parse", "HEAD"], "timeout_s": 30})
        assert reply.ok, reply.output
        # In a throwaway copy too: its .git names the read-only mount, and the copy is the clean work tree.
        argv = ["sh", "-c", 'test -z "$(git status --porcelain)" && git rev-parse HEAD']
        copied = sandbox.call("run_test", {"argv": argv, "timeout_s": 30, "copy_repo": True})
        assert copied.ok and reply.output.split()[-1] in copied.output, copied.output


def test_network_is_absent(sb: Sandbox) -> None:
    reply = _py(
        sb,
        """
        import json, os, socket
        res = {"ifaces": sorted(os.listdir("/sys/class/net"))}
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=1).close()
            res["tcp"] = "connected"
        except OSError as exc:
            res["tcp"] = type(exc).__name__ + ": " + str(exc)
        try:
            res["dns"] = str(socket.getaddrinfo("example.com", 80))
        except OSError as exc:
            res["dns"] = "failed: " + type(exc).__name__
        print(json.dumps(res))
        """,
    )
    res = _json_out(reply)
    assert res["ifaces"] == ["lo"]
    assert res["tcp"] != "connected"
    assert res["dns"].startswith("failed")


def test_repo_is_read_only_for_tests_and_writable_by_apply_patch(
    image: str, repo: Path, docker_client: EngineClient
) -> None:
    with Sandbox(repo, _config(image), task_id=f"{TASK}-write") as sandbox:
        attempt = _py(
            sandbox,
            """
            import json
            res = {}
            for p in ("/repo/new.txt", "/repo/src/calc.py", "/repo/.git/x"):
                try:
                    with open(p, "a") as f:
                        f.write("x")
                    res[p] = "written"
                except OSError as exc:
                    res[p] = exc.strerror
            print(json.dumps(res))
            """,
        )
        assert set(_json_out(attempt).values()) == {"Read-only file system"}, attempt.output
        assert not (repo / "new.txt").exists()
        assert len(sandbox.container_ids) == 1  # no write container until a write

        patch = "*** Begin Patch\n*** Add File: notes/new.txt\n+written through the write container\n*** End Patch\n"
        applied = sandbox.call("apply_patch", {"patch": patch})
        assert applied.ok, applied.output
        created = repo / "notes" / "new.txt"
        assert created.read_text() == "written through the write container\n"
        assert (created.stat().st_uid, created.stat().st_gid) == (OWNER_UID, OWNER_GID)
        # The tool container sees the change through its read-only mount.
        assert "write container" in sandbox.call("read_file", {"path": "notes/new.txt"}).output

        # call("apply_patch") goes to the write container too (the `input` alias included).
        update = (
            "*** Begin Patch\n*** Update File: src/calc.py\n@@\n"
            "-    return a + b  # NEEDLE\n+    return b + a\n*** End Patch\n"
        )
        assert sandbox.call("apply_patch", {"input": update}).ok
        assert "return b + a" in (repo / "src" / "calc.py").read_text()

        # .git is never writable: the patch engine refuses it, and the mount is read-only anyway.
        git_patch = "*** Begin Patch\n*** Add File: .git/hooks/post-checkout\n+evil\n*** End Patch\n"
        assert not sandbox.call("apply_patch", {"patch": git_patch}).ok
        assert not (repo / ".git" / "hooks").exists()
        # The write container runs nothing but the patch engine: no repository code with write access.
        refused = sandbox._request("write", "run_test", {"argv": ["python3", "-c", "print(1)"]}, 10)
        assert not refused.ok and "unknown tool 'run_test'" in (refused.error or "") + refused.output
        ids = sandbox.container_ids
        assert len(ids) == 2
        write = docker_client.inspect_container(ids[1])
        assert write["Config"]["Labels"]["codebox.role"] == "write"
        mounts = {m["Destination"]: m for m in write["Mounts"]}
        assert mounts["/repo"]["RW"] is True
        assert mounts["/repo/.git"]["RW"] is False
        assert write["HostConfig"]["NetworkMode"] == "none" and write["HostConfig"]["CapDrop"] == ["ALL"]
    for cid in ids:
        assert _wait_gone(docker_client, cid, 5)


# --- limits --------------------------------------------------------------------------------------

# Finds the server's pid(s) from inside the container: init's child (PPid 1) whose command
# line names the server (init runs it in its forked child, so the child has init's argv).
_SERVER_PIDS = """
import os
def server_pids():
    found = []
    for p in os.listdir("/proc"):
        if p.isdigit() and int(p) != os.getpid():
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    argv = f.read().split(b"\\0")
                with open("/proc/%s/status" % p) as f:
                    ppid = [line.split()[1] for line in f if line.startswith("PPid:")][0]
            except (OSError, IndexError):
                continue
            if ppid == "1" and b"sandbox.server" in argv:
                found.append(int(p))
    return found
"""

_PROC_LIST = """
import json, os
me = os.getpid()
procs = {}
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != me:
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                procs[pid] = f.read().replace(b"\\0", b" ").decode().strip()
        except OSError:
            pass
print(json.dumps(procs))
"""


def _assert_only_init_and_server(sandbox: Sandbox) -> None:
    procs = _json_out(_py(sandbox, _PROC_LIST))
    others = {pid: cmd for pid, cmd in procs.items() if pid != "1" and "-m sandbox.server " not in cmd}
    assert not others, f"processes left in the container: {others} (all: {procs})"
    assert "sandbox.container_init" in procs.get("1", "")


def test_timeout_kills_grandchild_that_ignores_sigterm(sb: Sandbox) -> None:
    code = """
    import os, signal, subprocess, sys, time
    child = (
        "import os, signal, time\\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
        "if os.fork() == 0:\\n"  # the grandchild leaves the process group too
        "    os.setsid(); signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)\\n"
        "time.sleep(300)\\n"
    )
    subprocess.Popen([sys.executable, "-c", child])
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("started", flush=True)
    time.sleep(300)
    """
    t0 = time.monotonic()
    reply = _py(sb, code, timeout_s=2)
    assert time.monotonic() - t0 < 10
    assert not reply.ok and reply.outcome == "timeout", reply
    assert "started" in reply.output
    _assert_only_init_and_server(sb)


def test_huge_output_is_capped_with_head_tail_and_count(sb: Sandbox) -> None:
    code = """
    import sys
    out = sys.stdout.buffer
    out.write(b"HEAD-MARK\\n")
    chunk = b"x" * (1 << 20)
    for _ in range(50):
        out.write(chunk)
    out.write(b"\\nTAIL-MARK\\n")
    """
    t0 = time.monotonic()
    reply = _py(sb, code, timeout_s=60)
    assert reply.ok, reply.error
    assert time.monotonic() - t0 < 20
    assert "HEAD-MARK" in reply.output and "TAIL-MARK" in reply.output
    assert len(reply.output) < 3 * 32_000
    cut = [v for k, v in reply.data.items() if "cut" in k and isinstance(v, int)]
    assert cut and max(cut) > 50_000_000 - 100_000, reply.data
    assert str(max(cut)) in reply.output or f"{max(cut):,}" in reply.output


def test_fork_bomb_hits_the_pids_limit(image: str, repo: Path) -> None:
    with Sandbox(repo, _config(image, pids_limit=64), task_id=f"{TASK}-forkbomb") as sandbox:
        code = """
        import os, time
        root = os.getpid()
        end = time.time() + 3
        fails = 0
        while time.time() < end:
            try:
                if os.fork() == 0:
                    continue
            except OSError:
                fails += 1
                time.sleep(0.01)
        if os.getpid() == root:
            print("fork failures:", fails, flush=True)
        """
        reply = _py(sandbox, code, timeout_s=8)
        assert reply.outcome in ("ok", "failed", "timeout", "container_died"), reply
        if reply.outcome != "container_died":
            found = re.search(r"^fork failures: (\d+)$", reply.output, re.M)
            assert found and int(found.group(1)) > 0, reply.output[-3000:]
        # Survived or replaced: the next calls work and nothing of the bomb is left.
        assert sandbox.call("read_file", {"path": "README.md"}).ok
        _assert_only_init_and_server(sandbox)


def test_oom_is_reported(image: str, repo: Path) -> None:
    with Sandbox(repo, _config(image, memory="96m"), task_id=f"{TASK}-oom") as sandbox:
        reply = _py(sandbox, "x = bytearray(400 * 1024 * 1024); print('survived')", timeout_s=20)
        assert not reply.ok and reply.outcome == "oom", reply
        assert sandbox.call("read_file", {"path": "README.md"}).ok


# --- deaths, hangs and leaks ---------------------------------------------------------------------


def test_container_killed_from_outside_mid_call(image: str, repo: Path, docker_client: EngineClient) -> None:
    with Sandbox(repo, _config(image), task_id=f"{TASK}-killed") as sandbox:
        [first] = sandbox.container_ids
        killer = threading.Timer(1.0, lambda: docker_client.kill(first))
        killer.start()
        t0 = time.monotonic()
        reply = _py(sandbox, "import time; time.sleep(60)", timeout_s=60)
        killer.join()
        assert time.monotonic() - t0 < 10
        assert not reply.ok and reply.outcome == "container_died"
        assert reply.error and "fresh container" in reply.error
        after = sandbox.call("read_file", {"path": "README.md"})
        assert after.ok and "hello sandbox" in after.output
        assert sandbox.container_ids and sandbox.container_ids[0] != first
        assert _wait_gone(docker_client, first, 5)
        # Killed while idle: the next call notices before sending and uses a fresh container.
        [second] = sandbox.container_ids
        docker_client.kill(second)
        assert _wait_gone(docker_client, second, 5)
        again = sandbox.call("read_file", {"path": "README.md"})
        assert again.ok and sandbox.container_ids[0] not in (first, second)


def _freeze_server(docker_client: EngineClient, container_id: str) -> None:
    """SIGSTOP the server from inside (as repository code could: same uid, no capability needed)."""
    code = (
        _SERVER_PIDS + "import signal\nfor p in server_pids():\n    os.kill(p, signal.SIGSTOP)\nprint(server_pids())\n"
    )
    user = f"{OWNER_UID}:{OWNER_GID}"
    status, output = engine.exec_in(docker_client, container_id, ["python3", "-c", code], user=user)
    assert status == 0 and output.strip() not in (b"", b"[]"), output


def test_hung_server_is_killed_at_the_host_deadline(image: str, repo: Path, docker_client: EngineClient) -> None:
    cfg = _config(image, call_grace_s=1.0)
    with Sandbox(repo, cfg, task_id=f"{TASK}-hung") as sandbox:
        [first] = sandbox.container_ids
        _freeze_server(docker_client, first)
        t0 = time.monotonic()
        reply = sandbox.call("read_file", {"path": "README.md"}, timeout_s=1.0)
        waited = time.monotonic() - t0
        assert not reply.ok and reply.outcome == "container_died"
        assert reply.error and "did not answer within 2 s" in reply.error and "killed" in reply.error
        assert 1.9 < waited < 5
        assert sandbox.call("read_file", {"path": "README.md"}).ok
        assert sandbox.container_ids[0] != first
        assert _wait_gone(docker_client, first, 5)


def test_repo_code_cannot_push_an_oversized_line_to_the_host(sb: Sandbox) -> None:
    """Repo code tries to write 5 MB without a newline into the server's protocol pipe.

    Either the server's descriptors are out of reach (non-dumpable server) or the host
    caps the line at wire.MAX_RESPONSE_BYTES and replaces the container.
    """
    [before] = sb.container_ids
    code = _SERVER_PIDS + textwrap.dedent(
        """
        import json, re
        res = {}
        for pid in server_pids():
            try:
                err = os.readlink("/proc/%d/fd/2" % pid)
                for fd in os.listdir("/proc/%d/fd" % pid):
                    link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
                    if not link.startswith("pipe:") or link == err:
                        continue
                    with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                        flags = int(re.search(r"flags:\\s+(\\d+)", f.read()).group(1), 8)
                    if flags & 3 == 1:  # the write end: the protocol stdout
                        with open("/proc/%d/fd/%s" % (pid, fd), "wb") as out:
                            out.write(b"A" * (5 * 1024 * 1024))
                        res[fd] = "written"
            except OSError as exc:
                res["refused"] = type(exc).__name__
        print(json.dumps(res))
        """
    )
    reply = _py(sb, code)
    if reply.outcome == "container_died":
        assert reply.error and str(wire.MAX_RESPONSE_BYTES) in reply.error, reply.error
        assert sb.container_ids[0] != before
    else:
        assert _json_out(reply) == {"refused": "PermissionError"}, reply.output
    after = sb.call("read_file", {"path": "README.md"})
    assert after.ok and "hello sandbox" in after.output


def test_init_cannot_be_stopped_killed_or_traced_from_inside(sb: Sandbox) -> None:
    code = """
    import json, os, signal, time
    res = {}
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(1, sig)
            res[sig.name] = "sent"
        except OSError as exc:
            res[sig.name] = type(exc).__name__
    time.sleep(0.2)
    with open("/proc/1/status") as f:
        res["state"] = [l.split()[1] for l in f if l.startswith("State:")][0]
    try:
        os.listdir("/proc/1/fd")
        res["fd"] = "readable"
    except OSError as exc:
        res["fd"] = type(exc).__name__
    print(json.dumps(res))
    """
    res = _json_out(_py(sb, code))
    assert res["state"] in ("S", "R"), res  # not T (stopped), still there
    assert res["fd"] == "PermissionError", res
    assert sb.call("ping", {}).ok


def test_close_from_another_thread_during_a_call(image: str, repo: Path, docker_client: EngineClient) -> None:
    sandbox = Sandbox(repo, _config(image), task_id=f"{TASK}-close")
    sandbox.start()
    [cid] = sandbox.container_ids
    closer = threading.Timer(0.5, sandbox.close)
    closer.start()
    t0 = time.monotonic()
    reply = _py(sandbox, "import time; time.sleep(60)", timeout_s=60)
    closer.join()
    assert time.monotonic() - t0 < 5
    assert not reply.ok and reply.outcome == "container_died"
    sandbox.close()  # idempotent
    with pytest.raises(SandboxError, match="closed"):
        sandbox.call("read_file", {"path": "README.md"})
    assert _wait_gone(docker_client, cid, 5)


@pytest.mark.parametrize("frozen_server", [False, True], ids=["server-exits-on-eof", "server-sigstopped"])
def test_sigkill_of_the_owner_process_removes_the_container(
    image: str, repo: Path, docker_client: EngineClient, frozen_server: bool
) -> None:
    """The host process dies by SIGKILL: its container goes too (server EOF; or init sees the hang-up)."""
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from agent.containers.sandbox import Sandbox
        from agent.sandboxes.config import SandboxConfig
        cfg = SandboxConfig(image={image!r})
        sb = Sandbox(Path({str(repo)!r}), cfg, task_id={TASK + "-orphan-" + str(frozen_server)!r})
        sb.start()
        print(sb.container_ids[0], flush=True)
        time.sleep(120)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        cid = proc.stdout.readline().strip()
        assert cid, "the owner process did not start a sandbox"
        assert docker_client.inspect_container(cid)["State"]["Running"]
        if frozen_server:
            _freeze_server(docker_client, cid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)
        t0 = time.monotonic()
        assert _wait_gone(docker_client, cid, 5), "the container outlived its SIGKILLed owner"
        print(f"container gone {time.monotonic() - t0:.2f} s after SIGKILL (server frozen: {frozen_server})")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_reap_leftovers(image: str, docker_client: EngineClient) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    now = time.time()

    def make(tag: str, owner: int, expires: float) -> str:
        return docker_client.create_container({
            "Image": image,
            "Cmd": ["true"],
            "Labels": {
                LABEL_TASK: f"{TASK}-reap-{tag}",
                "codebox.owner": str(owner),
                "codebox.host": socket.gethostname(),
                "codebox.role": "tools",
                "codebox.expires": str(int(expires)),
            },
            "HostConfig": {"NetworkMode": "none"},
        })

    dead_owner = make("dead", dead.pid, now + 3600)
    expired = make("expired", os.getpid(), now - 3600)
    alive = make("alive", os.getpid(), now + 3600)
    try:
        logged: list[str] = []
        removed = reap_leftovers(log=logged.append)
        assert dead_owner in removed and expired in removed and alive not in removed
        assert any("owner process" in m for m in logged) and any("lifetime" in m for m in logged)
        assert _wait_gone(docker_client, dead_owner, 5) and _wait_gone(docker_client, expired, 5)
        assert docker_client.inspect_container(alive)
    finally:
        for cid in (dead_owner, expired, alive):
            with contextlib.suppress(NotFound):
                docker_client.remove(cid, force=True)


def test_container_past_its_lifetime_is_replaced(image: str, repo: Path, docker_client: EngineClient) -> None:
    with Sandbox(repo, _config(image, lifetime_s=2), task_id=f"{TASK}-lifetime") as sandbox:
        [first] = sandbox.container_ids
        # The server exits at its lifetime; init ends the container; auto_remove deletes it.
        assert _wait_gone(docker_client, first, 8)
        after = sandbox.call("read_file", {"path": "README.md"})
        assert after.ok, after
        assert sandbox.container_ids[0] != first


def test_init_alarm_ends_its_command(sb: Sandbox) -> None:
    """sandbox.container_init's lifetime alarm, run as a plain command (not PID 1) in the container."""
    from agent.containers.runtime import ensure_runtime

    argv = [*ensure_runtime().python_argv(), "-m", "sandbox.container_init", "--alarm-s", "1", "--", "sleep", "30"]
    t0 = time.monotonic()
    reply = sb.call("run_test", {"argv": argv, "timeout_s": 20})
    assert time.monotonic() - t0 < 8
    assert reply.data.get("exit_code") == 124, reply.output


# --- the stream reader, without a container ------------------------------------------------------


def _frame(stream: int, data: bytes) -> bytes:
    return bytes([stream, 0, 0, 0]) + len(data).to_bytes(4, "big") + data


def test_attach_stream_demultiplexes_and_caps() -> None:
    import random

    from agent.containers.attach_stream import AttachStream, LineTooLong, StreamClosed, StreamDeadline

    rnd = random.Random(7)
    lines = [b"L%d-" % i + b"x" * rnd.randint(0, 3000) for i in range(40)]
    payload = b"".join(line + b"\n" for line in lines)
    data, pos = b"", 0
    while pos < len(payload):  # stdout split into frames at arbitrary points, stderr frames between
        k = rnd.randint(1, 5000)
        data += _frame(1, payload[pos : pos + k]) + (_frame(2, b"log %d\n" % pos) if k % 3 == 0 else b"")
        pos += k
    a, b = socket.socketpair()

    def writer() -> None:
        p = 0
        while p < len(data):  # and the socket delivers them in arbitrary pieces
            k = rnd.randint(1, 7000)
            b.sendall(data[p : p + k])
            p += k
        b.close()

    thread = threading.Thread(target=writer)
    thread.start()
    stream = AttachStream(a, max_line=10_000)
    assert [stream.read_line(time.monotonic() + 5) for _ in lines] == lines
    with pytest.raises(StreamClosed):
        stream.read_line(time.monotonic() + 5)
    thread.join()
    assert "log" in stream.stderr_tail()

    a, b = socket.socketpair()
    b.sendall(_frame(1, b"A" * 20_000))  # no newline: refused at the cap, whatever follows
    with pytest.raises(LineTooLong):
        AttachStream(a, max_line=10_000).read_line(time.monotonic() + 2)
    b.close()

    a, b = socket.socketpair()
    quiet = AttachStream(a, max_line=10_000)
    t0 = time.monotonic()
    with pytest.raises(StreamDeadline):
        quiet.read_line(time.monotonic() + 0.2)
    assert time.monotonic() - t0 < 1
    threading.Timer(0.2, quiet.shutdown).start()  # from another thread: wakes the reader
    with pytest.raises(StreamClosed):
        quiet.read_line(time.monotonic() + 5)
    b.close()


def test_a_repository_cannot_replace_the_server_with_its_own_sandbox_package(image: str, repo: Path) -> None:
    # `python3 -m sandbox.server` with the repo as working directory would import the repo's
    # `sandbox/` first: in the write container that is repository code with write access.
    evil = repo / "sandbox"
    evil.mkdir()
    (evil / "__init__.py").write_text(
        "import os\n"
        "for d in ('/repo', '/tmp'):\n"
        "    try:\n"
        "        open(os.path.join(d, f'PWNED-{os.getpid()}'), 'w').close()\n"
        "    except OSError:\n"
        "        pass\n"
        "raise SystemExit('the repository ran its own sandbox package')\n"
    )
    with Sandbox(repo, SandboxConfig(image=image), task_id="shadow") as sandbox:
        read = sandbox.call("read_file", {"path": "sandbox/__init__.py"})
        assert read.ok, read.output
        patch = "*** Begin Patch\n*** Add File: notes.txt\n+ok\n*** End Patch\n"
        assert sandbox.call("apply_patch", {"patch": patch}).ok
        listing = sandbox.call("run_test", {"argv": ["ls", "/tmp"], "timeout_s": 10})
        assert "PWNED" not in listing.output
    assert not list(repo.glob("PWNED-*"))


def test_any_image_with_python3_serves_as_the_sandbox(repo: Path) -> None:
    # The offline base has python3 but none of Dockerfile.sandbox's settings (no /opt/codebox,
    # no HOME, no WORKDIR): the mounted stdlib server must work there as it is.
    from agent.containers.image import BASE_IMAGE, image_exists

    if not image_exists(BASE_IMAGE):
        pytest.skip(f"{BASE_IMAGE} is not on this machine (the registry path was used)")
    with Sandbox(repo, SandboxConfig(image=BASE_IMAGE), task_id="other-image") as sandbox:
        read = sandbox.call("read_file", {"path": "src/calc.py"})
        assert read.ok and "NEEDLE" in read.output
        test = sandbox.call("run_test", {"argv": ["python3", "-c", "import os; print(os.getcwd())"], "timeout_s": 10})
        assert test.ok and "/repo" in test.output


def test_a_limit_docker_refuses_is_a_sandbox_error(image: str, repo: Path) -> None:
    # SandboxConfig checks what it can; only the engine knows how many CPUs the machine has.
    sandbox = Sandbox(repo, SandboxConfig(image=image, cpus=4096.0), task_id="bad-limit")
    try:
        with pytest.raises(SandboxError, match=r"cannot create the sandbox container.*CPU"):
            sandbox.start()
    finally:
        sandbox.close()


def test_a_workspace_removed_before_its_container_starts_is_an_error_not_a_new_folder(
    image: str, tmp_path: Path
) -> None:
    # A warm container can start after its task ended and removed the workspace: the daemon must
    # refuse the mount, not create an empty root-owned folder where the workspace was.
    from agent.containers.engine_api import EngineClient
    from agent.containers.launch import launch
    from agent.containers.spec import ROLE_TOOLS

    gone = tmp_path / "gone:ws"  # a ':' in the path is no separator for a bind mount
    gone.mkdir()

    def remove_it(box: Any) -> bool:  # right after the create, before the start
        gone.rmdir()
        return True

    client = EngineClient.from_env()
    with pytest.raises(SandboxError, match=r"did not start.*does not exist"):
        launch(client, _config(image), gone, ROLE_TOOLS, f"{TASK}-gone", register=remove_it)
    assert not gone.exists()
    gone.mkdir()
    (gone / "x.py").write_text("x = 1\n")
    with Sandbox(gone, _config(image), task_id=f"{TASK}-colon") as sandbox:
        assert sandbox.call("read_file", {"path": "x.py"}).ok
