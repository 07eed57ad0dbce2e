"""SWE-bench's per-repository, per-version specs, as data: what a row's Python and environment were.

The specs live in the ``swebench`` package up to 4.1.0 only (``swebench/harness/constants/python.py``;
5.x has none). codebox downloads that wheel once into its cache (``pip download --no-deps``: the package
index only) and reads the module through its syntax tree (spec_module.py): it is never imported, nor
installed. ``--specs FILE`` gives the same table as JSON instead: ``{"owner/name": {"version": {...}}}``.

Of a spec, codebox follows ``python``, ``pip_packages`` (the recipe's ``prefer``: taken where they fit, as
SWE-bench installs them before the project, which may replace them), the extras its ``install`` line names,
and ``pre_install`` (run in the build box, offline, unprivileged; an ``apt-get install`` line becomes the
recipe's Debian packages, downloaded on the host). A conda environment file or conda package list
(``packages``) is not followed, and the row's notes say so.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agent.env.errors import EnvError
from agent.env.read.declared import DEFAULT_EXTRAS
from agent.env.recipe import Recipe, parse_recipe
from agent.env.resolve.fetch import cache_dir
from agent.eval.spec_module import read_tables
from agent.python_versions import minor_of

SWEBENCH_WITH_SPECS = "4.1.0"
MODULE = "swebench/harness/constants/python.py"
TABLE = "MAP_REPO_VERSION_TO_SPECS_PY"
_DOWNLOAD_TIMEOUT_S = 300
_MAX_MODULE_BYTES = 4 << 20
_EXTRAS = re.compile(r"""\.\[([A-Za-z0-9_,.\- ]+)\]""")
_APT = re.compile(r"^\s*(?:apt-get update\s*&&\s*)?apt-get install (?:-y |--yes |-qq |--no-install-recommends )*"
                  r"([a-z0-9][a-z0-9+.\- ]*)$")
Log = Callable[[str], None]


class RowSpec(BaseModel):
    """What a dataset's spec says of one row: its Python, its recipe, and what of it is not followed."""

    python: str | None = None
    recipe: Recipe = Field(default_factory=Recipe)
    where: str = ""
    """Which spec: "SWE-bench 4.1.0's spec for psf/requests 2.26"."""
    notes: list[str] = Field(default_factory=list)


class Specs:
    """A specs table (repository -> version -> spec) and where it came from."""

    def __init__(self, table: dict[str, Any], origin: str) -> None:
        self.table = table
        self.origin = origin

    def for_row(self, repo: str, version: str | None) -> RowSpec | None:
        spec = self.table.get(repo, {}).get(version or "") if isinstance(self.table.get(repo), dict) else None
        if not isinstance(spec, dict):
            return None
        return row_spec(spec, f"{self.origin}'s spec for {repo} {version}")


def row_spec(spec: dict[str, Any], where: str) -> RowSpec:
    """A spec's parts codebox follows, as a recipe, and a note for each it does not."""
    out = RowSpec(where=where)
    python = spec.get("python")
    if isinstance(python, str) and minor_of(python):
        out.python = minor_of(python)
    pip = [p for p in spec.get("pip_packages") or [] if isinstance(p, str)]
    install = spec.get("install")
    extras = [e.strip() for m in _EXTRAS.findall(install) for e in m.split(",") if e.strip()] \
        if isinstance(install, str) else []
    apt: list[str] = []
    pre_install: list[str] = []
    for line in [c for c in spec.get("pre_install") or [] if isinstance(c, str)]:
        match = _APT.match(line)
        if match:
            apt += match.group(1).split()
        else:
            pre_install.append(line)
    extras = [e for e in extras if e not in DEFAULT_EXTRAS]  # taken anyway, where the project has them
    out.recipe = _checked(out, {"prefer": pip, "extras": extras, "apt": apt, "pre_install": pre_install}, where)
    packages = spec.get("packages")
    if isinstance(packages, str) and packages.strip():
        if packages.strip().endswith((".yml", ".yaml")):
            out.notes.append(f"{where}: its conda environment file ({packages}) is not followed: the environment is "
                             "built from what the project declares, with the spec's pip packages")
        elif packages.strip() != "requirements.txt":
            out.notes.append(f"{where}: its conda packages ({packages}) are not installed as such")
    return out


def _checked(out: RowSpec, fields: dict[str, list[str]], where: str) -> Recipe:
    """The recipe of ``fields``, each item checked alone: one that is no requirement is dropped with a note."""
    recipe = Recipe()
    for name, values in fields.items():
        for value in values:
            try:
                recipe = recipe.plus(parse_recipe({name: [value]}, where))
            except EnvError as exc:
                out.notes.append(f"{exc} (left out)")
    return recipe


def load_specs(path: Path | None, log: Log) -> Specs | None:
    """``--specs FILE`` when given (EnvError, usage, on a bad file); else SWE-bench 4.1.0's table from the cache,
    fetched once; None (said once in ``log``) when it cannot be had."""
    if path is not None:
        return _from_file(path)
    try:
        source = _module_source(log)
    except EnvError as exc:
        log(f"SWE-bench's specs are not used: {exc}")
        return None
    table = read_tables(source).get(TABLE)
    if not isinstance(table, dict):
        log(f"SWE-bench's specs are not used: {MODULE} of swebench {SWEBENCH_WITH_SPECS} holds no {TABLE}")
        return None
    return Specs(table, f"SWE-bench {SWEBENCH_WITH_SPECS}")


def _from_file(path: Path) -> Specs:
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise EnvError(f"--specs {path}: not a readable JSON file ({exc})", usage=True) from None
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise EnvError(f"--specs {path}: expected {{\"owner/name\": {{\"version\": {{\"python\": ...}}}}}}",
                       usage=True)
    return Specs(table, f"--specs {path.name}")


def wheel_path() -> Path:
    return cache_dir() / "swebench-specs" / f"swebench-{SWEBENCH_WITH_SPECS}-py3-none-any.whl"


def _module_source(log: Log) -> str:
    wheel = wheel_path()
    if not wheel.is_file():
        _download(wheel, log)
    try:
        with zipfile.ZipFile(wheel) as archive:
            info = archive.getinfo(MODULE)
            if info.file_size > _MAX_MODULE_BYTES:
                raise EnvError(f"{MODULE} in {wheel.name} is too large to read")
            return archive.read(info).decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise EnvError(f"{wheel} holds no readable {MODULE} ({exc})") from None


def _download(wheel: Path, log: Log) -> None:
    """The wheel from the package index, by pip, once (no dependencies, nothing installed)."""
    log(f"fetching swebench {SWEBENCH_WITH_SPECS}'s wheel once for its specs (read as data, never imported)")
    wheel.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=wheel.parent) as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                   "--disable-pip-version-check", "--quiet", "-d", tmp, f"swebench=={SWEBENCH_WITH_SPECS}"]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=_DOWNLOAD_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EnvError(f"`{shlex.join(command[2:5])}` could not run ({exc})") from None
        got = Path(tmp) / wheel.name
        if proc.returncode != 0 or not got.is_file():
            last = (proc.stderr.strip().splitlines() or ["no wheel came"])[-1]
            raise EnvError(f"pip could not download swebench {SWEBENCH_WITH_SPECS} ({last})")
        with contextlib.suppress(OSError):
            got.replace(wheel)
