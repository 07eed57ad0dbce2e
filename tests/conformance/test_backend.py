"""What every sandbox backend x runtime must do, checked through the seam (agent.sandboxes): each
tool, the write box, the read-only repo, no network, the hardening, output caps, a timeout that
kills the whole process tree, and leftovers reaped after the owner's `kill -9`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.backends.podman import PodmanService
from agent.backends.registry import backend_for
from agent.sandboxes.base import Session
from agent.sandboxes.config import SandboxConfig

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "README.md").write_text("hello conformance\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_text("def needle():\n    return 42\n")
    repo.chmod(0o755)
    return repo


@pytest.fixture
def session(target: SandboxConfig, repo: Path, request: pytest.FixtureRequest) -> Iterator[Session]:
    box = backend_for(target).session(repo, target, task_id=f"conf-{request.node.name[:30]}")
    try:
        box.start()
        yield box
    finally:
        box.close()


def py(session: Session, code: str, timeout_s: float = 30) -> tuple[str, str, dict[str, object]]:
    """Run python code as the task's test command would; (outcome, output, data)."""
    result = session.call("run_test", {"argv": ["python3", "-c", textwrap.dedent(code)], "timeout_s": timeout_s})
    return result.outcome, result.output, result.data


def test_each_tool_the_write_box_and_the_read_only_repo(session: Session, repo: Path, target: SandboxConfig) -> None:
    read = session.call("read_file", {"path": "README.md"})
    assert read.ok and "hello conformance" in read.output
    found = session.call("search", {"query": "needle"})
    assert found.ok and found.data["count"] == 1 and "pkg/mod.py" in found.output
    regex = session.call("search", {"query": "need+le", "regex": True})
    assert regex.ok and regex.output == found.output
    # under gVisor a literal search is the server's own walk (no process start), a regex one rg's
    gvisor = target.runtime.startswith("runsc")
    assert (found.data["engine"], regex.data["engine"]) == ("python" if gvisor else "rg", "rg")
    missing = session.call("read_file", {"path": "nope.txt"})
    assert (missing.ok, missing.outcome) == (False, "error")
    assert py(session, "import sys; sys.exit(3)")[0] == "failed"
    (repo / "pkg").chmod(0o777)  # anyone may write here: only the read-only mount stops the write
    outcome, output, _ = py(session, "open('/repo/pkg/x', 'w')")
    assert outcome == "failed" and "Read-only file system" in output, output
    tool_box = session.container_ids
    add = "*** Begin Patch\n*** Add File: new.txt\n+written\n*** End Patch\n"
    patched = session.call("apply_patch", {"patch": add})
    assert patched.ok and (repo / "new.txt").read_text() == "written\n"
    assert len(session.container_ids) == 2 and session.container_ids[0] == tool_box[0]  # a write box of its own
    hook = session.call("apply_patch", {"patch": "*** Begin Patch\n*** Add File: .git/hooks/x\n+x\n*** End Patch\n"})
    assert not hook.ok and not (repo / ".git" / "hooks" / "x").exists()
    seen = session.call("read_file", {"path": "new.txt"})  # the tool box sees the write box's change
    assert seen.ok and "written" in seen.output


def test_the_runtime_asked_for_runs_it_with_no_network_and_the_hardening(
    session: Session, target: SandboxConfig
) -> None:
    outcome, output, _ = py(session, r"""
        import json, os, platform, socket
        facts = {"release": platform.release(), "uid": os.getuid()}
        status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
        facts["cap_eff"] = status.get("CapEff", "").strip()
        facts["no_new_privs"] = status.get("NoNewPrivs", "").strip()
        try:
            socket.create_connection(("192.0.2.1", 80), timeout=2)  # TEST-NET-1: never routed anyway
            facts["tcp"] = "connected"
        except OSError as exc:
            facts["tcp"] = type(exc).__name__
        try:
            socket.getaddrinfo("example.com", 80)
            facts["dns"] = "resolved"
        except OSError as exc:
            facts["dns"] = type(exc).__name__
        for path in ("/etc/codebox-probe", "/usr/codebox-probe"):
            try:
                open(path, "w")
                facts[path] = "wrote"
            except OSError as exc:
                facts[path] = exc.strerror
        with open("/tmp/t.sh", "w") as f:
            f.write("#!/bin/sh\necho tmp-exec\n")
        os.chmod("/tmp/t.sh", 0o755)
        facts["tmp_exec"] = os.popen("/tmp/t.sh").read().strip()
        print("FACTS" + json.dumps(facts))
    """)
    assert outcome == "ok", output
    facts = json.loads(next(line[5:] for line in output.splitlines() if line.startswith("FACTS{")))
    gvisor = facts["release"] == "4.4.0"  # gVisor's user-space kernel says it is Linux 4.4.0
    assert gvisor == target.runtime.startswith("runsc"), facts
    assert facts["uid"] != 0 and facts["cap_eff"].strip("0") == ""
    if facts["no_new_privs"]:
        assert facts["no_new_privs"] == "1"
    assert facts["tcp"] != "connected" and facts["dns"] != "resolved"
    assert facts["/etc/codebox-probe"] != "wrote" and facts["/usr/codebox-probe"] != "wrote"
    assert facts["tmp_exec"] == "tmp-exec"


def test_output_is_capped_and_a_timeout_kills_the_whole_tree(session: Session) -> None:
    outcome, output, data = py(session, "import sys; sys.stdout.write('x' * 200_000); sys.exit(1)")
    assert outcome == "failed" and data["bytes_cut"] and data["exit_code"] == 1 and len(output) < 100_000
    outcome, _, data = py(session, """
        import os, subprocess, time
        subprocess.Popen(["sleep", "300"])
        subprocess.Popen(["sh", "-c", "sleep 301 & sleep 302"], start_new_session=True)  # its own session
        if os.fork() == 0:
            os.setsid()
            time.sleep(303)
        time.sleep(304)
    """, timeout_s=3)
    assert outcome == "timeout" and data["timed_out"] and int(str(data["killed_count"])) >= 4, data
    outcome, output, _ = py(session, """
        import os
        names = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                names.append(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\\0", b" ").decode())
            except OSError:
                pass
        print("LEFT", [n for n in names if n.startswith("sleep")])
    """)
    assert outcome == "ok" and "LEFT []" in output, output


OWNER = """
import json, sys, time
from pathlib import Path
from agent.sandboxes.config import SandboxConfig
from agent.backends.registry import backend_for
config = SandboxConfig(**json.loads(sys.argv[1]))
box = backend_for(config).session(Path(sys.argv[2]), config, task_id="conf-kill9")
box.start()
assert box.call("apply_patch", {"patch": "*** Begin Patch\\n*** Add File: k.txt\\n+k\\n*** End Patch\\n"}).ok
print(json.dumps(box.container_ids), flush=True)
time.sleep(300)
"""


def test_leftovers_are_gone_after_the_owner_is_killed(target: SandboxConfig, repo: Path) -> None:
    settings = {"backend": target.backend, "runtime": target.runtime, "image": target.image}
    owner = subprocess.Popen([sys.executable, "-c", OWNER, json.dumps(settings), str(repo)], stdout=subprocess.PIPE,
                             text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert owner.stdout is not None
        ids = json.loads(owner.stdout.readline())
        assert len(ids) == 2
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    backend = backend_for(target)

    def alive() -> list[str]:
        return backend.containers(target, "conf-kill9")

    deadline = time.monotonic() + 30  # the owner's hang-up ends them by themselves (stdin closes)
    while alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    if alive():  # what is left, the reaper removes: its owner is dead
        backend.reap(log=lambda _line: None)
    assert alive() == []


def test_a_test_over_the_memory_limit_is_stopped_and_the_next_call_works(target: SandboxConfig, repo: Path) -> None:
    config = target.replace(memory="96m")
    box = backend_for(config).session(repo, config, task_id="conf-oom")
    try:
        hog = box.call("run_test", {"argv": ["python3", "-c", "x = bytearray(400 * 2**20)"], "timeout_s": 60})
        # runc: the kernel kills the test (oom); gVisor: the limit holds the whole sandbox, which goes
        # (oom under Docker, whose events say so; container_died under Podman, whose do not).
        assert not hog.ok and hog.outcome in ("oom", "container_died"), hog
        if target.runtime == "runc":
            assert hog.outcome == "oom"
        assert box.call("read_file", {"path": "README.md"}).ok
    finally:
        box.close()
    if target.backend == "podman":  # (another codebox's service of this runtime may be running too)
        folders = _service_folders(target.runtime)
        assert folders and os.getcwd() not in folders


def _service_folders(runtime: str) -> set[str]:
    """The working folders of the Podman services of this runtime. Its conmon writes an `oom` file
    into that folder when a test is killed for memory: never the user's (once, a repo's root)."""
    socket = f"unix://{PodmanService(runtime).socket}"
    folders = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if socket in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0"):
                folders.add(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            continue  # gone meanwhile
    return folders
