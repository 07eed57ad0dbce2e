"""The mistakes in a `codebox run` that the standard library alone can find: checked before the
run's early container starts, so a wrong --repo or a missing model key is one line and exit 2.

No pydantic, no Docker client, no OpenAI SDK here (`codebox run` launches its container before
it imports those); each check returns the message a person reads, or None.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import urlparse

from agent.escape import one_line

OPENAI_HOST = "api.openai.com"
WRITING_POLICIES = ("workspace-write", "ask")


def repo_problem(repo: str) -> str | None:
    """--repo must name a folder that exists."""
    path = Path(repo).expanduser()
    shown = one_line(repo, 200)
    if not path.exists():
        return f"--repo {shown}: no such folder"
    if not path.is_dir():
        return f"--repo {shown} is a file, not a folder: give the repository's folder"
    return None


def _writable_by(st: os.stat_result, uid: int, gid: int) -> bool:
    """Can uid:gid create and replace files in a folder with this stat, by its mode bits alone?

    Even uid 0: the sandbox drops every capability, CAP_DAC_OVERRIDE included.
    """
    if st.st_uid == uid:
        bits = stat.S_IWUSR | stat.S_IXUSR
    elif st.st_gid == gid:
        bits = stat.S_IWGRP | stat.S_IXGRP
    else:
        bits = stat.S_IWOTH | stat.S_IXOTH
    return st.st_mode & bits == bits


def read_only_problem(repo: str, policy: str, writer: str | None = None) -> str | None:
    """A writing policy on a repository the sandbox's writer cannot write: every patch would fail
    ("Permission denied"), so the run is refused before the model is asked.

    The write container runs as the repository's owner (``writer``, "uid:gid", when another one
    is configured); a read-only file system refuses everyone.
    """
    if policy not in WRITING_POLICIES:
        return None
    path = Path(repo).expanduser()
    try:
        st = path.stat()
        read_only_fs = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return None  # repo_problem says what is wrong with it
    uid, gid = st.st_uid, st.st_gid
    if writer:
        who, _, group = writer.partition(":")
        if who.isdigit():
            uid, gid = int(who), int(group) if group.isdigit() else gid
    shown = one_line(repo, 200)
    if read_only_fs:
        return f"--policy {policy}: the repository {shown} is on a read-only file system: use --isolated, " \
               "or --policy read-only"
    if not _writable_by(st, uid, gid):
        return (
            f"--policy {policy}: the repository {shown} is not writable by its owner "
            f"(uid {uid}, mode {stat.S_IMODE(st.st_mode):o}), the user the sandbox writes as: every patch "
            "would fail. chmod u+w it, use --isolated (a private copy), or --policy read-only"
        )
    return None


def _uses_openai(base_url: str | None) -> bool:
    url = base_url or os.environ.get("OPENAI_BASE_URL") or ""
    return not url or (urlparse(url).hostname or "").lower() == OPENAI_HOST


def model_problem(spec: str | None, api_key_env: str, base_url: str | None) -> str | None:
    """A model is named, a script file exists, and OpenAI's own endpoint has a key."""
    if not spec:
        return "no model given: pass --model NAME (or scripted:FILE), or set CODEBOX_MODEL"
    if spec.startswith("scripted:"):
        script = spec.removeprefix("scripted:")
        path = Path(script).expanduser()
        if not path.exists():
            return f"--model {one_line(spec, 200)}: no such file"
        if not path.is_file():
            return f"--model {one_line(spec, 200)}: not a file"
        return None
    if _uses_openai(base_url) and not os.environ.get(api_key_env, "").strip():
        return (
            f"no API key: set {api_key_env} (or name another variable with --api-key-env), "
            "or use --base-url to point at a local OpenAI-compatible server"
        )
    return None
