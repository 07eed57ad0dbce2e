"""What package.json's scripts run, read on the host (never run): whether ``npm test`` reaches node's own test
runner, through ``&&`` chains, wrappers (``c8 node --test``) and ``npm run other`` scripts; and whether a command
is ``npm test``."""

from __future__ import annotations

import posixpath
import re
import shlex

_SEPARATORS = re.compile(r"&&|\|\||[;|&]")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NPM_TEST = (["test"], ["t"], ["tst"], ["run", "test"], ["run-script", "test"])
_MAX_DEPTH = 8  # scripts that call each other: a cycle or a long chain stops here


def runs_node_test(scripts: dict[str, str], name: str) -> bool:
    """Whether the script ``name`` runs ``node --test`` in one of its commands, or in a script it runs."""
    return _reaches(scripts, name, set())


def _reaches(scripts: dict[str, str], name: str, seen: set[str]) -> bool:
    if name in seen or len(seen) >= _MAX_DEPTH or name not in scripts:
        return False
    seen.add(name)
    for segment in _SEPARATORS.split(scripts[name]):
        words = _words(segment)
        if _node_test(words):
            return True
        called = _npm_script(words)
        if called is not None and _reaches(scripts, called, seen):
            return True
    return False


def _words(segment: str) -> list[str]:
    try:
        words = shlex.split(segment)
    except ValueError:
        words = segment.split()
    while words and _ASSIGNMENT.match(words[0]):  # NODE_ENV=test node --test
        words = words[1:]
    return words


def _node_test(words: list[str]) -> bool:
    """node with --test among its own options (those before its script), run directly or by a wrapper (c8,
    nyc, cross-env)."""
    for i, word in enumerate(words):
        if posixpath.basename(word) == "node":
            options = []
            for option in words[i + 1:]:
                if not option.startswith("-"):
                    break
                options.append(option)
            return "--test" in options
    return False


def _npm_script(words: list[str]) -> str | None:
    """The script ``npm run NAME`` / ``npm test`` runs, or None."""
    if not words or posixpath.basename(words[0]) != "npm":
        return None
    rest = [w for w in words[1:] if not w.startswith("-")]
    if rest[:1] in (["test"], ["t"], ["tst"]):
        return "test"
    if rest[:1] in (["run"], ["run-script"]) and len(rest) > 1:
        return rest[1]
    return None


def is_npm_test(command: list[str]) -> bool:
    """Whether ``command`` is ``npm test`` (``npm t``, ``npm run test``), with ``env VAR=value`` before it."""
    words = list(command)
    if words[:1] == ["env"]:
        words = words[1:]
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    if not words or posixpath.basename(words[0]) != "npm":
        return False
    return any(words[1:1 + len(form)] == form for form in _NPM_TEST)
