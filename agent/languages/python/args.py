"""What the model may add to a pytest command: arguments that choose tests, nothing else.

The user's configured test command is trusted; the model's extra arguments are not. They may
change which tests run and how much is printed, never what "pass" means: options that load
plugins, read another config, move the rootdir, override ini values, turn warnings into errors or
only collect are refused, and so are paths outside the repository and pytest's `@argfile`.
A command runs pytest when it runs `pytest`, `py.test` or `python -m pytest`; then test paths or
node ids inside the repository are allowed, and the options in PYTEST_FLAGS / PYTEST_VALUE_OPTIONS.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path, PurePosixPath

from agent.languages.base import CONTROL, TestArgsError, check_test_path, refused

# Options without a value (short ones may be clustered: -xq, -vv).
PYTEST_FLAGS = frozenset(
    {
        "-x", "--exitfirst", "-q", "--quiet", "-v", "--verbose", "-s", "-l", "--showlocals",
        "--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first",
        "--sw", "--stepwise", "--sw-skip", "--stepwise-skip", "--no-header", "--no-summary", "-ra", "-rA",
    }
)  # fmt: skip
# Options that take one value: the check each value must pass.
PYTEST_VALUE_OPTIONS = {
    "-k": "expr",
    "-m": "expr",
    "--maxfail": "count",
    "--durations": "count",
    "--tb": "tb",
    "-r": "chars",
    "--deselect": "path",
}
_SHORT_FLAGS = {f[1] for f in PYTEST_FLAGS if len(f) == 2}
_SHORT_VALUES = {o[1] for o in PYTEST_VALUE_OPTIONS if len(o) == 2}
_TB_STYLES = {"auto", "long", "short", "line", "native", "no"}

PYTEST_ALLOWED = (
    "test paths or node ids inside the repository (tests/test_x.py::TestY::test_z), "
    "-k EXPR, -m EXPR, -x, --maxfail N, -q, -v (-vv), -s, -l, --lf, --ff, --nf, --sw, "
    "--tb STYLE, -r CHARS, --durations N, --deselect NODEID, --no-header"
)


def is_pytest(test_cmd: list[str]) -> bool:
    """Whether the command runs pytest (pytest, py.test, pytest-3, python -m pytest)."""
    names = [PurePosixPath(a).name for a in test_cmd]
    if any(n in ("pytest", "py.test") or re.fullmatch(r"pytest-?3?(\.\d+)*", n) for n in names):
        return True
    return any(a == "-m" and b == "pytest" for a, b in itertools.pairwise(test_cmd))


def check_pytest_args(args: list[str], repo: Path | None = None) -> None:
    """Raise TestArgsError unless every argument only chooses tests. With ``repo``, a path that
    leads out of it through a symlink is refused too (checked against the tree on the host)."""
    i = 0
    while i < len(args):
        arg = args[i]
        try:
            if CONTROL.search(arg):
                raise TestArgsError(f"{arg!r} contains a control character")
            if not arg.startswith("-"):
                check_test_path(arg, repo)
                i += 1
            else:
                i = _check_option(args, i, repo)
        except TestArgsError as exc:
            raise refused(arg, str(exc), PYTEST_ALLOWED) from None


def _check_option(args: list[str], i: int, repo: Path | None = None) -> int:
    """Check the option at ``args[i]`` (and its value); return the index after it."""
    arg = args[i]
    if arg in PYTEST_FLAGS or re.fullmatch(r"-[vq]+|-r[a-zA-Z]+", arg):
        return i + 1
    name, eq, inline = arg.partition("=")
    if arg.startswith("--"):
        if name not in PYTEST_VALUE_OPTIONS:
            raise TestArgsError(_why(name))
        if eq:
            _check_value(name, inline, repo)
            return i + 1
        return _take_value(args, i, name, repo)
    # a short cluster: -xq, -xkEXPR, -k EXPR
    for pos, letter in enumerate(arg[1:], 1):
        if letter in _SHORT_FLAGS:
            continue
        if letter in _SHORT_VALUES:
            rest = arg[pos + 1 :]
            if rest:
                _check_value("-" + letter, rest.removeprefix("="), repo)
                return i + 1
            return _take_value(args, i, "-" + letter, repo)
        raise TestArgsError(_why("-" + letter))
    return i + 1


def _take_value(args: list[str], i: int, name: str, repo: Path | None) -> int:
    if i + 1 >= len(args):
        raise TestArgsError(f"{name} needs a value")
    _check_value(name, args[i + 1], repo)
    return i + 2


def _check_value(name: str, value: str, repo: Path | None = None) -> None:
    kind = PYTEST_VALUE_OPTIONS[name]
    if CONTROL.search(value):
        raise TestArgsError(f"the value of {name} contains a control character")
    if kind == "count" and not value.isdigit():
        raise TestArgsError(f"{name} takes a number")
    if kind == "tb" and value not in _TB_STYLES:
        raise TestArgsError(f"--tb takes one of {', '.join(sorted(_TB_STYLES))}")
    if kind == "chars" and not re.fullmatch(r"[a-zA-Z]+", value):
        raise TestArgsError("-r takes letters (e.g. -r fE)")
    if kind == "path":
        check_test_path(value, repo)


_REASONS = {
    "-o": "it overrides ini options",
    "--override-ini": "it overrides ini options",
    "-p": "it loads or blocks plugins",
    "-c": "it reads another config file",
    "--config-file": "it reads another config file",
    "--rootdir": "it moves the rootdir",
    "--confcutdir": "it changes which conftest files load",
    "--noconftest": "it changes which conftest files load",
    "-W": "it changes how warnings count",
    "--pythonwarnings": "it changes how warnings count",
    "--co": "collect-only runs no test, so every run would pass",
    "--collect-only": "collect-only runs no test, so every run would pass",
    "--collectonly": "collect-only runs no test, so every run would pass",
    "--pyargs": "it imports test modules by name from anywhere",
    "--import-mode": "it changes how test modules are imported",
    "--basetemp": "it moves where tests write",
    "--runxfail": "it changes what counts as a pass",
    "--version": "it runs no test",
    "-V": "it runs no test",
    "-h": "it runs no test",
    "--help": "it runs no test",
    "--fixtures": "it runs no test",
    "--markers": "it runs no test",
}


def _why(option: str) -> str:
    return f"{option} is not allowed: " + _REASONS.get(option, "only options that choose tests are")
