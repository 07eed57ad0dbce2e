"""The sandbox server's injected runtime (agent/containers/runtime.py): copied once out of the sandbox
image, self-contained (its own loader, libraries and stdlib), and invisible to what it starts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agent.containers.runtime import RUNTIME_MOUNT, Runtime, ensure_runtime, read_runtime
from agent.containers.spec import ROLE_TOOLS, ROLE_WRITE, container_options
from agent.sandboxes.config import SandboxConfig

RUNTIME = Runtime(Path("/cache/runtime/k"), "lib/ld-linux-x86-64.so.2", "bin/python3.11",
                  "lib/python3.11/sandbox", "bin/rg", "3.11.2")


def test_every_sandbox_starts_through_the_runtimes_own_loader_and_leaks_nothing(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    for role in (ROLE_TOOLS, ROLE_WRITE):
        _, body = container_options(SandboxConfig(user="1000:1000"), tmp_path, role, "t", 0.0, runtime=RUNTIME)
        loader = ["/.codebox/lib/ld-linux-x86-64.so.2", "--library-path", "/.codebox/lib", "/.codebox/bin/python3.11"]
        assert body["Cmd"][:7] == [*loader, "-I", "-S", "-m"] and body["Cmd"][7] == "sandbox.container_init"
        server = body["Cmd"][body["Cmd"].index("--") + 1:]
        assert server[:5] == ["/.codebox/bin/python3.11", "-I", "-S", "-m", "sandbox.server"]
        assert server[server.index("--runtime") + 1] == RUNTIME_MOUNT
        assert body["Entrypoint"] == [] and body["WorkingDir"] == "/"
        assert not [v for v in body["Env"] if v.split("=")[0] in ("PYTHONPATH", "PYTHONHOME", "LD_LIBRARY_PATH")]
        mounts = {m["Target"]: m for m in body["HostConfig"]["Mounts"]}
        assert mounts[RUNTIME_MOUNT]["Source"] == "/cache/runtime/k" and mounts[RUNTIME_MOUNT]["ReadOnly"]
        assert mounts["/.codebox/lib/python3.11/sandbox"]["ReadOnly"]


def test_an_incomplete_runtime_folder_is_no_runtime(tmp_path: Path) -> None:
    assert read_runtime(tmp_path) is None
    (tmp_path / "runtime.json").write_text("{\"loader\": ")
    assert read_runtime(tmp_path) is None


@pytest.mark.docker
def test_the_runtime_runs_by_itself_and_what_it_starts_sees_none_of_it(sandbox_image: str) -> None:
    runtime = ensure_runtime()
    folder = runtime.folder
    manifest = json.loads((folder / "runtime.json").read_text())
    assert manifest["python"] == "bin/python3.11" and (folder / manifest["loader"]).is_file()
    assert (folder / "bin" / "rg").is_file() and (folder / "lib" / "python3.11" / "sandbox").is_dir()
    # what the server never imports stays out (the static libpython alone was 24 MB)
    assert not list((folder / "lib" / "python3.11").glob("config-*")) and not (folder / "lib/python3.11/test").exists()
    assert ensure_runtime() is runtime  # once per process: no second look
    argv = [str(folder / runtime.loader), "--library-path", str(folder / "lib"), str(folder / runtime.python),
            "-I", "-S", "-c", "import sys, json, ctypes, subprocess, os; print(sys.prefix);"
                  "print(subprocess.run(['env'], capture_output=True, text=True).stdout)"]
    # a hostile environment: a bogus library path and Python home change nothing
    environ = {"PATH": os.environ["PATH"], "LD_LIBRARY_PATH": "/nonexistent", "PYTHONHOME": "/nonexistent"}
    done = subprocess.run(argv, env=environ, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    prefix, _, child_env = done.stdout.partition("\n")
    assert prefix == str(folder)
    assert "/.codebox" not in child_env and str(folder) not in child_env  # the child inherits only what it was given


@pytest.mark.docker
def test_the_runtime_compiles_the_server_on_a_host_of_another_python(sandbox_image: str, tmp_path: Path) -> None:
    """A host whose Python is not the runtime's minor has the runtime compile the mounted package."""
    import shutil

    from agent.containers.spec import SANDBOX_PACKAGE_DIR

    package = tmp_path / "sandbox"
    shutil.copytree(SANDBOX_PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
    assert ensure_runtime().compile_on_host(package)
    assert list((package / "__pycache__").glob("server.cpython-311.pyc"))
