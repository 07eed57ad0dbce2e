"""Where a dataset's `repo` is on this machine: `owner/name` under --repos DIR, or a folder inside --repos or
inside the dataset file's own folder; and its commits.

Datasets name repositories as GitHub does (``django/django``); codebox never clones from the
network, so ``--repos DIR`` holds them: ``DIR/owner/name`` or ``DIR/owner__name`` (SWE-bench's
instance-id spelling), each a clone or a bare mirror (``.git`` suffixes too). A line is data: its
``repo`` never names a folder elsewhere (``"."``, ``/home/me/project``, a link out): a relative
folder is read from the dataset's folder (or --repos), and the folder found, links resolved, must
be strictly inside one of the two.
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
    """``repo`` values to local paths, each looked up once; RepoNotFound says why not.

    ``dataset_dir``: the dataset file's folder (a folder inside it may be a line's repository)."""

    def __init__(self, repos_dir: Path | None, dataset_dir: Path | None = None) -> None:
        self.repos_dir = repos_dir
        self.roots = [r.resolve() for r in (repos_dir, dataset_dir) if r is not None]
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
        owner_name = _OWNER_NAME.fullmatch(repo) is not None and not repo.startswith(("./", "../", "."))
        if owner_name and self.repos_dir is not None:
            for path in candidates(repo, self.repos_dir):
                if is_repository(path):
                    return path.resolve()
        folder = self._folder(repo)
        if folder is not None:
            return folder
        if owner_name and self.repos_dir is None:
            raise RepoNotFound(f"repo {repo!r} is not here: pass --repos DIR with a clone at "
                               f"DIR/{repo} or DIR/{repo.replace('/', '__')}")
        if owner_name:
            assert self.repos_dir is not None
            raise RepoNotFound(f"repo {repo!r}: no clone at {self.repos_dir / repo} or "
                               f"{self.repos_dir / repo.replace('/', '__')} (git clone --mirror "
                               f"https://github.com/{repo} {self.repos_dir / repo.replace('/', '__')})")
        where = " or ".join(str(r) for r in self.roots) or "--repos"
        raise RepoNotFound(f"repo {repo!r} is not owner/name under --repos nor a folder inside {where}: "
                           "a dataset line names its repository, it does not choose a folder")

    def _folder(self, repo: str) -> Path | None:
        """The folder ``repo`` names when it is one strictly inside --repos or the dataset's folder."""
        given = Path(repo).expanduser()
        tries = [given] if given.is_absolute() else [root / given for root in self.roots]
        for path in tries:
            if not path.is_dir():
                continue
            real = path.resolve()
            if any(real != root and real.is_relative_to(root) for root in self.roots):
                return real
        return None


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
