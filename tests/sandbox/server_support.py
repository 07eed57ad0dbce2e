"""Helpers for the host tests of the in-container server (no tests here).

``ServerProc`` starts ``python3 -m sandbox.server --root <dir> [flags]`` as a
subprocess on pipes, as the host client does, and talks JSON lines to it.
``make_tree`` builds the small repository most tests use.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# The server must run on python3 >= 3.9: set this to run these tests against another python.
SERVER_PYTHON = os.environ.get("CODEBOX_TEST_SERVER_PYTHON", sys.executable)
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


class ServerProc:
    def __init__(self, root: Path | str, *flags: str, env: dict[str, str] | None = None) -> None:
        self.stderr_file = tempfile.TemporaryFile()  # noqa: SIM115  # closed in close()
        full_env = dict(os.environ if env is None else env)
        full_env["PYTHONPATH"] = str(REPO)
        self.proc = subprocess.Popen(
            [SERVER_PYTHON, "-m", "sandbox.server", "--root", str(root), *flags],
            cwd=str(REPO),
            env=full_env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr_file,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._buf = b""
        self._next_id = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read_line(self, timeout: float = 30.0) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no response within {timeout} s; stderr: {self.stderr()}")
                if not sel.select(left):
                    continue
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise EOFError(f"server closed stdout; stderr: {self.stderr()}")
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def read_response(self, timeout: float = 30.0) -> dict[str, Any]:
        resp = json.loads(self.read_line(timeout))
        assert isinstance(resp, dict)
        assert set(resp) == {"id", "ok", "output", "error", "outcome", "data"}, resp
        return resp

    def request(
        self, tool: str, args: dict[str, Any] | None = None, timeout_s: float | None = None, wait: float = 30.0
    ) -> dict[str, Any]:
        self._next_id += 1
        rid = self._next_id
        req: dict[str, Any] = {"id": rid, "tool": tool, "args": args if args is not None else {}}
        if timeout_s is not None:
            req["timeout_s"] = timeout_s
        self.send(json.dumps(req).encode() + b"\n")
        resp = self.read_response(wait)
        assert resp["id"] == rid, resp
        return resp

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        return self.request(tool, args)

    def stderr(self) -> str:
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode("utf-8", "replace")[-3000:]

    def close(self, timeout: float = 10.0) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        self.stderr_file.close()
        return rc


def vm_hwm_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


def alive(pid: int) -> bool:
    """Running (a zombie counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2 :][:1] not in (b"Z", b"X")


def wait_dead(pids: list[int], timeout: float = 3.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in pids if alive(p)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


def make_tree(root: Path) -> Path:
    """A small repository with the cases search and read_file care about."""
    files = {
        "README.md": "# demo\nneedle in the readme\n",
        "src/app.py": "import os\n\ndef main():\n    return 'needle'  # a.b(c\n\nNEEDLE = 1\n",
        "src/util/helpers.py": "def helper():\n    pass  # needle\n",
        "src/util/data.json": '{"needle": true}\n',
        "tests/test_app.py": "from src.app import main\n\ndef test_main():\n    assert main() == 'needle'\n",
        ".hidden/config.txt": "needle hidden\n",
        ".git/HEAD": "ref: refs/heads/needle\n",
        "sub/.git/config": "needle in a nested .git\n",
        "unicode.txt": "caf\u00e9 needle \u00fcber\n\u65e5\u672c needle\n",
        "crlf.txt": "one needle\r\ntwo\r\nthree needle\r\n",
        "long.txt": "needle" + "x" * 5000 + "\n",
        "a.b(c.txt": "literal a.b(c here\n",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8", newline="")
    (root / "bin.dat").write_bytes(b"needle\x00\x01\x02binary needle\n")
    (root / "latin1.txt").write_bytes(b"needle caf\xe9\n")
    os.symlink("/etc/passwd", root / "link_etc")
    os.symlink("/etc", root / "link_etc_dir")
    os.symlink("src/app.py", root / "link_app")
    os.symlink("src", root / "link_src")
    os.symlink("../../../../../../../../etc/hostname", root / "src" / "rel_escape")
    return root
