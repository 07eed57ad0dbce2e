"""`codebox doctor` as a user runs it: a line per part with the fix, exit 1 when a needed part is missing, and
the key never on the screen (model servers on 127.0.0.1 only: the fake one, one that refuses keys, none)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.fake_openai_server import FAKE_MODEL, FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-doctor-5ecret-never-shown-4242"


def doctor(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CODEBOX_", "OPENAI_"))}
    environment = {**base, "PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(tmp_path / "config"), **env}
    return subprocess.run([sys.executable, "-m", "agent.cli", "doctor", *args], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=120)


def lines(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """The report's lines by part: "docker" -> "✓ docker    docker 20.10 answers ..."."""
    return {line.split()[1]: line for line in result.stdout.splitlines() if line[:1] in "✓✗!"}


@pytest.fixture
def refusing_server() -> Iterator[str]:
    """An endpoint that refuses every key with 401 and, as some servers do, quotes the key back."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.docker
def test_a_ready_machine_with_a_local_endpoint(tmp_path: Path, sandbox_image: str) -> None:
    with FakeOpenAIServer() as server:
        url = server.url
        result = doctor(tmp_path, "--model", FAKE_MODEL, "--base-url", url, "--api-key-env", "DOCTOR_KEY",
                        DOCTOR_KEY=SECRET)
        asked = [r for r in server.requests if r.path.endswith("/models")]
    found = lines(result)
    assert result.returncode == 0, result.stdout + result.stderr
    assert found["docker"].startswith("✓ docker") and "answers at unix://" in found["docker"]
    assert found["image"].startswith("✓ image") and "is there and current" in found["image"]
    assert found["runtime"].startswith("✓ runtime") and "runc" in found["runtime"]
    assert {"gvisor", "podman", "disk"} <= set(found)
    driver = subprocess.run(["docker", "info", "--format", "{{.Driver}}"], capture_output=True, text=True).stdout
    assert found["storage"].split()[2].rstrip(":") == driver.strip()  # the engine's own driver, named
    assert found["model"].startswith(f"✓ model     {FAKE_MODEL} at {url}")
    assert found["key"] == "✓ key       DOCTOR_KEY is set"
    assert found["endpoint"].startswith("✓ endpoint") and f"answers and lists {FAKE_MODEL}" in found["endpoint"]
    assert asked and asked[0].header("authorization") == f"Bearer {SECRET}"  # the key went to the endpoint only
    assert SECRET not in result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("codebox: ready")


def test_no_engine_is_said_with_how_to_start_it(tmp_path: Path) -> None:
    result = doctor(tmp_path, DOCKER_HOST=f"unix://{tmp_path}/no-docker.sock")
    found = lines(result)
    assert result.returncode == 1, result.stdout + result.stderr
    assert found["docker"].startswith("✗ docker") and "Start the daemon" in found["docker"]
    assert found["image"] == "✗ image     not checked: docker does not answer"
    assert found["model"].startswith("! model     none set") and "--model scripted:FILE" in found["model"]
    assert "codebox: not ready: docker, image, runtime" in result.stdout and "Traceback" not in result.stderr


@pytest.mark.docker
def test_a_missing_image_and_runtime_each_get_their_fix(tmp_path: Path, sandbox_image: str) -> None:
    result = doctor(tmp_path, "--image", "codebox-sandbox:no-such-tag", "--runtime", "no-such-runtime")
    found = lines(result)
    assert result.returncode == 1
    assert found["image"].startswith("✗ image     the sandbox image 'codebox-sandbox:no-such-tag' is not there")
    assert found["image"].endswith("— fix: `codebox image build`")
    assert found["runtime"].startswith("✗ runtime   no-such-runtime is not registered")
    assert "daemon.json" in found["runtime"]


@pytest.mark.docker
def test_model_key_and_endpoint_problems_never_show_the_key(tmp_path: Path, refusing_server: str) -> None:
    no_key = doctor(tmp_path, "--model", "gpt-4.1", "--api-key-env", "DOCTOR_UNSET_KEY")  # OpenAI's own: not asked
    found = lines(no_key)
    assert no_key.returncode == 1
    assert found["key"].startswith("✗ key       DOCTOR_UNSET_KEY is not set")
    assert "export DOCTOR_UNSET_KEY" in found["key"]
    assert found["endpoint"] == "✗ endpoint  not asked: no key to ask with"

    refused = doctor(tmp_path, "--model", "m", "--base-url", refusing_server, "--api-key-env", "DOCTOR_KEY",
                     DOCTOR_KEY=SECRET)
    found = lines(refused)
    assert refused.returncode == 1
    assert found["endpoint"].startswith(f"✗ endpoint  {refusing_server} refused the key: HTTP 401")
    assert "Incorrect API key provided: ***" in found["endpoint"] and "check DOCTOR_KEY" in found["endpoint"]
    assert SECRET not in refused.stdout + refused.stderr

    down = f"http://127.0.0.1:{_closed_port()}/v1"
    gone = doctor(tmp_path, "--model", "m", "--base-url", down)
    found = lines(gone)
    assert gone.returncode == 1
    assert found["key"].startswith("✓ key       OPENAI_API_KEY is not set: a local server needs none")
    assert found["endpoint"].startswith(f"✗ endpoint  {down} does not answer") and "--base-url" in found["endpoint"]


@pytest.mark.docker
def test_a_scripted_model_needs_no_key_and_a_bad_script_is_said(tmp_path: Path, sandbox_image: str) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"message": "done"}]}))
    good = lines(doctor(tmp_path, "--model", f"scripted:{script}"))
    assert good["model"] == f"✓ model     scripted:{script}: a script of 1 turn (no key, no endpoint needed)"
    assert "key" not in good and "endpoint" not in good
    script.write_text(json.dumps({"turn": []}))
    bad = doctor(tmp_path, "--model", f"scripted:{script}")
    assert bad.returncode == 1 and lines(bad)["model"].startswith("✗ model     the script")
    assert "docs/scripted-model.md" in lines(bad)["model"]


@pytest.mark.parametrize("driver", ["fuse-overlayfs", "vfs"])
def test_a_storage_driver_that_slows_every_sandbox_is_said_with_the_way_out(driver: str) -> None:
    from agent.cli.commands.doctor import storage_finding

    finding = storage_finding(driver)
    assert finding.level == "optional" and finding.said.startswith(driver) and "overlay2" in (finding.fix or "")
    assert storage_finding("overlay2").level == "ok"
    assert storage_finding("").level == "optional"  # an engine that does not say
