"""Cancel primitives of an environment build, no Docker: uv's whole process group goes, a cancelled
download leaves nothing in the cache, the next fetch works."""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from agent.cancel import CancelToken
from agent.env.cancel import EnvCancelled, check, run_process
from agent.env.resolve.fetch import fetch_pin
from agent.env.resolve.resolve import Pin


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_cancel_kills_the_subprocess_and_its_children(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = f"sleep 600 & echo $! > {pids}.tmp; mv {pids}.tmp {pids}; wait"
    cancel = CancelToken()

    def cancel_when_started() -> None:
        while not pids.exists():
            time.sleep(0.02)
        cancel.cancel("test")

    threading.Thread(target=cancel_when_started, daemon=True).start()
    with pytest.raises(EnvCancelled, match="cancelled"):
        run_process(["sh", "-c", script], cancel, 300)
    child = int(pids.read_text())
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)  # SIGKILL is sent; the orphan is reaped by init
    assert not _alive(child), "the subprocess's child outlived the cancel"


def test_run_process_returns_like_subprocess_run_and_times_out_like_it() -> None:
    done = run_process([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
                       CancelToken(), 60)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    import subprocess

    with pytest.raises(subprocess.TimeoutExpired):
        run_process(["sleep", "30"], CancelToken(), 0.3)


def test_check_names_the_reason() -> None:
    cancel = CancelToken()
    check(cancel)
    cancel.cancel("SIGINT received")
    with pytest.raises(EnvCancelled, match=r"cancelled \(SIGINT received\)"):
        check(cancel)


class _CancelOnSecondLook:
    """Not cancelled when the fetch starts, cancelled once it copies."""

    def __init__(self) -> None:
        self.looks = 0

    @property
    def cancelled(self) -> bool:
        self.looks += 1
        return self.looks > 1


def test_a_cancelled_download_leaves_no_cache_entry_and_the_next_fetch_stores_it(tmp_path: Path) -> None:
    source = tmp_path / "gamma-3.0-py3-none-any.whl"
    source.write_bytes(os.urandom(3 << 20))
    pin = Pin(name="gamma", version="3.0", url=source.as_uri(), sha256=hashlib.sha256(source.read_bytes()).hexdigest())
    store = tmp_path / "store"
    with pytest.raises(EnvCancelled):
        fetch_pin(pin, store, _CancelOnSecondLook())
    assert [p for p in store.rglob("*") if p.is_file()] == []  # no .part, no entry
    stored = fetch_pin(pin, store, CancelToken())
    assert stored.read_bytes() == source.read_bytes()
    assert [p.name for p in store.rglob("*") if p.is_file()] == [source.name]


class _FakeContainer:
    """wait() blocks until removed (as Docker's does when a container is killed), or returns ``code``."""

    def __init__(self, code: int | None = None) -> None:
        self.code = code
        self.removed = threading.Event()

    def wait(self) -> dict[str, int]:
        if self.code is None:
            self.removed.wait(60)
            return {"StatusCode": 137}
        return {"StatusCode": self.code}


def test_wait_container_removes_the_container_on_a_cancel_and_returns_its_status_otherwise() -> None:
    from agent.env.cancel import wait_container

    assert wait_container(_FakeContainer(3), CancelToken(), 60, lambda: None) == {"StatusCode": 3}
    running, cancel = _FakeContainer(), CancelToken()
    threading.Timer(0.2, cancel.cancel).start()
    with pytest.raises(EnvCancelled):
        wait_container(running, cancel, 60, running.removed.set)
    assert running.removed.is_set()
    hung = _FakeContainer()
    with pytest.raises(TimeoutError):
        wait_container(hung, CancelToken(), 0.3, hung.removed.set)
    assert hung.removed.is_set()
