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


def test_a_path_with_a_control_character_is_refused_before_any_write(server: ServerProc, repo: Path) -> None:
    evil = "x\x1b]52;c;aGk=\x07.txt"
    patch = f"*** Begin Patch\n*** Add File: ok.txt\n+a\n*** Add File: {evil}\n+b\n*** End Patch\n"
    r = server.call("apply_patch", patch=patch)
    assert r["ok"] is False and "control character" in r["error"]
    assert sorted(os.listdir(repo)) == ["app.py"]


def test_a_patch_never_makes_an_executable_file(server: ServerProc, repo: Path) -> None:
    tool = repo / "run.sh"
    tool.write_text("#!/bin/sh\necho run\n")
    tool.chmod(0o755)
    move = (
        "*** Begin Patch\n*** Update File: run.sh\n*** Move to: .husky/pre-commit\n@@\n-echo run\n+echo hook\n"
        "*** Add File: new.sh\n+#!/bin/sh\n*** End Patch\n"
    )
    r = server.call("apply_patch", patch=move)
    assert r["ok"], r["output"]
    assert (repo / ".husky" / "pre-commit").stat().st_mode & 0o111 == 0  # the move's source was +x
    assert (repo / "new.sh").stat().st_mode & 0o111 == 0


def test_an_update_in_place_keeps_the_mode(server: ServerProc, repo: Path) -> None:
    (repo / "app.py").chmod(0o750)
    r = server.call("apply_patch", patch=UPDATE)
    assert r["ok"], r["output"]
    assert (repo / "app.py").stat().st_mode & 0o777 == 0o750


def test_each_result_carries_the_net_diff_of_the_files_it_touched(server: ServerProc, repo: Path) -> None:
    """From the content before the server's first patch to each file, to the content now."""
    (repo / "notes.txt").write_text("keep\n")
    first = server.call("apply_patch", patch=UPDATE)
    assert first["data"]["net_diffs"] == {"app.py": first["data"]["diff"]}
    again = "*** Begin Patch\n*** Update File: app.py\n@@ def f():\n-    return 2\n+    return 3\n*** End Patch\n"
    second = server.call("apply_patch", patch=again)
    net = second["data"]["net_diffs"]["app.py"]
    assert "-    return 1\n+    return 3\n" in net and "return 2" not in net  # not patch after patch
    assert "-    return 2\n+    return 3\n" in second["data"]["diff"]  # the model still reads its own patch
    back = "*** Begin Patch\n*** Update File: app.py\n@@ def f():\n-    return 3\n+    return 1\n*** End Patch\n"
    assert server.call("apply_patch", patch=back)["data"]["net_diffs"] == {"app.py": ""}  # as it was
    made = server.call("apply_patch", patch=ADD)["data"]["net_diffs"]
    assert made == {"new/hello.txt": "--- /dev/null\n+++ b/new/hello.txt\n@@ -0,0 +1 @@\n+hello\n"}
    gone = "*** Begin Patch\n*** Delete File: new/hello.txt\n*** Delete File: notes.txt\n*** End Patch\n"
    nets = server.call("apply_patch", patch=gone)["data"]["net_diffs"]
    assert nets["new/hello.txt"] == ""  # added, then deleted: no net change
    assert nets["notes.txt"].startswith("--- a/notes.txt\n+++ /dev/null\n") and "-keep" in nets["notes.txt"]


def test_a_move_is_a_delete_and_an_add_in_the_net_diffs(server: ServerProc, repo: Path) -> None:
    move = "*** Begin Patch\n*** Update File: app.py\n*** Move to: lib/app.py\n@@ def f():\n-    return 1\n" \
           "+    return 5\n*** End Patch\n"
    nets = server.call("apply_patch", patch=move)["data"]["net_diffs"]
    assert list(nets) == ["app.py", "lib/app.py"]
    assert nets["app.py"].startswith("--- a/app.py\n+++ /dev/null\n")
    assert nets["lib/app.py"].startswith("--- /dev/null\n+++ b/lib/app.py\n") and "+    return 5" in nets["lib/app.py"]
