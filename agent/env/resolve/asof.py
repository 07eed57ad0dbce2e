"""Resolving "as of" a date: the versions a project's environment had on its day (uv's ``--exclude-newer``).

The date is the user's ``--as-of DATE|now``, else the later of a task's ``created_at`` and the committer
date of the commit it starts from, else that commit's date (``run``: HEAD). The later one, because a
dataset's ``created_at`` is when its issue or pull request was opened, and the base commit may come
weeks after it (pylint-7114: four weeks), its files pinning releases of the weeks between; resolved as of
``created_at`` those pins have no version at all. ``now`` resolves against today's
index; its cache key is today's date, so it is resolved again the next day. Commit dates are
read with ``git cat-file`` only: nothing of the repository's configuration runs.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from agent.env.errors import EnvError
from agent.env.read.gitread import read_git

NOW = "now"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_GIT_TIMEOUT_S = 30


def normalize(text: str, where: str = "--as-of") -> str:
    """``now``, or an RFC 3339 UTC timestamp (``2021-06-01T00:00:00Z``); EnvError (usage) otherwise."""
    value = text.strip()
    if value.lower() == NOW:
        return NOW
    try:
        if _DATE.match(value):
            moment = dt.datetime.fromisoformat(value).replace(tzinfo=dt.UTC) + dt.timedelta(days=1)
        else:
            moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T", 1))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.UTC)
    except ValueError:
        raise EnvError(f"{where} {text!r}: expected a date (2021-06-01), a timestamp "
                       "(2021-06-01T12:00:00Z) or now", usage=True) from None
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def exclude_newer(as_of: str) -> str | None:
    """What uv's ``--exclude-newer`` gets (None: no limit)."""
    return None if as_of == NOW else as_of


def cache_part(as_of: str) -> str:
    """What the cache key holds: the timestamp, or today's date for ``now``."""
    return f"now:{dt.datetime.now(dt.UTC).date()}" if as_of == NOW else as_of


def commit_date(repo: Path, rev: str = "HEAD") -> str | None:
    """The committer date of ``rev`` in ``repo`` (UTC, RFC 3339; a work tree or a bare mirror), or None when it is not
    a git repository or has no such commit."""
    if not (repo / ".git").exists() and not (repo / "objects").is_dir():  # neither a work tree nor a bare repository
        return None
    out = read_git(repo, "cat-file", "commit", f"{rev}^{{commit}}", timeout_s=_GIT_TIMEOUT_S)
    if out is None:
        return None
    for line in out.decode("utf-8", "replace").splitlines():
        if not line:
            break  # the headers end at the first empty line
        if line.startswith("committer "):
            match = re.search(r" (\d+) [+-]\d{4}$", line)
            if match:
                moment = dt.datetime.fromtimestamp(int(match.group(1)), dt.UTC)
                return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return None


def choose(flag: str | None, repo: Path, created_at: str | None = None, base_commit: str | None = None) -> str:
    """The as-of date of a task: the flag; else the later of its created_at and its base commit's date (HEAD's when
    it names none); else now."""
    if flag:
        return normalize(flag)
    committed = commit_date(repo, base_commit or "HEAD") if base_commit or not created_at else None
    if created_at:
        created = normalize(created_at, "the task's created_at")
        return max(created, committed) if committed else created  # both RFC 3339 UTC: ordered as text
    return committed or NOW
