"""Whether the packages a repository's own package sources would serve may come from the user's index.

A repository's source (``sources.py``) is never followed; it is named in the environment's notes.
A package it would serve is resolved by name from the index codebox uses only when the user
says so: ``--allow-public-fallback``, or the user configured that index themselves (its URL in
UV_INDEX_URL / UV_DEFAULT_INDEX / UV_EXTRA_INDEX_URL / UV_INDEX; ``CODEBOX_FIND_LINKS`` /
``--find-links`` folders that hold the package; ``--no-index``, where nothing comes from an
index at all). Otherwise the build stops before anything is resolved, with one line naming the
file, the source and the packages: resolving them by name from the public index is exactly
what a dependency-confusion attack counts on.
"""

from __future__ import annotations

import itertools
import os
import urllib.parse
from pathlib import Path

from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename

from agent.env.errors import EnvError
from agent.env.read.declared import Declared
from agent.env.read.sources import PackageSource
from agent.env.resolve.resolve import IndexConfig

FLAG = "--allow-public-fallback"
MAX_LISTED = 8  # package names shown in one line
MAX_FOLDER_ENTRIES = 100_000


def check_sources(declared: Declared, index: IndexConfig, allow_public_fallback: bool = False) -> list[str]:
    """Notes naming each source and where its packages resolve from; EnvError (usage) when one may not."""
    names = sorted({r.name for r in declared.requirements})
    notes: list[str] = []
    refused: list[tuple[PackageSource, list[str]]] = []
    folders = _folder_packages(index.find_links)
    user_urls = {_key(url): variable for url, variable in index.user_indexes().items()}
    for found in declared.sources:
        served = [n for n in names if found.serves(n)]
        if found.public:
            notes.append(f"{found.describe()}: the public index (or a mirror of it); codebox uses your index")
        elif not served:
            notes.append(f"{found.describe()}: not used (codebox takes packages from your index only)")
        elif allow_public_fallback:
            notes.append(f"{found.describe()}: not used; {_listed(served)} resolve from your index instead "
                         f"({FLAG})")
        elif index.no_index:
            notes.append(f"{found.describe()}: not used; {_listed(served)} resolve from your --find-links "
                         "folders (no index)")
        elif _key(found.location) in user_urls:
            notes.append(f"{found.describe()}: {_listed(served)} resolve from your index "
                         f"({user_urls[_key(found.location)]})")
        elif folders and all(n in folders for n in served):
            notes.append(f"{found.describe()}: not used; {_listed(served)} resolve from your --find-links folders")
        else:
            refused.append((found, served))
    if refused:
        found, served = refused[0]
        more = f" (and {len(refused) - 1} more sources)" if len(refused) > 1 else ""
        raise EnvError(
            f"{found.describe()} for {_listed(served)}{more}: codebox never takes packages from a repository's "
            f"sources, and will not resolve these by name from another index; {_configure_it(found)}, or pass {FLAG}",
            usage=True)
    return notes


def _configure_it(found: PackageSource) -> str:
    """What the user can do to take a refused source's packages from it, themselves."""
    if found.kind == "index":
        return f"configure that index yourself (UV_EXTRA_INDEX_URL={found.location}, or CODEBOX_FIND_LINKS=DIR " \
               "holding their wheels)"
    # a page of links, a git checkout, a path or a file's URL: no index of yours serves it
    return "put their wheels in a folder yourself and pass CODEBOX_FIND_LINKS=DIR"


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    return shown + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def _key(url: str) -> str:
    """An index URL as compared: scheme and host lowercased, no credentials, no trailing slash."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
    except ValueError:
        return url.strip().rstrip("/")
    host = (parts.hostname or "").lower()
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return urllib.parse.urlunsplit((parts.scheme.lower(), host + port, parts.path.rstrip("/"), parts.query, ""))


def _folder_packages(folders: list[str]) -> set[str]:
    """Canonical names of the wheels and sdists in the user's find-links folders."""
    names: set[str] = set()
    for folder in folders:
        path = Path(folder).expanduser()
        if not path.is_dir():
            continue
        with os.scandir(path) as entries:
            for entry in itertools.islice(entries, MAX_FOLDER_ENTRIES):
                names.update(_distribution(entry.name))
    return names


def _distribution(filename: str) -> set[str]:
    try:
        if filename.endswith(".whl"):
            return {str(parse_wheel_filename(filename)[0])}
        if filename.endswith((".tar.gz", ".zip")):
            return {str(parse_sdist_filename(filename)[0])}
    except (InvalidWheelFilename, InvalidSdistFilename):
        pass
    return set()
