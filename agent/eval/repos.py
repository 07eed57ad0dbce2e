"""Where a dataset's `repo` is on this machine: a folder, or `owner/name` under --repos DIR; and its commits.

Datasets name repositories as GitHub does (``django/django``); codebox never clones from the
network, so ``--repos DIR`` holds them: ``DIR/owner/name`` or ``DIR/owner__name`` (SWE-bench's
instance-id spelling), each a clone or a bare mirror (``.git`` suffixes too).
"""

from __future__ import annotations

import re
from pathlib import Path

from agent.task.workspace import git

_OWNER_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


class RepoNotFound(Exception):
    """The one-line reason a line's repository is not here, with what to do."""


def candidates(repo: str, repos_dir: Path) -> list[Path]:
    """Where ``owner/name`` may be under ``repos_dir``, in the order they are tried."""
    owner, name = repo.split("/", 1)
    flat = f"{owner}__{name}"
    return [repos_dir / owner / name, repos_dir / flat, repos_dir / owner / f"{name}.git", repos_dir / f"{flat}.git"]


def is_repository(path: Path) -> bool:
    """A git working tree's top or a bare repository (a mirror)."""
    return path.is_dir() and ((path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir()))


class RepoResolver:
    """``repo`` values to local paths, each looked up once; RepoNotFound says why not."""

    def __init__(self, repos_dir: Path | None) -> None:
        self.repos_dir = repos_dir
        self._found: dict[str, Path | RepoNotFound] = {}

    def resolve(self, repo: str) -> Path:
        if repo not in self._found:
            try:
                self._found[repo] = self._resolve(repo)
            except RepoNotFound as exc:
                self._found[repo] = exc
        found = self._found[repo]
        if isinstance(found, RepoNotFound):
            raise found
        return found

    def _resolve(self, repo: str) -> Path:
        given = Path(repo).expanduser()
        if given.is_dir():
            return given.resolve()
        if not _OWNER_NAME.fullmatch(repo) or repo.startswith(("./", "../")):
            raise RepoNotFound(f"repo {repo!r} is not a directory")
        if self.repos_dir is None:
            raise RepoNotFound(f"repo {repo!r} is not a directory here: pass --repos DIR with a clone at "
                               f"DIR/{repo} or DIR/{repo.replace('/', '__')}")
        for path in candidates(repo, self.repos_dir):
            if is_repository(path):
                return path.resolve()
        raise RepoNotFound(f"repo {repo!r}: no clone at {self.repos_dir / repo} or "
                           f"{self.repos_dir / repo.replace('/', '__')} (git clone --mirror "
                           f"https://github.com/{repo} {self.repos_dir / repo.replace('/', '__')})")


def missing_commits(repo: Path, revisions: list[str]) -> set[str]:
    """The revisions that name no commit in ``repo`` (one `git cat-file --batch-check` for all)."""
    if not revisions:
        return set()
    wanted = list(dict.fromkeys(revisions))
    listing = "".join(f"{r}^{{commit}}\n" for r in wanted).encode()
    proc = git("cat-file", "--batch-check", cwd=repo, stdin=listing, check=False)
    answers = proc.stdout.decode(errors="replace").splitlines()
    if proc.returncode != 0 or len(answers) != len(wanted):
        return set(wanted)
    return {r for r, answer in zip(wanted, answers, strict=True) if answer.endswith(" missing")}


def branch_commit(repo: Path, branch: str) -> str | None:
    """The commit of the branch ``branch`` (a mirror's ``refs/heads``, a clone's ``origin/``): SWE-smith's
    instances live on a branch named for their instance_id."""
    for ref in (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}"):
        proc = git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", cwd=repo, check=False)
        if proc.returncode == 0:
            return proc.stdout.decode().strip()
    return None
