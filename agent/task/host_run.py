"""Files the host runs by itself (git hooks, direnv, editor tasks): denied to writes unless allowed by name.

A patch to `.husky/pre-commit` or `.envrc` is code that runs on the user's machine, outside the
sandbox, the next time they commit or cd into the repository. Under workspace-write these paths
are refused unless an allow rule names them explicitly (see ``explicitly_allowed``).
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

from agent.task.globs import normalize

# Globs, repository-relative. `.git/**` is never writable at all (agent.task.policy.path_problem).
HOST_RUN_GLOBS: tuple[str, ...] = (
    ".git/**",
    ".husky/**",
    ".githooks/**",
    "**/.envrc",  # direnv runs the .envrc of any directory the user cd's into
    "**/.vscode/**",  # an editor opened on a subfolder reads its tasks and settings too
    "**/.idea/**",
    ".pre-commit-config.yaml",
)

# What git runs from a hooks directory (githooks(5)); used when core.hooksPath is the root itself.
GIT_HOOK_NAMES: tuple[str, ...] = (
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
)

HOST_RUN_HELP = (
    "Files the host runs by itself are denied unless an --allow names them explicitly "
    "(e.g. --allow '.husky/**'; '**' does not count): "
    + ", ".join(g for g in HOST_RUN_GLOBS if g != ".git/**")
    + ", the directory core.hooksPath names (git config: the repo's, the user's, the system's) and a git "
    "directory kept inside the tree; .git/** is never writable."
)

_MAX_CONFIG_BYTES = 1 << 20
_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"[^"]*")?\s*\]\s*(.*)$')
_ENTRY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


def git_dir(repo: Path) -> Path | None:
    """The repository's git directory: .git, or where a `.git` file (`gitdir: ...`) points."""
    dot_git = repo / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        with dot_git.open("rb") as f:
            text = f.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    lines = text[len("gitdir:") :].strip().splitlines()
    if not lines:
        return None
    gitdir = Path(lines[0].strip())
    return gitdir if gitdir.is_absolute() else repo / gitdir


def _git_config_files(repo: Path) -> list[Path]:
    """Where a core.hooksPath that applies to this repository can be set: the system and the
    user's config (a relative hooksPath there points into every repository), then the
    repository's own (and a linked worktree's common and per-worktree config)."""
    home = Path.home()
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    files = [Path("/etc/gitconfig"), xdg / "git" / "config", home / ".gitconfig"]
    gitdir = git_dir(repo)
    if gitdir is None:
        return files
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        common = ""
    if common:
        files.append((Path(common) if Path(common).is_absolute() else gitdir / common) / "config")
    return [*files, gitdir / "config", gitdir / "config.worktree"]


def _git_dir_globs(repo: Path) -> list[str]:
    """A git directory kept inside the working tree under another name (`.git` is a file
    saying `gitdir: .gd`) holds hooks too."""
    gitdir = git_dir(repo)
    if gitdir is None or gitdir == repo / ".git":
        return []
    try:
        rel = os.path.relpath(gitdir.resolve(), repo.resolve())
    except (OSError, ValueError):
        return []
    if rel == "." or rel.startswith(".."):
        return []
    return [rel.replace(os.sep, "/") + "/**"]


def _unquote(value: str) -> str:
    """A git config value: inline comments dropped, double quotes removed, simple escapes read."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(value):
        c = value[i]
        if c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        elif c == "\\" and i + 1 < len(value):
            i += 1
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(value[i], value[i]))
        else:
            out.append(c)
        i += 1
    return "".join(out).strip()


def hooks_paths(repo: Path) -> list[str]:
    """Every core.hooksPath value set in a config that applies to the repository, as written
    (read statically: no git runs on the host against an untrusted repository; `include`
    and `includeIf` are not followed)."""
    found: list[str] = []
    for config in _git_config_files(repo):
        try:
            with config.open("rb") as f:
                text = f.read(_MAX_CONFIG_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        section = ""
        for line in text.splitlines():
            stripped = line.strip()
            if not stripped or stripped[0] in "#;":
                continue
            head = _SECTION.match(stripped)
            if head:
                section = head.group(1).lower()
                stripped = head.group(2).strip()  # `[core] hooksPath = x` on one line
                if not stripped:
                    continue
            entry = _ENTRY.match(stripped)
            if section == "core" and entry and entry.group(1).lower() == "hookspath" and entry.group(2):
                found.append(_unquote(entry.group(2)))
    return found


def hooks_path_globs(repo: Path, value: str) -> list[str]:
    """The globs that cover a core.hooksPath inside the repository (none if it lies outside)."""
    if value.startswith("~"):
        return []  # the user's home: outside the repository, apply_patch cannot reach it
    path = value
    if posixpath.isabs(path):
        try:
            path = str(Path(path).relative_to(repo.resolve()))
        except ValueError:
            try:
                path = str(Path(path).relative_to(repo))
            except ValueError:
                return []
    path = posixpath.normpath(path.replace("\\", "/"))
    if path.startswith("../") or path == "..":
        return []
    if path in (".", ""):
        return list(GIT_HOOK_NAMES)  # the root itself: its hook-named files
    return [path.rstrip("/") + "/**"]


def host_run_globs(repo: Path | None) -> list[str]:
    """The default-denied globs for this repository: the fixed list plus its core.hooksPath."""
    globs = list(HOST_RUN_GLOBS)
    if repo is not None:
        for value in hooks_paths(repo):
            globs += [g for g in hooks_path_globs(repo, value) if g not in globs]
        globs += [g for g in _git_dir_globs(repo) if g not in globs]
    return globs


def _literal_head(pattern: str) -> str:
    """The leading part of a glob before its first wildcard, without a trailing slash."""
    return re.split(r"[*?\[]", normalize(pattern), maxsplit=1)[0].rstrip("/")


def names_explicitly(rule: str, protected: str) -> bool:
    """An allow rule names a protected area explicitly when its literal head lies inside it:
    `.husky/**` or `.husky/pre-commit` name `.husky/**`; `**`, `.*/**` or `src/**` do not.
    An area at any depth (`**/.envrc`) is named by a head that ends in it (`sub/.envrc`)."""
    if normalize(rule).lower() == normalize(protected).lower():
        return True
    anywhere = normalize(protected).startswith("**/")
    area = _literal_head(normalize(protected).removeprefix("**/")).lower()
    head = _literal_head(rule).lower()
    if not (area and head):
        return False
    if head == area or head.startswith(area + "/"):
        return True
    return anywhere and (head.endswith("/" + area) or f"/{area}/" in head)
