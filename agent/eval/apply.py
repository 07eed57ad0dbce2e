"""SWE-bench's way of putting a patch in: its apply chain, and the test files reset to the base first.

The chain is SWE-bench 5.x's (swebench/harness/run_evaluation.py, GIT_APPLY_CMDS): `git apply
--verbose`, `--3way`, `--reject`, then GNU `patch --batch --forward --fuzz=5 -p1`, the tree put
back to the base between two tries, and at the end a patch that is already in (`git apply
--check --reverse`) counts as applied. It runs on the host in the instance's private
workspace: git never writes beyond a symbolic link, and GNU patch gets only a unified diff
(``--unified``: no ed script) whose paths stay inside the workspace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from agent.eval.diffs import touched_paths
from agent.eval.job import ApplyRecord
from agent.task.workspace import git

GIT_CHAIN = (
    ("git apply --verbose", ["apply", "--verbose"]),
    ("git apply --verbose --3way", ["apply", "--verbose", "--3way"]),
    ("git apply --verbose --reject", ["apply", "--verbose", "--reject"]),
)
GNU_PATCH = "patch --batch --forward --fuzz=5 -p1 -i"
REVERSE_CHECK = "git apply --check --reverse"
_OUTPUT_CHARS = 4000


def apply_patch(workspace: Path, patch: str) -> ApplyRecord:
    """Apply ``patch`` to the workspace at its HEAD the way SWE-bench's harness does; the tree is
    left at HEAD when nothing applied."""
    data = _patch_bytes(patch)
    record = ApplyRecord()
    for index, (name, args) in enumerate(GIT_CHAIN):
        if index:
            reset_tree(workspace)
        proc = git(*args, "-", cwd=workspace, stdin=data, check=False)
        if proc.returncode == 0:
            record.command, record.output = name, _text(proc)[:_OUTPUT_CHARS]
            return record
        record.tried.append(f"{name}: {_first_error(proc)}")
        record.output = _text(proc)[:_OUTPUT_CHARS]
    reset_tree(workspace)
    gnu = _gnu_patch(workspace, data, patch)
    if gnu is not None:
        ok, words = gnu
        if ok:
            record.command, record.output = GNU_PATCH, words[:_OUTPUT_CHARS]
            return record
        record.tried.append(f"{GNU_PATCH}: {_first_line(words)}")
        record.output = words[:_OUTPUT_CHARS]
        reset_tree(workspace)
    if git("apply", "--check", "--reverse", "-", cwd=workspace, stdin=data, check=False).returncode == 0:
        record.command = f"{REVERSE_CHECK} (already applied)"
    return record


def reset_tree(workspace: Path) -> None:
    """The workspace's files back to its HEAD; whatever a failed try left (.rej, .orig, new files) removed."""
    git("reset", "--quiet", "--hard", "HEAD", cwd=workspace)
    git("clean", "-qfdx", cwd=workspace)


def reset_to_base(workspace: Path, base: str, touched: list[str]) -> list[str]:
    """Every path of ``touched`` (what the test patch changes, as git reads it) back to the base commit:
    restored when the base has it, removed when it does not (so a model cannot pre-empt a file the test
    patch creates). Returns the paths."""
    paths = [p for p in touched if _inside(workspace, p)]
    if not paths:
        return []
    listing = git("ls-tree", "-r", "-z", "--name-only", base, "--", *[f":(literal){p}" for p in paths],
                  cwd=workspace).stdout.decode(errors="surrogateescape")
    in_base = [p for p in listing.split("\0") if p]
    for chunk in _chunks(in_base, 200):
        git("checkout", base, "--", *[f":(literal){p}" for p in chunk], cwd=workspace)
    for path in paths:
        if path not in in_base:
            target = workspace / path
            if target.is_symlink() or target.is_file():
                target.unlink()
    return paths


def _gnu_patch(workspace: Path, data: bytes, patch: str) -> tuple[bool, str] | None:
    """(applied, its output) from GNU patch; None when there is no `patch` here or the diff's paths
    would leave the workspace (then the step is not tried)."""
    program = shutil.which("patch")
    if program is None or not all(_inside(workspace, p) for p in touched_paths(patch)):
        return None
    with tempfile.NamedTemporaryFile(prefix="codebox-patch-", suffix=".diff") as handle:
        handle.write(data)
        handle.flush()
        command = [program, "--batch", "--forward", "--fuzz=5", "-p1", "--unified", "--no-backup-if-mismatch",
                   "-i", handle.name]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}  # not the user's PATCH_* settings
        try:
            proc = subprocess.run(command, cwd=workspace, capture_output=True, env=env, timeout=120,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, str(exc)
    words = (proc.stdout + proc.stderr).decode(errors="replace")
    return proc.returncode == 0, words


def _inside(workspace: Path, path: str) -> bool:
    """A relative path with no `..` whose folders are not symbolic links (it cannot leave the workspace)."""
    parts = Path(path).parts
    if not parts or Path(path).is_absolute() or ".." in parts or ".git" in parts:
        return False
    folder = workspace
    for part in parts[:-1]:
        folder = folder / part
        if folder.is_symlink():
            return False
    return True


def _patch_bytes(patch: str) -> bytes:
    data = patch.encode("utf-8", errors="surrogateescape")
    return data if data.endswith(b"\n") else data + b"\n"


def _text(proc: subprocess.CompletedProcess[bytes]) -> str:
    return (proc.stdout + proc.stderr).decode(errors="replace")


def _first_error(proc: subprocess.CompletedProcess[bytes]) -> str:
    lines = [line for line in proc.stderr.decode(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("error:", "fatal:"))]
    return (errors or lines or [f"exit {proc.returncode}"])[0]


def _first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    failed = [line for line in lines if "FAILED" in line or "rror" in line or "malformed" in line]
    return (failed or lines or ["failed"])[0]


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i:i + size] for i in range(0, len(items), size)]
