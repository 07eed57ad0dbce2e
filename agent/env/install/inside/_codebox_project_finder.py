"""codebox: what the project's build generated (version files, compiled modules), served from the environment.

/repo is mounted read-only, so what the build wrote into the project (a ``_version.py``, a
``.so``) lives in the environment, under ``GENERATED`` at the same relative path. This
meta-path finder makes it importable as if it were in /repo, while /repo keeps the last
word: a module is looked up in each /repo folder first and in its generated mirror second,
so a file present in /repo (the model's edit included) is the one imported. Compiled
modules are the exception, as in an in-place build where a ``.so`` next to a ``.py`` wins.
Written by the build (``_codebox_finder.json`` next to it holds what to serve).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
from typing import Any

REPO = "/repo"
HERE = os.path.dirname(os.path.abspath(__file__))


def _load() -> dict[str, Any]:
    with open(os.path.join(HERE, "_codebox_finder.json"), encoding="utf-8") as handle:
        config: dict[str, Any] = json.load(handle)
    return config


_CONFIG = _load()
GENERATED: str = _CONFIG["generated"]
ROOTS: list[str] = _CONFIG["roots"]
TOP = frozenset(_CONFIG["top"])
EXTENSIONS: dict[str, str] = _CONFIG["extensions"]


def _mirror(entry: str) -> str | None:
    path = os.path.abspath(entry or os.getcwd())
    if path != REPO and not path.startswith(REPO + "/"):
        return None
    mirror = GENERATED + path[len(REPO):]
    return mirror if os.path.isdir(mirror) else None


def _with_mirrors(entries: list[str]) -> list[str]:
    search: list[str] = []
    for entry in entries:
        search.append(entry)
        mirror = _mirror(entry)
        if mirror is not None and mirror not in search:
            search.append(mirror)
    return search


class CodeboxProjectFinder:
    """Finds the project's modules in /repo, then in what its build generated."""

    @classmethod
    def find_spec(cls, fullname: str, path: Any = None, target: Any = None) -> Any:
        location = EXTENSIONS.get(fullname)
        if location is not None and os.path.isfile(location):
            loader = importlib.machinery.ExtensionFileLoader(fullname, location)
            return importlib.util.spec_from_file_location(fullname, location, loader=loader)
        if fullname.partition(".")[0] not in TOP:
            return None
        entries = list(path) if path is not None else [*sys.path, *(r for r in ROOTS if r not in sys.path)]
        spec = importlib.machinery.PathFinder.find_spec(fullname, _with_mirrors(entries), target)
        locations = getattr(spec, "submodule_search_locations", None)
        if isinstance(locations, list):  # a regular package: its generated mirror joins its __path__
            for mirror in [_mirror(p) for p in list(locations)]:
                if mirror is not None and mirror not in locations:
                    locations.append(mirror)
        return spec


if not any(getattr(f, "__name__", "") == "CodeboxProjectFinder" for f in sys.meta_path):
    sys.meta_path.insert(0, CodeboxProjectFinder)
