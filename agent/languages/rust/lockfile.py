"""A Cargo.lock for a repository that commits none, resolved on the host by the host's cargo in a scratch
copy of the repository's manifests and sources (never in the repository: nothing is written there), from a
directory that holds no .cargo/config.toml, with a CARGO_HOME of codebox's own. Resolution reads manifests
only: no build script, no rustc-wrapper, no repository code runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from agent.env.errors import EnvError
from agent.env.resolve.fetch import cache_dir

TIMEOUT_S = 300
_SKIPPED = {".git", "target", ".cargo"}


def generate(repo: Path) -> str:
    """The Cargo.lock text the host's cargo resolves for ``repo`` today; EnvError in one line when it cannot."""
    cargo = shutil.which("cargo")
    if cargo is None:
        raise EnvError("the repository has no Cargo.lock and this machine has no cargo to make one: commit a "
                       "Cargo.lock, or install cargo on the host", usage=True)
    home = cache_dir() / "cargo-home"  # the registry index cache only; codebox's, never the user's config
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="codebox-lock-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(repo, copy, symlinks=True, ignore=_ignore)
        env = {key: value for key, value in os.environ.items() if not key.startswith(("CARGO", "RUST"))}
        env.update(CARGO_HOME=str(home), CARGO_TERM_COLOR="never", CARGO_NET_GIT_FETCH_WITH_CLI="false")
        try:
            done = subprocess.run([cargo, "generate-lockfile", "--manifest-path", str(copy / "Cargo.toml")],
                                  cwd=tmp, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                                  stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired:
            raise EnvError(f"cargo generate-lockfile took over {TIMEOUT_S} s (is crates.io reachable?)") from None
        if done.returncode != 0:
            said = next((line for line in done.stderr.splitlines() if line.startswith("error")),
                        done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no output")
            raise EnvError(f"cargo generate-lockfile failed on the host: {said[:300]}")
        return (copy / "Cargo.lock").read_text(encoding="utf-8")


def _ignore(directory: str, names: list[str]) -> list[str]:
    return [name for name in names if name in _SKIPPED]
