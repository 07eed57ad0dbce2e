"""sandbox.flags: the init's and the server's command lines, read without argparse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import flags

REPO = Path(__file__).resolve().parents[2]
SPEC: flags.Spec = {"--limit": (int, 10), "--name": (str, None), "--fast": (None, False)}


def test_values_switches_and_defaults() -> None:
    assert flags.parse([], SPEC) == ({"limit": 10, "name": None, "fast": False}, [])
    values, rest = flags.parse(["--limit", "3", "--name=a=b", "--fast"], SPEC)
    assert values == {"limit": 3, "name": "a=b", "fast": True} and rest == []
    assert flags.parse(["--limit", "1", "--limit", "2"], SPEC)[0]["limit"] == 2  # the last one wins


def test_what_follows_dashes_is_the_command() -> None:
    values, rest = flags.parse(["--fast", "--", "python3", "--limit", "x"], SPEC, stop_at_dashes=True)
    assert values["fast"] is True and rest == ["python3", "--limit", "x"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--limit"], "--limit needs a value"),
        (["--limit", "many"], "--limit: not a valid value: 'many'"),
        (["--fast=yes"], "--fast takes no value"),
        (["--bogus"], "unknown option '--bogus'"),
        (["stray"], "unexpected argument 'stray'"),
        (["--"], "unknown option '--'"),  # only a command line that takes a command has one
    ],
)
def test_bad_command_lines_get_one_line(argv: list[str], message: str) -> None:
    with pytest.raises(flags.FlagError) as caught:
        flags.parse(argv, SPEC)
    assert str(caught.value) == message


def test_help_is_asked_for() -> None:
    for argv in (["-h"], ["--limit", "2", "--help"]):
        with pytest.raises(flags.HelpWanted):
            flags.parse(argv, SPEC)


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-S", "-m", *argv], capture_output=True, text=True, cwd=REPO,
                          stdin=subprocess.DEVNULL, timeout=30)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["sandbox.server", "--output-limit", "0"], "--output-limit must be in 1..1000000"),
        (
            ["sandbox.server", "--search-engine", "grep"],
            "--search-engine: 'grep' is not one of auto, rg, python, literal",
        ),
        (["sandbox.server", "--lifetime-s", "soon"], "--lifetime-s: not a valid value: 'soon'"),
        (["sandbox.container_init", "--", "true"], "--alarm-s is required"),
        (["sandbox.container_init", "--alarm-s", "5"], "no command"),
        (["sandbox.container_init", "--alarm-s", "5", "--hup-grace-s", "x", "--", "true"], "not a valid value"),
    ],
)
def test_the_programs_refuse_a_bad_command_line_with_exit_2(argv: list[str], needle: str) -> None:
    done = _run(*argv)
    assert done.returncode == 2, done
    assert needle in done.stderr.splitlines()[0] and "usage:" in done.stderr and "Traceback" not in done.stderr


def test_the_programs_print_their_usage() -> None:
    for program in ("sandbox.server", "sandbox.container_init"):
        done = _run(program, "--help")
        assert "usage: python3 -m " + program in done.stdout + done.stderr
        assert done.returncode == 0
