"""What a project file says about how its tests run: pytest's settings, pytest plugins, dependencies.

One function per kind of file (pyproject.toml, setup.cfg, tox.ini, setup.py), each returning the
parts of it that integrity.py compares before and after a patch: ``{"pytest": ..., "plugins": ...,
"dependencies": ...}``. A file that cannot be parsed returns its whole text under every part (a file
pytest or the environment build cannot read either: any change counts). Parsed, never run.
"""

from __future__ import annotations

import configparser
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from agent.env.errors import EnvError

Parts = dict[str, Any]
PARTS = ("pytest", "plugins", "dependencies")
PLUGIN_GROUP = "pytest11"  # the entry point group pytest loads its plugins from
# pyproject.toml tables the environment is built from (agent/env/read/declared.py reads them).
_PYPROJECT_DEPENDENCIES = (
    ("build-system",), ("project", "dependencies"), ("project", "optional-dependencies"), ("project", "dynamic"),
    ("project", "requires-python"), ("dependency-groups",), ("tool", "poetry", "dependencies"),
    ("tool", "poetry", "dev-dependencies"), ("tool", "poetry", "group"), ("tool", "poetry", "extras"),
    ("tool", "pdm", "dev-dependencies"), ("tool", "hatch", "envs"), ("tool", "hatch", "metadata"),
    ("tool", "setuptools", "dynamic"), ("tool", "flit", "metadata"), ("tool", "uv"), ("tool", "tox"),
)
_CFG_DEPENDENCIES = (("options", "install_requires"), ("options", "setup_requires"), ("options", "tests_require"),
                     ("options", "python_requires"))
_SETUP_KEYS = ("install_requires", "extras_require", "setup_requires", "tests_require", "python_requires")


def unreadable(text: str) -> Parts:
    return dict.fromkeys(PARTS, ("unreadable", text))


def pyproject(text: str) -> Parts:
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return unreadable(text)
    tool = _at(data, "tool")
    return {
        "pytest": _at(tool, "pytest"),
        "plugins": [_at(data, "project", "entry-points", PLUGIN_GROUP), _at(tool, "poetry", "plugins", PLUGIN_GROUP),
                    "entry-points" in (_at(data, "project", "dynamic") or [])],
        "dependencies": [_at(data, *keys) for keys in _PYPROJECT_DEPENDENCIES],
    }


def setup_cfg(text: str) -> Parts:
    parser = _ini(text)
    if parser is None:
        return unreadable(text)
    return {
        "pytest": [_section(parser, "tool:pytest"), _section(parser, "pytest")],
        "plugins": _option(parser, "options.entry_points", PLUGIN_GROUP),
        "dependencies": [*(_option(parser, s, k) for s, k in _CFG_DEPENDENCIES),
                         _section(parser, "options.extras_require")],
    }


def tox_ini(text: str) -> Parts:
    parser = _ini(text)
    if parser is None:
        return unreadable(text)
    envs = {s: {k: v for k, v in parser.items(s) if k in ("deps", "extras", "install_command", "commands_pre")}
            for s in parser.sections() if s == "testenv" or s.startswith("testenv:")}
    return {"pytest": _section(parser, "pytest"), "plugins": None,
            "dependencies": [envs, _option(parser, "tox", "requires")]}


def setup_py(text: str) -> Parts:
    """setup()'s arguments as codebox's static reading of setup.py sees them (agent/env/read/setup_py.py);
    what it cannot see is judged on the environment built again for the patched tree."""
    from agent.env.read.setup_py import read_setup_py  # the syntax-tree reader: only for a patch that changes setup.py

    with tempfile.TemporaryDirectory(prefix="codebox-setup-py-") as folder:
        (Path(folder) / "setup.py").write_text(text, encoding="utf-8", errors="surrogateescape")
        try:
            call = read_setup_py(Path(folder))
        except EnvError:
            return unreadable(text)
    if call is None or not call.found:
        return {"pytest": None, "plugins": None, "dependencies": None}
    entry_points = call.values.get("entry_points")
    plugins = entry_points.get(PLUGIN_GROUP) if isinstance(entry_points, dict) else None
    return {"pytest": None, "plugins": [plugins, "entry_points" in call.computed],
            "dependencies": [[call.values.get(k) for k in _SETUP_KEYS], sorted(k for k in call.computed
                                                                            if k in _SETUP_KEYS)]}


READERS = {"pyproject.toml": pyproject, "setup.cfg": setup_cfg, "tox.ini": tox_ini, "setup.py": setup_py}


def _at(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _ini(text: str) -> configparser.ConfigParser | None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    return parser


def _section(parser: configparser.ConfigParser, section: str) -> dict[str, str] | None:
    return dict(parser.items(section)) if parser.has_section(section) else None


def _option(parser: configparser.ConfigParser, section: str, key: str) -> str | None:
    return parser.get(section, key) if parser.has_option(section, key) else None
