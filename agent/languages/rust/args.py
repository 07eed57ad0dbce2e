"""What the model may add to ``cargo test``: which tests run, nothing else.

cargo's own choices of targets (``--lib``, ``--test NAME``, ``-p NAME`` ...) go before the ``--`` of the
test command; libtest's (name filters, ``--exact``, ``--skip NAME`` ...) after it. Nothing that names a
file, a config, a toolchain, a target directory or a registry is accepted (``--config``, ``-Z``,
``--manifest-path``, ``--target-dir``, ``+toolchain``): the model chooses tests, not how they build.
"""

from __future__ import annotations

import posixpath
import re

from agent.languages.base import CONTROL, TestArgsError, refused

ALLOWED = ("test name filters, --exact, --skip NAME, --ignored, --include-ignored, --nocapture, --show-output, "
           "--test-threads N; cargo's --lib, --bins, --tests, --doc, --test NAME, --bin NAME, -p NAME, "
           "--no-fail-fast")
# cargo test's flags that choose targets: with a value, and without.
_CARGO_VALUE = {"--test", "--bin", "--example", "-p", "--package"}
_CARGO_FLAG = {"--lib", "--bins", "--tests", "--doc", "--examples", "--no-fail-fast", "--workspace"}
# libtest's: with a value, and without.
_LIBTEST_VALUE = {"--skip", "--test-threads"}
_LIBTEST_FLAG = {"--exact", "--ignored", "--include-ignored", "--nocapture", "--show-output", "-q", "--quiet"}
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")  # a target's or a package's name


def is_cargo_test(test_cmd: list[str]) -> bool:
    return len(test_cmd) >= 2 and posixpath.basename(test_cmd[0]) == "cargo" and test_cmd[1] == "test"


def split(args: list[str]) -> tuple[list[str], list[str]]:
    """(cargo's part, libtest's part) of ``args``; TestArgsError names the first argument that only chooses
    nothing."""
    cargo: list[str] = []
    libtest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if CONTROL.search(arg):
            raise refused(arg, "it contains a control character", ALLOWED)
        flag, eq, inline = arg.partition("=")
        if flag in _CARGO_VALUE or flag in _LIBTEST_VALUE:
            if eq:
                value = inline
                taken = [arg]
            elif i + 1 < len(args):
                value = args[i + 1]
                taken = [arg, value]
                i += 1
            else:
                raise refused(arg, "it needs a value", ALLOWED)
            _check_value(flag, value)
            (cargo if flag in _CARGO_VALUE else libtest).extend(taken)
        elif arg in _CARGO_FLAG:
            cargo.append(arg)
        elif arg in _LIBTEST_FLAG:
            libtest.append(arg)
        elif arg.startswith("-") or arg.startswith("+"):
            raise refused(arg, "it is not an option that chooses tests", ALLOWED)
        elif not arg:
            raise refused(arg, "an empty filter", ALLOWED)
        else:
            libtest.append(arg)  # a test name filter ("tests::adds", "src/lib.rs - f (line 3)")
        i += 1
    return cargo, libtest


def _check_value(flag: str, value: str) -> None:
    if flag == "--test-threads":
        if not value.isdigit() or not 1 <= int(value) <= 64:
            raise refused(f"{flag} {value}", "the thread count is a number from 1 to 64", ALLOWED)
    elif flag == "--skip":
        if not value or value.startswith("-"):
            raise refused(f"{flag} {value}", "--skip takes a test name", ALLOWED)
    elif not _NAME.match(value):
        raise refused(f"{flag} {value}", "a target or package name is letters, digits, _ . -", ALLOWED)


def check(args: list[str]) -> None:
    """Raise TestArgsError unless every argument only chooses tests."""
    split(args)


def arrange(test_cmd: list[str], args: list[str]) -> list[str]:
    """The argv that runs: cargo's choices before the command's ``--``, libtest's after it."""
    try:
        cargo, libtest = split(args)
    except TestArgsError:
        return [*test_cmd, *args]  # never reached: the arguments were checked first
    if "--" in test_cmd:
        cut = test_cmd.index("--")
        return [*test_cmd[:cut], *cargo, *test_cmd[cut:], *libtest]
    return [*test_cmd, *cargo, *(["--", *libtest] if libtest else [])]
