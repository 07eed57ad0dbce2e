"""A Go module's go.mod and vendor/modules.txt, read on the host, never run: the modules it requires, whether
they are vendored, and a replace directive that leads out of the repository (refused)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from agent.env.errors import EnvError
from agent.env.read.safe_read import inside, read_bytes

_REQUIRE_BLOCK = re.compile(r"^require\s*\((.*?)^\)", re.M | re.S)
_REQUIRE_LINE = re.compile(r"^require[ \t]+([^\s(]\S*)[ \t]+\S+", re.M)
_REPLACE_BLOCK = re.compile(r"^replace\s*\((.*?)^\)", re.M | re.S)
_REPLACE_LINE = re.compile(r"^replace\s+(.+)$", re.M)


def _text(repo: Path, relative: str) -> str | None:
    data = read_bytes(repo, relative)
    return None if data is None else data.decode("utf-8", "replace")


def requires(repo: Path) -> list[str]:
    """The module paths go.mod requires (direct and indirect)."""
    text = _text(repo, "go.mod") or ""
    found = _REQUIRE_LINE.findall(text)
    for block in _REQUIRE_BLOCK.findall(text):
        found += [line.split()[0] for line in block.splitlines() if line.strip() and not line.strip().startswith("//")]
    return found


def vendored(repo: Path) -> bool:
    return (repo / "vendor" / "modules.txt").is_file()


def missing_modules(repo: Path) -> list[str]:
    """Required modules that vendor/ does not hold (all of them when there is no vendor/)."""
    needed = requires(repo)
    if not needed:
        return []
    listed = _text(repo, "vendor/modules.txt") or ""
    have = {line.split()[1] for line in listed.splitlines() if line.startswith("# ") and len(line.split()) > 1}
    return [module for module in needed if module not in have]


def refusal(repo: Path) -> str | None:
    """Why codebox will not run this module (a replace directive to a path outside the repository), or None."""
    text = _text(repo, "go.mod") or ""
    lines = _REPLACE_LINE.findall(text)
    for block in _REPLACE_BLOCK.findall(text):
        lines += [line for line in block.splitlines() if line.strip() and not line.strip().startswith("//")]
    for line in lines:
        _, arrow, target = line.partition("=>")
        path = target.split()[0] if arrow and target.split() else ""
        if path.startswith(("./", "../", "/")) or path in (".", ".."):
            try:
                inside(repo, os.path.normpath(path))
            except EnvError:
                return (f"go.mod: replace {line.strip()[:100]!r} names a path outside the repository: the sandbox "
                        "holds the repository only")
    return None
