"""The one way agent/env asks git about a repository: read-only, nothing of its configuration runs.

No fsmonitor hook, no optional index refresh (a plain `git status` may rewrite the user's
.git/index), no prompt, stdin closed, a deadline. Any failure is None: the callers have a
fallback (walk the folder, resolve as of now).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def read_git(repo: Path, *args: str, timeout_s: float) -> bytes | None:
    """git's stdout for ``git ARGS`` in ``repo``, or None when git is missing, fails or takes too long."""
    try:
        proc = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", *args],
            cwd=repo, capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None
