"""The host's own CPython builds, found without running them: pyenv's (``$PYENV_ROOT`` or ~/.pyenv), uv's
(``$UV_PYTHON_INSTALL_DIR``, else ``$XDG_DATA_HOME/uv/python`` or ~/.local/share/uv/python) and /usr/local's
(``/usr/local/bin/pythonX.Y``), in that order of preference; for each minor the first found, newest patch first;
none older than 3.7 (``OLDEST``: codebox's own build steps in an environment's box need it).

Only a self-contained prefix is taken: ``bin/pythonX.Y`` and its standard library ``lib/pythonX.Y`` (with
``os.py``) side by side; a shared ``libpythonX.Y*.so*`` beside them goes along. Nothing found here is run on
the host: a folder listing and ``patchlevel.h`` say which versions there are (``codebox image python`` lists
them for free), and the copy is checked where it matters, inside its image (network none), whose loader and
libraries are the ones the sandbox will use; a host run would prove only that the host's loader finds them.

What is copied (``files``), laid out under /usr/local: the interpreter, its standard library without the
parts a test run never needs (the stdlib's own ``test`` package, idlelib, tkinter and ``_tkinter``: Tk's
libraries are not in the image, turtledemo, lib2to3's tests, ``config-X.Y-*``: the static libpython for
embedding) and with an empty site-packages (the host's installs are the host's business; a task's packages come
from its environment), the shared libpython and the headers (a C extension of the project builds against them).
``__pycache__`` stays (the sandbox's root is read-only: without it every start would compile the stdlib again),
but for its ``.opt-1``/``.opt-2`` files, which only ``python -O`` reads.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from agent import python_versions as versions

FORMAT = "host-python-1"
# The oldest minor taken: codebox's own steps in an environment's build box (agent/env/install/inside) run on the
# image's Python and use ``from __future__ import annotations`` (3.7). A 3.6 build is left to the stand-in (3.9).
OLDEST = "3.7"
PREFIX = "usr/local"  # in the image: /usr/local/bin comes first on Debian's PATH; /usr/local/lib is in ld.so.conf
SWITCH = "CODEBOX_HOST_PYTHONS"
USR_LOCAL = Path("/usr/local")
# Left out of the standard library, by path relative to lib/pythonX.Y (see the module's docstring).
_SKIPPED_TOP = {"test", "idlelib", "tkinter", "turtledemo", "site-packages"}
_SKIPPED_PARTS = {"lib2to3/tests", "unittest/test", "ctypes/test", "distutils/tests", "sqlite3/test"}
_OPTIMIZED = (".opt-1.pyc", ".opt-2.pyc")  # bytecode for ``python -O`` only: a fifth of a 3.12's copy
_VERSION_FOLDER = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
_UV_FOLDER = re.compile(r"^cpython-(\d+)\.(\d+)\.(\d+)-linux-[a-z0-9_]+-gnu$")
_PY_VERSION = re.compile(rb'^#define PY_VERSION\s+"([0-9][0-9A-Za-z.+]*)"', re.MULTILINE)


@dataclass(frozen=True)
class HostPython:
    """A CPython build on this machine: X.Y, its full version, its prefix folder and where it was found."""

    minor: str
    version: str  # 3.10.13
    prefix: Path
    kind: str  # "pyenv", "uv", "/usr/local"

    def describe(self) -> str:
        """``host pyenv 3.10.13``: the link's name in a choice and a report."""
        return f"host {self.kind} {self.version}"

    def _stdlib(self) -> Path:
        return self.prefix / "lib" / f"python{self.minor}"

    def files(self) -> Iterator[tuple[str, Path]]:
        """(path in the image, path on the host) of every file copied, in a stable order."""
        yield f"{PREFIX}/bin/python{self.minor}", self.prefix / "bin" / f"python{self.minor}"
        for path in self._libpythons():
            yield f"{PREFIX}/lib/{path.name}", path
        stdlib = self._stdlib()
        yield from self._tree(stdlib, f"{PREFIX}/lib/python{self.minor}", skip_top=_SKIPPED_TOP)
        for include in sorted((self.prefix / "include").glob(f"python{self.minor}*")):
            if include.name in (f"python{self.minor}", f"python{self.minor}m"):
                yield from self._tree(include, f"{PREFIX}/include/{include.name}", skip_top=set())

    def _libpythons(self) -> list[Path]:
        lib = self.prefix / "lib"
        return sorted(p for p in lib.glob(f"libpython{self.minor}*.so*") if p.is_file() or p.is_symlink())

    @staticmethod
    def _tree(root: Path, inside: str, skip_top: set[str]) -> Iterator[tuple[str, Path]]:
        for folder, dirs, names in os.walk(root):
            relative = Path(folder).relative_to(root).as_posix()
            keep = []
            for name in sorted(dirs):
                below = name if relative == "." else f"{relative}/{name}"
                if (relative == "." and (name in skip_top or name.startswith("config-"))) or below in _SKIPPED_PARTS:
                    continue
                keep.append(name)
            dirs[:] = keep
            for name in sorted(names):
                if (relative == "lib-dynload" and name.startswith("_tkinter")) or name.endswith(_OPTIMIZED):
                    continue
                yield (f"{inside}/{name}" if relative == "." else f"{inside}/{relative}/{name}"), Path(folder) / name

    def stamp(self) -> str:
        """A hash of what is copied: its paths and sizes, and the prefix (a few thousand stat calls, for the key)."""
        digest = hashlib.sha256(f"{FORMAT}\n{self.prefix}\n{self.version}\n".encode())
        for inside, path in self.files():
            try:
                size = path.lstat().st_size
            except OSError:
                size = -1
            digest.update(f"{inside}\0{size}\n".encode())
        return digest.hexdigest()


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the host's Pythons are a link of the chain: only when asked (``CODEBOX_HOST_PYTHONS=1``). The copy
    carries no pytest (a task's environment brings one), so a task that builds no environment (nothing declared,
    ``--env none``) would find none where a suite's image has Debian's; until the copy carries one, it is opt-in."""
    value = (os.environ if environ is None else environ).get(SWITCH, "").strip().lower()
    return value in ("1", "yes", "true", "on")


def find_host_pythons(environ: Mapping[str, str] | None = None, home: Path | None = None,
                      usr_local: Path = USR_LOCAL) -> dict[str, HostPython]:
    """X.Y -> the host's build of it that the chain would copy (pyenv > uv > /usr/local; newest patch first), for
    the minors from OLDEST on."""
    environ = os.environ if environ is None else environ
    home = home or Path.home()
    found: dict[str, HostPython] = {}
    for candidate in [*_pyenv(environ, home), *_uv(environ, home), *_usr_local(usr_local)]:
        if candidate.minor not in found and versions.key(candidate.minor) >= versions.key(OLDEST):
            found[candidate.minor] = candidate
    return found


def _pyenv(environ: Mapping[str, str], home: Path) -> list[HostPython]:
    root = Path(environ.get("PYENV_ROOT") or home / ".pyenv") / "versions"
    return _versioned(root, _VERSION_FOLDER, "pyenv")


def _uv(environ: Mapping[str, str], home: Path) -> list[HostPython]:
    if environ.get("UV_PYTHON_INSTALL_DIR"):
        root = Path(environ["UV_PYTHON_INSTALL_DIR"])
    else:
        root = Path(environ.get("XDG_DATA_HOME") or home / ".local" / "share") / "uv" / "python"
    return _versioned(root, _UV_FOLDER, "uv")


def _versioned(root: Path, pattern: re.Pattern[str], kind: str) -> list[HostPython]:
    """The self-contained CPython prefixes in ``root`` whose folder names match ``pattern``, newest first."""
    try:
        names = [entry.name for entry in os.scandir(root) if entry.is_dir()]
    except OSError:
        return []
    found = []
    for name in names:
        match = pattern.match(name)
        if match is None:
            continue  # pypy, a free-threaded or debug build, a virtualenv: not a plain CPython
        minor = f"{match.group(1)}.{match.group(2)}"
        prefix = root / name
        if minor in versions.RELEASED and self_contained(prefix, minor):
            found.append(HostPython(minor, ".".join(match.groups()), prefix, kind))
    return sorted(found, key=lambda p: tuple(int(x) for x in p.version.split(".")), reverse=True)


def _usr_local(prefix: Path) -> list[HostPython]:
    found = []
    for minor in sorted(versions.RELEASED, key=versions.key, reverse=True):
        if self_contained(prefix, minor):
            found.append(HostPython(minor, patchlevel(prefix, minor) or minor, prefix, "/usr/local"))
    return found


def self_contained(prefix: Path, minor: str) -> bool:
    """``bin/pythonX.Y`` (a file) and ``lib/pythonX.Y/os.py`` under ``prefix``."""
    return (prefix / "bin" / f"python{minor}").is_file() and (prefix / "lib" / f"python{minor}" / "os.py").is_file()


def patchlevel(prefix: Path, minor: str) -> str | None:
    """The full version a prefix's headers name (``PY_VERSION`` in patchlevel.h), without running anything."""
    for include in (f"python{minor}", f"python{minor}m"):
        try:
            text = (prefix / "include" / include / "patchlevel.h").read_bytes()[:1 << 16]
        except OSError:
            continue
        match = _PY_VERSION.search(text)
        if match and match.group(1).decode().startswith(f"{minor}."):
            return match.group(1).decode()
    return None
