"""apply_patch through the server: a thin wrapper over sandbox.patch."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tests.sandbox.server_support import ServerProc

pytest.importorskip("sandbox.patch")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text("def f():\n    return 1\n")
    return tmp_path


@pytest.fixture
def server(repo: Path) -> Iterator[ServerProc]:
    s = ServerProc(repo)
    yield s
    s.close()


ADD = "*** Begin Patch\n*** Add File: new/hello.txt\n+hello\n*** End Patch\n"
UPDATE = "*** Begin Patch\n*** Update File: app.py\n@@ def f():\n-    return 1\n+    return 2\n*** End Patch\n"


def test_add_and_update(server: ServerProc, repo: Path) -> None:
    r = server.call("apply_patch", patch=ADD)
    assert r["ok"] and r["outcome"] == "ok", r["output"]
    assert (repo / "new" / "hello.txt").read_text() == "hello\n"
    assert r["output"].startswith("Success. Updated the following files:\nA new/hello.txt")
    assert r["data"]["summary"] == ["A new/hello.txt"] and r["data"]["changed_paths"] == ["new/hello.txt"]
    r = server.call("apply_patch", input=UPDATE)  # Codex's argument name
    assert r["ok"], r["output"]
    assert (repo / "app.py").read_text() == "def f():\n    return 2\n"
    assert "+    return 2" in r["data"]["diff"] and r["data"]["diff_truncated"] is False


def test_rejected_patch_is_an_error_with_the_patch_message(server: ServerProc, repo: Path) -> None:
    bad = "*** Begin Patch\n*** Update File: app.py\n@@\n-    return 42\n+    return 2\n*** End Patch\n"
    r = server.call("apply_patch", patch=bad)
    assert r["ok"] is False and r["outcome"] == "error"
    assert r["output"] and r["error"] and r["error"] in r["output"]
    assert (repo / "app.py").read_text() == "def f():\n    return 1\n"
    r = server.call("apply_patch", patch="not a patch")
    assert r["ok"] is False and r["output"]


def test_escape_is_refused(server: ServerProc, repo: Path) -> None:
    r = server.call("apply_patch", patch="*** Begin Patch\n*** Add File: ../evil.txt\n+x\n*** End Patch\n")
    assert r["ok"] is False
    assert not (repo.parent / "evil.txt").exists()


def test_argument_errors(server: ServerProc) -> None:
    r = server.call("apply_patch")
    assert r["ok"] is False and "missing required argument 'patch'" in r["error"]
    r = server.call("apply_patch", patch=ADD, input=ADD)
    assert r["ok"] is False and "not both" in r["error"]
