"""Poetry's dependency tables turned into PEP 508 requirements: ``^``, ``~``, ``*`` and exact
versions, tables with ``version``/``extras``/``markers``. A dependency from a git, path or URL
source (or a named ``source``) is kept by its name: ``sources`` names where it would come from
and ``source_policy`` decides whether the user's index may serve it. ``python`` is the
interpreter, not a package. A local label in a ``^``/``~`` bound (``^2.1+cpu``) is dropped.
"""

from __future__ import annotations

import re
from typing import Any

from agent.env.errors import EnvError
from agent.env.read.safe_read import table

_PLAIN = re.compile(r"^\d+(\.\d+)*$")
_LOCAL = re.compile(r"^([\^~]?\d+(\.\d+)*)\+[A-Za-z0-9.]+$")


def _bump(parts: list[int], index: int) -> str:
    upper = [*parts[:index], parts[index] + 1]
    return ".".join(str(p) for p in upper)


def _caret(version: str) -> str:
    parts = [int(p) for p in version.split(".")]
    first_nonzero = next((i for i, p in enumerate(parts) if p != 0), len(parts) - 1)
    return f">={version},<{_bump(parts, first_nonzero)}"


def _tilde(version: str) -> str:
    parts = [int(p) for p in version.split(".")]
    return f">={version},<{_bump(parts, 1 if len(parts) > 1 else 0)}"


def constraint(spec: str, where: str) -> str:
    """A poetry version constraint as a PEP 440 specifier ("" for any version)."""
    spec = spec.strip()
    if spec in ("", "*"):
        return ""
    if "||" in spec:
        raise EnvError(f"{where}: poetry constraint {spec!r} ('||') is not supported; use --requirements",
                       usage=True)
    pieces = []
    for piece in re.split(r"\s*,\s*|\s+(?=[<>=!^~])", spec):
        local = _LOCAL.match(piece)
        if local and piece[0] in "^~":  # a range bound cannot carry a local label (PEP 440)
            piece = local.group(1)
        if piece.startswith("^") and _PLAIN.match(piece[1:]):
            pieces.append(_caret(piece[1:]))
        elif piece.startswith("~") and not piece.startswith("~=") and _PLAIN.match(piece[1:]):
            pieces.append(_tilde(piece[1:]))
        elif _PLAIN.match(piece) or piece.endswith(".*") or (local and piece[0].isdigit()):
            pieces.append(f"=={piece}")
        else:
            pieces.append(piece)
    return ",".join(pieces)


def requirement(name: str, value: Any, where: str) -> str | None:
    """One poetry dependency as a PEP 508 string; None for the interpreter and optional ones."""
    if name.lower() == "python":
        return None
    if isinstance(value, list):  # several constraints by marker: take the first that is a plain version
        value = value[0] if value else "*"
    if isinstance(value, str):
        return name + constraint(value, where)
    if not isinstance(value, dict):
        raise EnvError(f"{where}: {name} has an unreadable poetry specification", usage=True)
    if value.get("optional"):
        return None
    extras = value.get("extras") or []
    text = name + (f"[{','.join(str(e) for e in extras)}]" if extras else "")
    if not any(key in value for key in ("git", "path", "url", "file")):  # those name no version (sources.py)
        text += constraint(str(value.get("version", "*")), where)
    if isinstance(value.get("markers"), str):
        text += f"; {value['markers']}"
    return text


def poetry_tables(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(where, table) for the runtime dependencies and the dev/test groups poetry declares."""
    poetry = table(data, "tool", "poetry")
    found = [("pyproject.toml [tool.poetry.dependencies]", table(poetry, "dependencies")),
             ("pyproject.toml [tool.poetry.dev-dependencies]", table(poetry, "dev-dependencies"))]
    for group in ("dev", "test", "tests", "testing"):
        found.append((f"pyproject.toml [tool.poetry.group.{group}.dependencies]",
                      table(poetry, "group", group, "dependencies")))
    return [(where, deps) for where, deps in found if deps]
