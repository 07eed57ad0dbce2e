"""What a cache hit of `codebox env build` imports: the key's inputs, the record and one image
lookup, and none of a build's machinery (docker-py, the build boxes, layers, downloads) nor
agent.protocol's models. A user's hit is a new process, so its imports are most of its time
(bench/env_build.py measures it); this pins the boundary, not the time.

The engine is a stand-in and every way to the network refuses, so the hit needs neither
Docker nor an index; a first process records an entry for the key the CLI asks about, a
second one is the hit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.agent.env.projects import FLAT, write

ROOT = Path(__file__).resolve().parents[3]
# Only a build (or a download, a resolve, a run) has a use for these.
NOT_IN_A_HIT = (
    "docker", "requests", "urllib3", "rich", "openai", "agent.protocol",
    "agent.env.install.deps", "agent.env.install.layer", "agent.env.install.probe", "agent.env.resolve.sdists",
    "agent.env.install.metadata",
    "agent.env.install.project_build", "agent.env.install.tools", "urllib.request", "http.client", "ssl",
    "concurrent.futures",
)
TAG = "codebox-env:0123456789abcdef"
IMAGE_ID = "sha256:" + "e" * 64

_PRELUDE = """
import contextlib, io, json, socket, sys
import agent.env.resolve.fetch, agent.env.resolve.resolve
from agent.env.install import images

def refuse(*args, **kwargs):
    raise AssertionError("a cache hit reached for the network or the resolver")

agent.env.resolve.resolve.run_process = agent.env.resolve.fetch.fetch_pin = socket.socket.connect = refuse

class Engine:
    name = "docker"

    def inspect(self, name):
        return {"Id": name if name.startswith("sha256:") else "sha256:" + "b" * 64}

    def close(self):
        pass

images.EngineImages.connect = classmethod(lambda cls, backend="docker": Engine())
"""

_RECORD = """
real_lookup = images.lookup

def lookup(engine, kind, key):  # the entry a build would have written for this key
    images.write(images.Entry(kind=kind, key=key, id={image_id!r}, tag={tag!r}, packages=["alpha==1.0", "beta==2.0"]))
    return real_lookup(engine, kind, key)

images.lookup = lookup
"""

_MAIN = """
from agent.cli.parser import main
with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
    code = main(["env", "build", "--repo", {repo!r}, "--as-of", "now"])
print(json.dumps({{"code": code, "out": out.getvalue(), "err": err.getvalue(),
                  "loaded": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def _run(code: str, cache: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("CODEBOX_")}
    env.update(PYTHONPATH=str(ROOT), CODEBOX_CACHE_DIR=str(cache), XDG_CONFIG_HOME=str(cache / "no-config"))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=120, cwd=cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_a_cache_hit_imports_no_build_machinery_no_docker_py_and_no_protocol(tmp_path: Path) -> None:
    repo = write(tmp_path / "flat", FLAT)
    main = _MAIN.format(repo=str(repo), heavy=NOT_IN_A_HIT)
    first = _run(_PRELUDE + _RECORD.format(image_id=IMAGE_ID, tag=TAG) + main, tmp_path)
    assert first["code"] == 0, first
    hit = _run(_PRELUDE + main, tmp_path)  # a new process: the record alone
    assert hit == {"code": 0, "out": f"{TAG}\n", "err": f"codebox: env: reusing {TAG} (2 packages)\n", "loaded": []}
