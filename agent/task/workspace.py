"""A private working copy per task (a git clone sharing the source's objects, or a reflink copy) and the patch out."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from agent.errors import CodeboxError
from agent.protocol import PatchSummary, Report
from agent.task import submodules

# Every git call: no prompts, no optional index refreshes in the source (a `git status` may
# rewrite the user's .git/index otherwise), no hooks, no external diff or text conversion
# drivers, no line-ending rewriting: the workspace holds the bytes the source holds.
_GIT_ENV = {
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_LFS_SKIP_SMUDGE": "1",
    "GIT_AUTHOR_NAME": "codebox",
    "GIT_AUTHOR_EMAIL": "codebox@localhost",
    "GIT_COMMITTER_NAME": "codebox",
    "GIT_COMMITTER_EMAIL": "codebox@localhost",
}
_GIT_CONFIG = ["-c", "core.hooksPath=/dev/null", "-c", "core.autocrlf=false", "-c", "core.fsmonitor=false",
               "-c", "commit.gpgSign=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false"]
_DIFF = ["--binary", "--no-ext-diff", "--no-textconv", "--no-renames"]
# Deadlines of git calls in the user's repository (a hostile one may block git: a FIFO for a file of its .git)
_SOURCE_ASK_S = 60.0  # a question (rev-parse)
_SOURCE_WALK_S = 600.0  # a walk of its tree (ls-files), a clone


class WorkspaceError(CodeboxError):
    """A workspace could not be made (bad repo path, unknown base commit, git failed)."""


def git(
    *args: str,
    cwd: Path,
    stdin: bytes | None = None,
    check: bool = True,
    on_unencodable: Callable[[Path, list[str]], None] | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run git with codebox's fixed settings; a failure is a WorkspaceError with git's own message.

    With ``on_unencodable``, files git names as impossible to convert are handed to it once,
    and the command runs again. ``env``: more variables (a commit's dates). ``timeout``: seconds,
    for a call in a repository codebox did not make (a FIFO for its .git/config blocks git forever).
    stdin is empty unless given (a config may include /dev/stdin: git would read the terminal).
    """
    env = {**os.environ, **_GIT_ENV, **(env or {})}
    feed = stdin if stdin is not None else b""

    def run() -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["git", *_GIT_CONFIG, *args], cwd=cwd, input=feed, capture_output=True, env=env,
                              timeout=timeout)

    try:
        proc = run()
        names = _UNENCODABLE.findall(proc.stderr.decode(errors="replace")) if on_unencodable else []
        if names and on_unencodable is not None:
            on_unencodable(cwd, names)
            proc = run()
    except subprocess.TimeoutExpired:
        raise WorkspaceError(f"git {args[0]} did not finish in {timeout:.0f} s in {cwd} "
                             "(is a file of its .git a FIFO or a device?)") from None
    if check and proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        raise WorkspaceError(f"git {args[0]} failed in {cwd}: {message[-1] if message else f'exit {proc.returncode}'}")
    return proc


def _out(proc: subprocess.CompletedProcess[bytes]) -> str:
    return proc.stdout.decode().strip()


def dated_as(commit: str, cwd: Path) -> dict[str, str]:
    """The variables that give a commit codebox makes ``commit``'s committer date: a task's as-of date
    is its base's date (agent.env.resolve.asof), and a base commit made now would move it to now (a new
    environment, resolved with newer packages)."""
    when = _out(git("show", "-s", "--format=%cd", "--date=raw", commit, cwd=cwd))
    return {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}


@dataclass
class Workspace:
    """A working copy of ``source``; ``base_commit`` (in the workspace's own git) holds the start."""

    path: Path
    source: Path
    base_commit: str
    # The source's commit the base was made from (HEAD, or the task's base_commit); None for a plain folder.
    source_commit: str | None
    # True when the base is source_commit plus the source's uncommitted changes.
    dirty: bool

    def patch(self) -> str:
        """Everything that differs from the base, new and deleted files included, as `git diff --binary`."""
        self._stage()
        return git("diff", "--cached", *_DIFF, self.base_commit, "--", cwd=self.path).stdout.decode(
            "utf-8", errors="surrogateescape"
        )

    def summary(self) -> PatchSummary:
        self._stage()
        numstat = _out(git("diff", "--cached", "--numstat", "--no-renames", self.base_commit, "--", cwd=self.path))
        summary = PatchSummary()
        for line in numstat.splitlines():
            added, removed, name = line.split("\t", 2)
            summary.files.append(name)
            summary.added += int(added) if added.isdigit() else 0
            summary.removed += int(removed) if removed.isdigit() else 0
        return summary

    def _stage(self) -> None:
        # The index is the workspace's own; staging everything makes new files part of the diff.
        stage_all(self.path)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def workspace_root() -> Path | None:
    """Where workspaces go: $CODEBOX_WORKSPACE_ROOT, else the temp folder (None).

    The sandbox bind-mounts a workspace by its path, so a runner inside a container (compose)
    must put workspaces on a path that is the same on the Docker host.
    """
    value = os.environ.get("CODEBOX_WORKSPACE_ROOT")
    return Path(value).expanduser() if value else None


def create_workspace(source: Path, base_commit: str | None = None, root: Path | None = None) -> Workspace:
    """A fresh working copy of ``source`` at ``base_commit`` (default: HEAD plus uncommitted changes),
    in a new folder under ``root`` (default: workspace_root()).

    Nothing is written to ``source``: a git repository is cloned with ``--shared`` (its
    objects are read through objects/info/alternates), a plain folder is copied with
    reflinks where the file system has them. Raises WorkspaceError.
    """
    source = source.expanduser()
    if not source.is_dir():
        raise WorkspaceError(f"the repository {source} is not a directory")
    source = source.resolve()
    root = root or workspace_root()
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="codebox-ws-", dir=root))
    # As readable as the source, no more: mkdtemp's 0700 would lock out the sandbox's
    # unprivileged user where the source's owner is root (agent.containers.spec).
    path.chmod(stat.S_IMODE(source.stat().st_mode))
    try:
        kind = _git_kind(source)
        if kind == "plain":
            if base_commit:
                raise WorkspaceError(f"base_commit {base_commit} given, but {source} is not a git repository")
            workspace = _from_folder(source, path)
        else:
            workspace = _from_git(source, path, base_commit, bare=kind == "bare")
        _owner_may_write(path)
        return workspace
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise


def _owner_may_write(path: Path) -> None:
    """The workspace is the task's to edit, however read-only the source was: the files are copied
    with their modes (a `chmod -R a-w` tree comes out 555/444, and the sandbox, which drops every
    capability, could not patch it). Its folders get the owner's rwx; the others' bits stay, and so
    do the files' modes: apply_patch writes a temporary file and renames it, which only needs the
    folder (and keeps the file's mode)."""
    for folder, dirs, _files in os.walk(path):
        for name in dirs:
            entry = os.path.join(folder, name)
            st = os.lstat(entry)
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & stat.S_IRWXU != stat.S_IRWXU:
                os.chmod(entry, stat.S_IMODE(st.st_mode) | stat.S_IRWXU)
    st = path.stat()
    if st.st_mode & stat.S_IRWXU != stat.S_IRWXU:
        path.chmod(stat.S_IMODE(st.st_mode) | stat.S_IRWXU)


def _git_kind(source: Path) -> str:
    """'work' for the top of a git working tree, 'bare' for a bare repository (a mirror), else 'plain'."""
    if not (source / ".git").exists() and not (source / "HEAD").is_file():
        return "plain"
    bare = git("rev-parse", "--is-bare-repository", cwd=source, check=False, timeout=_SOURCE_ASK_S)
    if bare.returncode != 0:
        return "plain"
    if _out(bare) == "true":
        return "bare"
    top = git("rev-parse", "--show-toplevel", cwd=source, check=False, timeout=_SOURCE_ASK_S)
    return "work" if top.returncode == 0 and Path(_out(top)).resolve() == source else "plain"


def _resolve_commit(source: Path, rev: str) -> str:
    proc = git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", cwd=source, check=False,
               timeout=_SOURCE_ASK_S)
    if proc.returncode != 0:
        raise WorkspaceError(f"base_commit {rev!r} is not a commit in {source}")
    return _out(proc)


def _from_git(source: Path, path: Path, base_commit: str | None, *, bare: bool) -> Workspace:
    if base_commit is None and git("rev-parse", "--verify", "--quiet", "HEAD", cwd=source, check=False,
                                   timeout=_SOURCE_ASK_S).returncode:
        raise WorkspaceError(f"{source} has no commit yet: commit something, or give base_commit")
    commit = _resolve_commit(source, base_commit or "HEAD")
    git("clone", "--quiet", "--shared", "--no-checkout", "--", str(source), str(path), cwd=path.parent,
        timeout=_SOURCE_WALK_S)
    git("update-ref", "--no-deref", "HEAD", commit, cwd=path)  # detached at the commit
    # The walk that finds the later tags reads refs and history, the checkout writes the tree and the index: they
    # run at once (the walk is 0.1-0.2 s of a repository with hundreds of tags: pytest's 224).
    with ThreadPoolExecutor(1, thread_name_prefix="codebox-tags") as walk:
        dropped = walk.submit(_drop_later_tags, path)
        if base_commit is None and not bare:
            dirty = _take_worktree(source, path, commit)
        else:
            git("read-tree", "--reset", "-u", commit, cwd=path, on_unencodable=_keep_raw)
            dirty = False
        dropped.result()
    submodules.fill(git, source, bare, path, _SOURCE_WALK_S)
    base = commit
    if dirty:
        git("commit", "--quiet", "--no-verify", "-m", "codebox base: HEAD plus uncommitted changes", cwd=path,
            env=dated_as(commit, path))
        base = _out(git("rev-parse", "HEAD", cwd=path))
    return Workspace(path=path, source=source, base_commit=base, source_commit=commit, dirty=dirty)


def _drop_later_tags(path: Path) -> None:
    """Remove the workspace's tags its commit cannot reach: later releases. A version read from the
    highest tag (agent.env.install.project.highest_tag) is then the base's own, as `git describe` says, not
    a later one (cattrs at a 2025-06 base was built as 26.1.0)."""
    later = _out(git("for-each-ref", "--no-merged=HEAD", "--format=%(refname)", "refs/tags", cwd=path))
    if later:
        deletes = "".join(f"delete {ref}\n" for ref in later.splitlines())
        git("update-ref", "--stdin", cwd=path, stdin=deletes.encode(errors="surrogateescape"))


def _take_worktree(source: Path, path: Path, commit: str) -> bool:
    """The user's files as they are on disk (tracked, and untracked but not ignored) over an index
    at ``commit``; True when they differ from it (then they are staged for the base commit).

    The files are copied, not re-made from git objects: git runs nothing in the user's tree but
    `ls-files` (no clean filter, no textconv, no fsmonitor of a config the repo may have brought),
    and the workspace holds the bytes the user sees.
    """
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=source,
                 timeout=_SOURCE_WALK_S).stdout
    files: list[str] = []
    linked = _LinkedFolders(source)
    for name in dict.fromkeys(n for n in listed.decode(errors="surrogateescape").split("\0") if n):
        origin = source / name
        if linked.lead_to(name):
            continue  # beyond a symbolic link (an index that names d/f where d is a link): deleted, as git sees it
        if origin.is_dir() and not origin.is_symlink():
            (path / name).mkdir(parents=True, exist_ok=True)  # a submodule: unpopulated, as a checkout leaves it
        elif os.path.lexists(origin):  # a file deleted in the user's tree is deleted in the base too
            files.append(name)
    _copy_files(source, files, path)
    git("read-tree", commit, cwd=path)
    # Hash-only first: unchanged files get their stat data without a blob being written (a write
    # of a blob the user's store has would touch that object's mtime through the alternates).
    git("update-index", "-q", "--refresh", cwd=path, check=False, on_unencodable=_keep_raw)
    stage_all(path)
    return git("diff", "--cached", "--quiet", commit, "--", cwd=path, check=False).returncode == 1


class _LinkedFolders:
    """Whether a path's folders in ``source`` include a symbolic link (each folder looked at once).

    A repository that arrives with its .git (a tarball, a shared folder) may list ``d/id_rsa`` in
    its index while ``d`` is a link to ``../../.ssh``: the copy would follow it and bring a file
    from outside the repository into the workspace, where the sandbox and the model read it."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.seen: dict[str, bool] = {}

    def lead_to(self, name: str) -> bool:
        folder = os.path.dirname(name)
        if not folder:
            return False
        if folder not in self.seen:
            self.seen[folder] = self.lead_to(folder) or (self.source / folder).is_symlink()
        return self.seen[folder]


def _copy_files(source: Path, names: list[str], dest: Path) -> None:
    """Copy source/<name> to dest/<name> for every name, bytes, modes and times kept (one cp per
    few thousand files: ~2x a Python loop)."""
    if not names:
        return
    listing = "\0".join(names).encode(errors="surrogateescape")
    command = ["xargs", "-0", "cp", "-a", "--reflink=auto", "--parents", "-t", str(dest), "--"]
    proc = subprocess.run(command, cwd=source, input=listing, capture_output=True)
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        raise WorkspaceError(f"copying the files of {source} failed: {message[0] if message else proc.returncode}")


def stage_all(path: Path) -> None:
    """`git add -A` in a workspace: every change staged, new and deleted files included."""
    git("add", "-A", "--", ".", cwd=path, on_unencodable=_keep_raw)


_UNENCODABLE = re.compile(r"failed to encode '(.+?)' from \S+ to ")


def _keep_raw(path: Path, names: list[str]) -> None:
    """Files whose working-tree-encoding git cannot apply (an unknown encoding name, as in
    sphinx) are taken as their bytes, in the workspace's own attributes: else git refuses
    every `git add`. Every other file is converted as a normal checkout converts it."""
    _write_info_attributes(path, [f"{_quoted(name)} -working-tree-encoding" for name in names])


def _quoted(name: str) -> str:
    escaped = "".join("\\" + c if c in '\\"*?[' else c for c in name)
    return f'"{escaped}"'


def _write_info_attributes(path: Path, lines: list[str]) -> None:
    info = path / ".git" / "info"
    info.mkdir(parents=True, exist_ok=True)
    with (info / "attributes").open("a", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def _from_folder(source: Path, path: Path) -> Workspace:
    # Everything but a .git of its own: git found no work tree here, and a .git that came with the
    # folder (a tarball, a shared folder) would be the workspace's, its config and links honoured by
    # every git call on the host (a FIFO config hung it; a linked info/attributes was appended to).
    names = sorted(name for name in os.listdir(source) if name != ".git")
    listing = "\0".join(names).encode(errors="surrogateescape")
    command = ["xargs", "-0", "-r", "cp", "--reflink=auto", "-a", "-t", str(path), "--"]
    proc = subprocess.run(command, cwd=source, input=listing, capture_output=True)
    if proc.returncode != 0:
        raise WorkspaceError(f"copying {source} failed: {proc.stderr.decode(errors='replace').strip()}")
    # A git of its own, in the copy only, so the patch out is computed the same way as for a clone.
    git("init", "--quiet", cwd=path)
    # The folder's bytes are the base: no line-ending, encoding or filter conversion on the way in.
    _write_info_attributes(path, ["* -text -working-tree-encoding -filter -ident"])
    stage_all(path)
    git("commit", "--quiet", "--no-verify", "--allow-empty", "-m", "codebox base: a copy of the folder", cwd=path)
    base = _out(git("rev-parse", "HEAD", cwd=path))
    return Workspace(path=path, source=source, base_commit=base, source_commit=None, dirty=False)


def with_patch(report: Report, workspace: Workspace, repo: str) -> tuple[Report, str]:
    """The report of a run in ``workspace`` as the user reads it (their repo path, the base, the
    patch summary) and the patch text. The workspace is the truth about what changed: a write
    that landed while the run was being stopped is in the patch and in files_changed."""
    update: dict[str, object] = {"repo": repo, "base_commit": workspace.source_commit, "base_dirty": workspace.dirty}
    try:
        patch, summary = workspace.patch(), workspace.summary()
    except WorkspaceError as exc:
        update.update(status="error", stop_reason="sandbox_error", error=f"the patch could not be read: {exc}")
        return report.model_copy(update=update), ""
    update["patch"] = summary
    update["files_changed"] = report.files_changed + [f for f in summary.files if f not in report.files_changed]
    return report.model_copy(update=update), patch


@contextlib.contextmanager
def repo_write_lock(repo: Path) -> Iterator[None]:
    """One writing run at a time on one working tree, across processes; WorkspaceError if taken.

    The lock file lives outside the repo (nothing is written there), keyed by the repo's real
    path; the kernel drops the lock when the process ends, however it ends.
    """
    real = str(repo.expanduser().resolve())
    folder = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / f"codebox-locks-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / (hashlib.sha256(real.encode()).hexdigest()[:32] + ".lock")
    with path.open("a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise WorkspaceError(
                f"another codebox run ({holder}) is writing to {real}; wait for it to end, "
                "or run this one with --isolated (it works on a copy)"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
