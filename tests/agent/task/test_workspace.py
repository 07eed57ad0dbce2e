"""Workspaces: a private copy at the base, the user's repo never written, the patch out applies to the base."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.task.workspace import WorkspaceError, create_workspace, repo_write_lock
from tests.repos import fingerprint, sh


def make_repo(path: Path) -> Path:
    """A repo with one commit, then uncommitted work: a modified, a deleted, a staged and an untracked file."""
    path.mkdir()
    sh("git", "init", "-q", cwd=path)
    (path / "keep.py").write_text("x = 1\n")
    (path / "gone.py").write_text("y = 2\n")
    (path / "pkg").mkdir()
    (path / "pkg" / "mod.py").write_text("z = 3\n")
    (path / ".gitignore").write_text("*.log\n")
    sh("git", "add", ".", cwd=path)
    sh("git", "commit", "-qm", "init", cwd=path)
    (path / "keep.py").write_text("x = 10\n")
    (path / "gone.py").unlink()
    (path / "staged.py").write_text("s = 1\n")
    sh("git", "add", "staged.py", cwd=path)
    (path / "pkg" / "new.py").write_text("n = 1\n")
    (path / "-odd name.txt").write_text("o\n")
    (path / "debug.log").write_text("ignored\n")
    return path


def test_a_git_workspace_sees_head_plus_uncommitted_changes_and_leaves_the_repo_untouched(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    before = fingerprint(repo)
    ws = create_workspace(repo, root=tmp_path)
    try:
        assert (ws.path / "keep.py").read_text() == "x = 10\n"
        assert not (ws.path / "gone.py").exists()
        assert (ws.path / "staged.py").exists() and (ws.path / "pkg" / "new.py").exists()
        assert (ws.path / "-odd name.txt").read_text() == "o\n"
        assert not (ws.path / "debug.log").exists()  # ignored files are not the user's work
        assert ws.dirty and ws.source_commit == sh("git", "rev-parse", "HEAD", cwd=repo)
        assert ws.patch() == ""  # the base is exactly what the user sees
        alternates = (ws.path / ".git" / "objects" / "info" / "alternates").read_text()
        assert str(repo / ".git" / "objects") in alternates  # objects are shared, not copied
        # work in the workspace: edit, add, delete, a binary file
        (ws.path / "keep.py").write_text("x = 11\n")
        (ws.path / "added.txt").write_text("hello\n")
        (ws.path / "pkg" / "mod.py").unlink()
        (ws.path / "blob.bin").write_bytes(bytes(range(256)))
        patch = ws.patch()
        summary = ws.summary()
    finally:
        ws.remove()
    assert not ws.path.exists()
    assert fingerprint(repo) == before  # tree and .git: byte for byte, mtimes too
    assert sorted(summary.files) == ["added.txt", "blob.bin", "keep.py", "pkg/mod.py"]
    assert (summary.added, summary.removed) == (2, 2)
    assert "GIT binary patch" in patch and "deleted file mode" in patch and "new file mode" in patch
    # the patch applies with git apply to the base: a copy of what the user sees
    target = tmp_path / "target"
    subprocess.run(["cp", "-a", str(repo), str(target)], check=True)
    subprocess.run(["git", "apply", "--binary", "-"], cwd=target, input=patch.encode(), check=True)
    assert (target / "keep.py").read_text() == "x = 11\n"
    assert (target / "blob.bin").read_bytes() == bytes(range(256))
    assert not (target / "pkg" / "mod.py").exists()


def test_a_base_commit_gives_that_commit_and_not_the_uncommitted_work(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    first = sh("git", "rev-parse", "HEAD", cwd=repo)
    ws = create_workspace(repo, first, root=tmp_path)
    try:
        assert (ws.path / "keep.py").read_text() == "x = 1\n" and (ws.path / "gone.py").exists()
        assert ws.base_commit == first and not ws.dirty
    finally:
        ws.remove()


def test_a_bare_mirror_is_a_source(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    mirror = tmp_path / "mirror.git"
    sh("git", "clone", "-q", "--mirror", str(repo), str(mirror), cwd=tmp_path)
    ws = create_workspace(mirror, root=tmp_path)
    try:
        assert (ws.path / "keep.py").read_text() == "x = 1\n"
    finally:
        ws.remove()


def test_a_plain_folder_is_copied_and_still_gives_a_patch(tmp_path: Path) -> None:
    src = tmp_path / "plain"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("a\n")
    (src / "sub" / "b.txt").write_text("b\n")
    os.symlink("a.txt", src / "link")
    before = fingerprint(src)
    ws = create_workspace(src, root=tmp_path)
    try:
        assert (ws.path / "link").is_symlink()
        (ws.path / "a.txt").write_text("A\n")
        (ws.path / "sub" / "b.txt").unlink()
        patch = ws.patch()
    finally:
        ws.remove()
    assert fingerprint(src) == before and not (src / ".git").exists()
    assert "-a\n+A" in patch and "deleted file mode" in patch
    with pytest.raises(WorkspaceError, match="not a git repository"):
        create_workspace(src, "abc123", root=tmp_path)


@pytest.mark.parametrize(
    ("where", "base", "message"),
    [("missing", None, "not a directory"), ("repo", "0" * 40, "is not a commit"),
     ("repo", "--help", "is not a commit")],
)
def test_bad_sources_and_bases_are_clear_errors(tmp_path: Path, where: str, base: str | None, message: str) -> None:
    make_repo(tmp_path / "repo")
    with pytest.raises(WorkspaceError, match=message):
        create_workspace(tmp_path / where, base, root=tmp_path)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("codebox-ws-")] == []  # nothing left behind


def test_a_repo_with_no_commit_needs_one(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    sh("git", "init", "-q", cwd=tmp_path / "empty")
    with pytest.raises(WorkspaceError, match="no commit yet"):
        create_workspace(tmp_path / "empty", root=tmp_path)


def test_the_write_lock_refuses_a_second_writer_in_another_process(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time\nfrom pathlib import Path\n"
         "from agent.task.workspace import repo_write_lock\n"
         f"with repo_write_lock(Path({str(repo)!r})):\n    print('held', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[3],
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(WorkspaceError, match=f"pid {holder.pid}.*--isolated"), repo_write_lock(repo / "."):
            pass
    finally:
        holder.kill()
        holder.wait()
    with repo_write_lock(repo), pytest.raises(WorkspaceError), repo_write_lock(repo):
        pass  # the kernel dropped the dead holder's lock; a second holder in this process is refused
    assert list(repo.iterdir()) == []  # the lock lives outside the repo


def test_workspaces_go_under_codebox_workspace_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setenv("CODEBOX_WORKSPACE_ROOT", str(tmp_path / "host-visible" / "ws"))
    ws = create_workspace(repo)
    try:
        assert ws.path.parent == tmp_path / "host-visible" / "ws"
    finally:
        ws.remove()


def test_checkout_conversions_match_a_normal_checkout_and_a_broken_one_does_not_stop_the_workspace(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    sh("git", "init", "-q", cwd=repo)
    (repo / ".gitattributes").write_text(
        "cp.txt working-tree-encoding=windows-1251\nbad.txt working-tree-encoding=iso-8859\ncrlf.txt text eol=crlf\n")
    (repo / "cp.txt").write_bytes("привет\n".encode("cp1251"))
    (repo / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    sh("git", "add", ".gitattributes", "cp.txt", "crlf.txt", cwd=repo)
    # bad.txt names an encoding iconv does not know: it can only be committed with the attribute off
    (repo / "bad.txt").write_text("plain\n")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("bad.txt -working-tree-encoding\n")
    sh("git", "add", "bad.txt", cwd=repo)
    sh("git", "commit", "-qm", "init", cwd=repo)
    (repo / ".git" / "info" / "attributes").unlink()
    (repo / "crlf.txt").write_bytes(b"a\r\nb\r\nc\r\n")  # uncommitted work on a converted file
    for base in (None, sh("git", "rev-parse", "HEAD", cwd=repo)):
        ws = create_workspace(repo, base, root=tmp_path)
        try:
            assert (ws.path / "cp.txt").read_bytes() == "привет\n".encode("cp1251")  # as a normal checkout has it
            assert (ws.path / "crlf.txt").read_bytes() == (b"a\r\nb\r\nc\r\n" if base is None else b"a\r\nb\r\n")
            assert ws.patch() == ""
            (ws.path / "bad.txt").write_text("plain, edited\n")
            assert "+plain, edited" in ws.patch()
        finally:
            ws.remove()


def test_a_repo_s_own_git_config_runs_nothing_when_a_workspace_is_made(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")  # with uncommitted work: the default base reads the user's tree
    marker = tmp_path / "ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    hook.chmod(0o755)
    # What a repository that arrived with its .git (a tarball, a shared folder) could carry:
    sh("git", "config", "filter.evil.clean", str(hook), cwd=repo)
    sh("git", "config", "filter.evil.smudge", str(hook), cwd=repo)
    sh("git", "config", "core.fsmonitor", str(hook), cwd=repo)
    sh("git", "config", "diff.external", str(hook), cwd=repo)
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (repo / "keep.py").write_text("x = 12\n")
    ws = create_workspace(repo, root=tmp_path)
    try:
        (ws.path / "keep.py").write_text("x = 13\n")
        assert "+x = 13" in ws.patch()
    finally:
        ws.remove()
    assert not marker.exists()


@pytest.mark.parametrize("kind", ["git", "folder"])
def test_a_read_only_source_gives_a_workspace_its_owner_may_write(tmp_path: Path, kind: str) -> None:
    """`chmod -R a-w` on the source: the copy is still the task's to patch (the sandbox drops
    CAP_DAC_OVERRIDE, so even root needs the owner bits), and the source stays as it was."""
    import stat

    source = make_repo(tmp_path / "repo") if kind == "git" else tmp_path / "folder"
    if kind == "folder":
        (source / "pkg").mkdir(parents=True)
        (source / "pkg" / "mod.py").write_text("x = 1\n")
    (source / "pkg" / "new.py").write_text("y = 2\n")  # an untracked file too
    made = [p for p in [source, *source.rglob("*")] if ".git" not in p.parts]
    for p in made:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        ws = create_workspace(source)
        try:
            for rel in ("", "pkg", "pkg/new.py", "pkg/mod.py"):
                mode = stat.S_IMODE((ws.path / rel).stat().st_mode)
                # folders: the owner may write in them (the others' bits kept); files keep their modes
                # (apply_patch renames a new file over them, which needs only the folder)
                wanted = 0o755 if (ws.path / rel).is_dir() else 0o444
                assert mode == wanted, (rel, oct(mode))
        finally:
            ws.remove()
        assert all(stat.S_IMODE(p.stat().st_mode) & 0o222 == 0 for p in made)  # the source untouched
    finally:
        for p in made:
            p.chmod(0o755 if p.is_dir() else 0o644)


def test_a_folder_s_own_dot_git_does_not_come_into_the_workspace(tmp_path: Path) -> None:
    """A folder git finds no work tree in (here: a .git with no HEAD) may still carry a .git: copied,
    it was the workspace's repository, its config honoured by every git call on the host and its
    links followed (a linked info/attributes had codebox append to any file of the user's)."""
    src = tmp_path / "plain"
    (src / ".git" / "info").mkdir(parents=True)
    (src / "a.py").write_text("print(1)\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    os.symlink(victim, src / ".git" / "info" / "attributes")
    (src / ".git" / "config").write_text("[color]\n\tui = always\n[diff]\n\tnoprefix = true\n")
    ws = create_workspace(src, root=tmp_path)
    try:
        (ws.path / "a.py").write_text("print(2)\n")
        patch = ws.patch()
        assert not (ws.path / ".git" / "info" / "attributes").is_symlink()
    finally:
        ws.remove()
    assert victim.read_text() == "mine\n"
    assert patch.startswith("diff --git a/a.py b/a.py\n") and "\x1b" not in patch


def test_a_fifo_for_a_folder_s_git_config_does_not_hang_the_workspace(tmp_path: Path) -> None:
    src = tmp_path / "plain"
    (src / ".git").mkdir(parents=True)
    (src / "a.py").write_text("print(1)\n")
    os.mkfifo(src / ".git" / "config")
    code = ("import sys; from pathlib import Path; from agent.task.workspace import create_workspace; "
            "create_workspace(Path(sys.argv[1]), root=Path(sys.argv[2])).remove()")
    proc = subprocess.run([sys.executable, "-c", code, str(src), str(tmp_path)], timeout=60, capture_output=True,
                          cwd=Path(__file__).resolve().parents[3])
    assert proc.returncode == 0, proc.stderr.decode()


def test_files_an_index_lists_beyond_a_linked_folder_stay_out_of_the_workspace(tmp_path: Path) -> None:
    """A repo that arrives with its .git (a tarball) lists d/id_rsa in its index while d is a link
    out of the repository: the copy of the user's tree followed it, and the model read the file."""
    outside = tmp_path / "home" / ".ssh"
    outside.mkdir(parents=True)
    (outside / "id_rsa").write_text("TOPSECRET\n")
    repo = tmp_path / "repo"
    (repo / "d" / "e").mkdir(parents=True)
    sh("git", "init", "-q", cwd=repo)
    (repo / "d" / "id_rsa").write_text("placeholder\n")
    (repo / "d" / "e" / "deep").write_text("placeholder\n")
    (repo / "a.py").write_text("x = 1\n")
    sh("git", "add", ".", cwd=repo)
    sh("git", "commit", "-qm", "init", cwd=repo)
    for name in ("id_rsa", "e/deep"):
        (repo / "d" / name).unlink()
    (repo / "d" / "e").rmdir()
    (repo / "d").rmdir()
    os.symlink("../home/.ssh", repo / "d")
    (outside / "e").mkdir()
    (outside / "e" / "deep").write_text("TOPSECRET\n")
    (repo / ".git" / "info" / "exclude").write_text("d\n")  # the link itself is not listed as untracked
    ws = create_workspace(repo, root=tmp_path / "ws")
    try:
        found = [p for p in ws.path.rglob("*") if p.is_file() and ".git" not in p.parts]
        assert all("TOPSECRET" not in p.read_text() for p in found)
        assert sorted(p.relative_to(ws.path).as_posix() for p in found) == ["a.py"]
    finally:
        ws.remove()


def test_a_fifo_for_a_repo_s_git_config_is_an_error_after_a_deadline_not_a_hang(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import agent.task.workspace

    repo = make_repo(tmp_path / "repo")
    (repo / ".git" / "config").unlink()
    os.mkfifo(repo / ".git" / "config")
    monkeypatch.setattr(agent.task.workspace, "_SOURCE_ASK_S", 1.0)
    with pytest.raises(WorkspaceError, match=r"did not finish in 1 s .*FIFO"):
        create_workspace(repo, root=tmp_path / "ws")


def test_git_reads_no_terminal_a_config_includes(tmp_path: Path) -> None:
    """`[include] path = /dev/stdin` had git wait for the user's typing (stdin was codebox's).
    (The clone's upload-pack still reads its own stdin, the clone's pipe: that one ends at its deadline.)"""
    repo = make_repo(tmp_path / "repo")
    sh("git", "config", "include.path", "/dev/stdin", cwd=repo)
    code = ("import sys; from pathlib import Path; from agent.task.workspace import _git_kind; "
            "print(_git_kind(Path(sys.argv[1])))")
    read, write = os.pipe()  # a stdin that never ends, as a terminal nobody types in
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(repo)], timeout=30,
                              capture_output=True, stdin=read, cwd=Path(__file__).resolve().parents[3])
    finally:
        os.close(read)
        os.close(write)
    assert proc.stdout.decode().strip() == "work", proc.stderr.decode()


def test_a_workspace_keeps_only_the_tags_its_base_reaches(tmp_path: Path) -> None:
    # A project whose version comes from its tags is built at the base's release, not a later one.
    from agent.env.install.project import highest_tag

    repo = tmp_path / "repo"
    repo.mkdir()
    sh("git", "init", "-q", cwd=repo)
    for version in ("1.0", "2.0"):
        (repo / "v.txt").write_text(version)
        sh("git", "add", ".", cwd=repo)
        sh("git", "commit", "-qm", version, cwd=repo)
        sh("git", "tag", "-a", f"v{version}", "-m", version, cwd=repo)
    sh("git", "tag", "v3.0", "HEAD~1", cwd=repo)  # a lightweight tag on the first commit
    old = create_workspace(repo, "HEAD~1", root=tmp_path)
    new = create_workspace(repo, root=tmp_path)
    try:
        assert sh("git", "tag", cwd=old.path).split() == ["v1.0", "v3.0"]
        assert highest_tag(old.path) == "3.0" and highest_tag(new.path) == "3.0"
        sh("git", "tag", "-d", "v3.0", cwd=repo)
        again = create_workspace(repo, "HEAD~1", root=tmp_path)
        assert highest_tag(again.path) == "1.0"
        again.remove()
        assert sh("git", "tag", cwd=repo).split() == ["v1.0", "v2.0"]  # the user's repository keeps its own
    finally:
        old.remove()
        new.remove()
