"""run_test {argv | shell, timeout_s?, env?, copy_repo?, cwd?, report_file?}

Runs a command with NO shell (``argv``; ``shell`` only when the server runs
with --allow-shell), in its own session and process group, stdin /dev/null,
stdout and stderr on their own pipes read concurrently into bounded head+tail
captures. Every run starts clean: HOME and TMPDIR are two fresh, empty
directories made for this run (XDG_CACHE_HOME, HYPOTHESIS_STORAGE_DIRECTORY,
RUFF_CACHE_DIR and COVERAGE_FILE under that HOME) and removed after it,
PYTHONNOUSERSITE=1 (no user site, no usercustomize), and with
``--wipe-tmp`` (given only in a container, and honoured only when /tmp is a
tmpfs mount of its own) everything in /tmp and /dev/shm is removed before and
after each run, so nothing one run writes can change the next, but BUILD_CACHE
(/tmp/codebox-cache: cargo's target directory, Go's build cache). Also
PYTHONDONTWRITEBYTECODE=1, PYTEST_ADDOPTS="-p no:cacheprovider" (``env``
overrides all of these), and the server's own package directory removed from
PYTHONPATH.

At the deadline: SIGTERM to the group and to every process the test started,
SIGTERM_GRACE_S to exit (output still read), then SIGKILL. After EVERY run,
timeout or not, leftovers are found in /proc and SIGKILLed, then reaped:

- host mode (default): descendants of the server (the server is a child
  subreaper, so double-forked orphans stay its descendants) and any process in
  the test's session or process group;
- ``--reap-all`` (in a container that the server owns): every process except
  the server, its ancestors and processes of other uids. Honoured only when no
  kernel thread is visible in /proc (i.e. not in the host's pid namespace).

``report_file`` (a path under /tmp) is a file the command writes, e.g. pytest's
``--junitxml``: after the run its text comes back in data["report_file_text"]
(at most REPORT_FILE_LIMIT bytes; else data["report_file_error"] says why not).

Outcomes: ok (exit 0), failed (non-zero exit or a signal), timeout, oom (the
cgroup's oom_kill counter rose during the run: "confirmed"; or the command died
of SIGKILL with no timeout and no counter to read: "suspected"), error (the
command could not be started: not found, not executable, bad cwd).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import signal
import stat
import subprocess
import time

from sandbox.tools import (
    Context,
    ToolError,
    ToolResult,
    check_names,
    opt_bool,
    opt_float,
    opt_str,
    opt_str_dict,
    opt_str_list,
)
from sandbox.tools.lean_shutil import mkdtemp, rmtree
from sandbox.tools.output import HeadTail
from sandbox.tools.paths import display, find
from sandbox.tools.processes import Reaper, oom_kill_count
from sandbox.tools.procs import tmpfs_mounts

# Not `from typing import ...` at run time: typing was a tenth of a first run_test's imports.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any, Mapping, Optional

DEFAULT_TIMEOUT_S = 300.0
MAX_TIMEOUT_S = 24 * 3600.0
SIGTERM_GRACE_S = 1.0
LEFTOVER_GRACE_S = 0.2  # after the command exits, how long output from leftovers is still read
DRAIN_S = 0.5
MAX_KILLED_REPORTED = 50
CHUNK = 65536
REPORT_FILE_LIMIT = 2 * 1024 * 1024

# The directory that holds the `sandbox` package: removed from the child's PYTHONPATH.
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# State for shutdown() (the server calls it when its lifetime ends or on SIGTERM).
_current: Optional[tuple[subprocess.Popen[bytes], Reaper]] = None


def shutdown() -> None:
    cur = _current
    if cur is not None:
        proc, reaper = cur
        reaper.kill_all(proc, {})


# -- running ----------------------------------------------------------------------------


class _Pipes:
    def __init__(self, streams: list[tuple[IO[bytes], HeadTail]]) -> None:
        self.sel = selectors.DefaultSelector()
        self.open = 0
        for stream, cap in streams:
            fd = stream.fileno()
            os.set_blocking(fd, False)
            self.sel.register(fd, selectors.EVENT_READ, cap)
            self.open += 1

    def read_ready(self, timeout: float) -> None:
        if self.open == 0:
            time.sleep(max(0.0, timeout))
            return
        for key, _ in self.sel.select(max(0.0, timeout)):
            try:
                data = os.read(key.fd, CHUNK)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                key.data.feed(data)
            else:
                self.sel.unregister(key.fd)
                self.open -= 1

    def drain(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while self.open and time.monotonic() < end:
            self.read_ready(end - time.monotonic())

    def close(self) -> None:
        self.sel.close()


def _pump(proc: subprocess.Popen[bytes], pipes: _Pipes, deadline: float) -> bool:
    """Read output until the command is done (True) or the deadline (False).

    Done: exited and both pipes closed; or exited and LEFTOVER_GRACE_S passed
    while something it left behind still holds a pipe open.
    """
    exited_at: Optional[float] = None
    while True:
        now = time.monotonic()
        if proc.poll() is not None:
            if pipes.open == 0:
                return True
            if exited_at is None:
                exited_at = now
            elif now - exited_at >= LEFTOVER_GRACE_S:
                return True
        elif pipes.open == 0:
            try:
                proc.wait(timeout=max(0.0, deadline - now))
                return True
            except subprocess.TimeoutExpired:
                return False
        if now >= deadline:
            return False
        pipes.read_ready(min(deadline - now, 0.05 if exited_at is not None else 0.25))


def _child_env(extra: Optional[dict[str, str]], scratch: str) -> dict[str, str]:
    env = dict(os.environ)
    pp = env.get("PYTHONPATH")
    if pp is not None:
        kept = [p for p in pp.split(os.pathsep) if p and os.path.realpath(p) != PACKAGE_PARENT]
        if kept:
            env["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            del env["PYTHONPATH"]
    home = os.path.join(scratch, "home")
    env.update(
        HOME=home,
        TMPDIR=os.path.join(scratch, "tmp"),
        PYTHONNOUSERSITE="1",
        PYTHONDONTWRITEBYTECODE="1",
        PYTEST_ADDOPTS="-p no:cacheprovider",
        XDG_CACHE_HOME=os.path.join(home, ".cache"),
        # Hypothesis keeps its examples in .hypothesis/ under the working directory: in the
        # read-only /repo it warns, and a suite that turns warnings into errors (dateutil) fails.
        HYPOTHESIS_STORAGE_DIRECTORY=os.path.join(home, ".hypothesis"),
        # ruff keeps .ruff_cache/ there too, and stops when it cannot write it: pytest-ruff (in every
        # jaraco project's tests) failed each file's check in the read-only /repo.
        RUFF_CACHE_DIR=os.path.join(home, ".cache", "ruff"),
        # coverage.py's data file (pytest-cov under a project's addopts, or pytest-enabler): in the
        # read-only /repo, writing .coverage stopped pytest before any test ran (jaraco.vcs, inflect).
        COVERAGE_FILE=os.path.join(home, ".coverage"),
    )
    if extra:
        env.update(extra)
    return env


def _remove_tree(path: str) -> None:
    rmtree(path)
    if os.path.lexists(path):  # a test made something read-only: open it up and retry
        for dirpath, dirnames, _ in os.walk(path):
            for d in dirnames:
                with contextlib.suppress(OSError):
                    os.chmod(os.path.join(dirpath, d), 0o700)
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)
        rmtree(path)


def _make_scratch() -> str:
    """A fresh directory for one run, holding its HOME and its TMPDIR."""
    scratch = mkdtemp(prefix="codebox-test-")
    for sub in ("home", "tmp"):
        os.mkdir(os.path.join(scratch, sub), 0o700)
    return scratch


# What a test can write in the tool container (the root filesystem is read-only): emptied
# between runs with --wipe-tmp. /dev/shm is the engine's own writable tmpfs; Podman's read-only
# containers get writable tmpfs mounts at /var/tmp and /run too (its read-only-tmpfs default).
WIPED_MOUNTS = ("/tmp", "/dev/shm", "/var/tmp", "/run")
# The one thing a run leaves to the next: a compiler's build cache (cargo's target directory, Go's build
# cache), which an environment points there (agent/languages/*/env.py). Recompiling a crate's dependencies
# on every run would cost minutes; what a test writes anywhere else is still wiped.
BUILD_CACHE = "/tmp/codebox-cache"


def _wipe_scratch_mounts() -> None:
    """Empty the writable scratch mounts (each only if it is a tmpfs of its own): --wipe-tmp only."""
    mounts = tmpfs_mounts(also=("/dev/shm",))  # a container's /dev/shm is its own, whatever its type
    for path in WIPED_MOUNTS:
        if path in mounts:
            _wipe_tmp(path)


def _wipe_tmp(tmp_root: str) -> None:
    """Remove whatever is in the container's /tmp (a previous run's files, wherever it put them).
    Only with --wipe-tmp, which the server honours only on a private tmpfs: never a host's /tmp."""
    try:
        names = os.listdir(tmp_root)
    except OSError:
        return
    for name in names:
        path = os.path.join(tmp_root, name)
        if path == BUILD_CACHE and os.path.isdir(path) and not os.path.islink(path):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            _remove_tree(path)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _copy_repo(root: str) -> tuple[str, str, int]:
    """(temp dir to remove afterwards, the copy's root, files that could not be copied)."""
    import shutil  # only here: its imports (bz2, lzma ...) are a third of run_test's (lean_shutil)

    tmp = mkdtemp(prefix="codebox-run-")
    dest = os.path.join(tmp, os.path.basename(root.rstrip("/")) or "repo")

    def ignore(directory: str, names: list[str]) -> list[str]:
        if ".git" in names and os.path.realpath(directory) == root:
            return [".git"]
        return []

    errors = 0
    try:
        shutil.copytree(root, dest, symlinks=True, ignore=ignore)
    except shutil.Error as e:
        errors = len(e.args[0]) if e.args and isinstance(e.args[0], list) else 1
    except OSError as e:
        _remove_tree(tmp)
        raise ToolError(f"run_test: copying the repository failed: {e.strerror or e}") from None
    git = os.path.join(root, ".git")
    if os.path.isdir(git) and not os.access(git, os.W_OK):
        # The container's read-only .git mount, not copied: a git file points the copy's git commands
        # at it (jaraco.vcs's doctest reads its own checkout's version), and none can write it.
        with open(os.path.join(dest, ".git"), "w", encoding="utf-8") as f:
            f.write(f"gitdir: {git}\n")
    return tmp, dest, errors


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def run_test(ctx: Context, args: Mapping[str, Any], timeout_s: Optional[float]) -> ToolResult:
    tool = "run_test"
    check_names(tool, args, {"argv", "shell", "timeout_s", "env", "copy_repo", "cwd", "report_file"})
    argv = opt_str_list(tool, args, "argv")
    shell = opt_str(tool, args, "shell")
    if argv is not None and shell is not None:
        raise ToolError("run_test: give 'argv' or 'shell', not both")
    if shell is not None:
        if not ctx.allow_shell:
            raise ToolError(
                "run_test: shell commands are disabled on this server (no --allow-shell); "
                "send 'argv' (an array of strings) instead"
            )
        if not shell.strip():
            raise ToolError("run_test: 'shell' is empty")
        argv = ["/bin/sh", "-c", shell]
        command = shell
    else:
        if not argv:
            raise ToolError("run_test: missing 'argv' (a non-empty array of strings)")
        command = shlex.join(argv)
    if any("\x00" in a for a in argv):
        raise ToolError("run_test: an argument contains a NUL byte")
    limit = opt_float(tool, args, "timeout_s")
    if limit is None:
        limit = timeout_s if timeout_s else DEFAULT_TIMEOUT_S
    elif timeout_s:
        limit = min(limit, timeout_s)
    if limit <= 0:
        raise ToolError(f"run_test: timeout_s must be > 0, got {limit:g}")
    limit = min(limit, MAX_TIMEOUT_S)
    env = opt_str_dict(tool, args, "env")
    for k, v in (env or {}).items():
        if not k or "=" in k or "\x00" in k or "\x00" in v:
            raise ToolError(f"run_test: bad environment variable {k!r}")
    copy_repo = bool(opt_bool(tool, args, "copy_repo"))
    report_file = _report_path(opt_str(tool, args, "report_file"))
    cwd = find(ctx.root, opt_str(tool, args, "cwd") or ".", ctx.root_fd())
    if cwd.st is None or not stat.S_ISDIR(cwd.st.st_mode):
        raise ToolError(f"run_test: cwd {display(cwd.rel)!r} is not a directory")

    start = time.monotonic()
    tmp: Optional[str] = None
    data: dict[str, Any] = {"command": command}
    if ctx.wipe_tmp:
        _wipe_scratch_mounts()  # the container's own tmpfs (checked at start): nobody else's files
    scratch = _make_scratch()
    try:
        workdir = cwd.abs
        if copy_repo:
            tmp, copy_root, errors = _copy_repo(ctx.root)
            workdir = copy_root if cwd.rel == "." else os.path.join(copy_root, cwd.rel)
            data["copy_dir"] = copy_root
            data["copy_s"] = round(time.monotonic() - start, 3)
            if errors:
                data["copy_errors"] = errors
        result = _run(ctx, argv, command, workdir, env, scratch, start, start + limit, limit, data)
        if report_file is not None:  # read before the scratch space and /tmp are wiped below
            _read_report_file(report_file, data)
        return result
    finally:
        if tmp is not None:
            _remove_tree(tmp)
        _remove_tree(scratch)
        if ctx.wipe_tmp:
            _wipe_scratch_mounts()


def _report_path(path: Optional[str]) -> Optional[str]:
    if path is None:
        return None
    norm = os.path.normpath(path)
    if not norm.startswith("/tmp/") or "\x00" in norm:
        raise ToolError(f"run_test: report_file must be a path under /tmp, got {path!r}")
    return norm


def _read_report_file(path: str, data: dict[str, Any]) -> None:
    """The file's text into data (never following a symlink, never more than the limit)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as e:
        data["report_file_error"] = f"{path}: {e.strerror or e}"
        return
    with os.fdopen(fd, "rb") as f:
        raw = f.read(REPORT_FILE_LIMIT + 1)
    if len(raw) > REPORT_FILE_LIMIT:
        data["report_file_error"] = f"{path} is larger than {REPORT_FILE_LIMIT} bytes"
        return
    data["report_file_text"] = raw.decode("utf-8", "replace")


def _run(
    ctx: Context,
    argv: list[str],
    command: str,
    workdir: str,
    env: Optional[dict[str, str]],
    scratch: str,
    start: float,
    deadline: float,
    limit: float,
    data: dict[str, Any],
) -> ToolResult:
    global _current
    reaper = Reaper(ctx.reap_all)
    oom_before = oom_kill_count()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=workdir,
            env=_child_env(env, scratch),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except FileNotFoundError:
        where = "no such file" if "/" in argv[0] else "not on PATH"
        raise ToolError(f"command not found: {argv[0]!r} ({where})", data=data) from None
    except PermissionError:
        raise ToolError(f"permission denied: cannot execute {argv[0]!r}", data=data) from None
    except OSError as e:
        raise ToolError(f"cannot start {argv[0]!r}: {e.strerror or e}", data=data) from None

    assert proc.stdout is not None and proc.stderr is not None
    out, err = HeadTail(ctx.output_limit), HeadTail(ctx.output_limit)
    pipes = _Pipes([(proc.stdout, out), (proc.stderr, err)])
    killed: dict[int, str] = {}
    timed_out = False
    cleaned = False
    _current = (proc, reaper)
    try:
        if not _pump(proc, pipes, deadline):
            timed_out = True
            reaper.terminate(proc, killed)
            _pump(proc, pipes, time.monotonic() + SIGTERM_GRACE_S)
        reaper.kill_all(proc, killed)
        proc.wait()
        cleaned = True
        pipes.drain(DRAIN_S)
    finally:
        if not cleaned:
            reaper.kill_all(proc, killed)
            proc.wait()
        pipes.close()
        proc.stdout.close()
        proc.stderr.close()
        _current = None
    duration = time.monotonic() - start
    return _result(command, proc.returncode, timed_out, limit, duration, out, err, killed, oom_before, data)


def _result(
    command: str,
    rc: int,
    timed_out: bool,
    limit: float,
    duration: float,
    out: HeadTail,
    err: HeadTail,
    killed: dict[int, str],
    oom_before: Optional[int],
    data: dict[str, Any],
) -> ToolResult:
    sig = -rc if rc < 0 else None
    oom_after = oom_kill_count()
    oom_delta = None if oom_before is None or oom_after is None else oom_after - oom_before
    oom: Optional[str] = None
    if timed_out:
        outcome = "timeout"
    elif rc == 0:
        outcome = "ok"
    elif oom_delta:
        outcome, oom = "oom", "confirmed"
    elif sig == signal.SIGKILL and oom_delta is None:
        outcome, oom = "oom", "suspected"
    else:
        outcome = "failed"

    if timed_out:
        status = f"timed out after {limit:g} s: the command and everything it started were killed"
        error = f"timed out after {limit:g} s"
    elif sig is not None:
        what = " (out of memory" + (")" if oom == "confirmed" else "?)") if oom else ""
        status = f"killed by {_signal_name(sig)}{what} after {duration:.2f} s"
        error = f"command killed by {_signal_name(sig)}" + (": out of memory" if oom else "")
    else:
        verdict = "passed" if rc == 0 else "failed"
        status = f"exit code {rc} ({verdict}) after {duration:.2f} s"
        error = f"command failed with exit code {rc}"

    parts = [f"$ {command}", status]
    cut_total = 0
    for name, cap in (("stdout", out), ("stderr", err)):
        if cap.total == 0:
            continue
        text, cut = cap.render()
        cut_total += cut
        head = f"--- {name} ({cap.total} bytes" + (f", {cut} cut" if cut else "") + ") ---"
        parts.append(head + "\n" + text.rstrip("\n"))
    if out.total == 0 and err.total == 0:
        parts.append("(no output)")
    items = list(killed.items())
    if items:
        shown = "; ".join(f"{pid} {cmd}" for pid, cmd in items[:10])
        more = f"; ... {len(items) - 10} more" if len(items) > 10 else ""
        parts.append(f"[killed {len(items)} process(es): {shown}{more}]")

    data.update(
        exit_code=rc if rc >= 0 else None,
        signal=_signal_name(sig) if sig is not None else None,
        duration_s=round(duration, 3),
        timed_out=timed_out,
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        bytes_cut=cut_total,
        killed=[{"pid": pid, "cmdline": cmd} for pid, cmd in items[:MAX_KILLED_REPORTED]],
        killed_count=len(items),
        oom=oom,
    )
    ok = outcome == "ok"
    return ToolResult(
        output="\n".join(parts),
        ok=ok,
        outcome=outcome,
        error=None if ok else error,
        data=data,
    )
