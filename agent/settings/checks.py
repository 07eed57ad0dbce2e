"""Everything a user can get wrong, checked before any container starts or any model is asked,
each with a one-line message that names the flag (never pydantic's raw text)."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlparse

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from agent.escape import one_line
from agent.protocol import TaskSpec

# A model field and the flag that sets it, for messages a person can act on.
FLAG_FOR_FIELD = {
    "max_steps": "--max-steps",
    "timeout_s": "--timeout",
    "pids_limit": "--pids",
    "cpus": "--cpus",
    "memory": "--memory",
    "image": "--image",
    "runtime": "--runtime",
    "backend": "--backend",
    "goal": "the goal",
    "allow": "--allow",
    "deny": "--deny",
    "policy": "--policy",
    "test_cmd": "--test-cmd",
}


def validation_message(exc: ValidationError, flags: Mapping[str, str] = FLAG_FOR_FIELD) -> str:
    """The first problem of a ValidationError in one line: ``--pids: must be ... (got 5)``."""
    return error_message(exc.errors(include_url=False)[0], flags)


def error_message(error: ErrorDetails, flags: Mapping[str, str] = FLAG_FOR_FIELD) -> str:
    """One pydantic error in words: ``where: what is wrong (got value)``; ``where`` is the flag
    when ``flags`` names one, else the field's path; no where for a whole-object rule."""
    loc = ".".join(str(part) for part in error["loc"])
    message = _plain_words(error["type"], str(error["msg"]), error.get("ctx") or {})
    got = error.get("input")
    shown = ""
    if loc and _scalar(got):
        shown = f" (got {json.dumps(got) if isinstance(got, str) else format(got, 'g')})"
    where = flags.get(loc, loc)
    return one_line(f"{where}: {message}{shown}" if where else message, 300)


_BOUNDS = {"greater_than_equal": ("ge", "must be at least"), "greater_than": ("gt", "must be more than"),
           "less_than_equal": ("le", "must be at most"), "less_than": ("lt", "must be less than")}


def _plain_words(kind: str, message: str, ctx: Mapping[str, object]) -> str:
    """pydantic's "Input should be greater than or equal to 1" as "must be at least 1"."""
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        bound = ctx.get(key)
        return f"{words} {bound:g}" if isinstance(bound, int | float) else f"{words} {bound}"
    message = message.removeprefix("Value error, ")
    if message.startswith("Input should"):
        message = "must" + message.removeprefix("Input should")
    return message


def _scalar(value: object) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def url_problem(url: str | None, flag: str = "--base-url") -> str | None:
    """Why an endpoint URL cannot be used, or None: found now, not after six retries."""
    if url is None:
        return None
    parts = urlparse(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return (
            f"{flag} {one_line(json.dumps(url), 100)} is not an http(s) URL: give the endpoint, "
            "e.g. http://127.0.0.1:8000/v1"
        )
    try:
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError:
        return f"{flag} {one_line(json.dumps(url), 100)} has a bad port number"
    return None


def number_problem(flag: str, value: float | None, *, minimum: float, inclusive: bool = True) -> str | None:
    """Why a numeric flag is out of range, or None."""
    if value is None:
        return None
    ok = value >= minimum if inclusive else value > minimum
    if ok:
        return None
    bound = f"at least {minimum:g}" if inclusive else f"more than {minimum:g}"
    return f"{flag} must be {bound} (got {value:g})"


def output_file_problem(path: str | None, flag: str) -> str | None:
    """A file the run writes at its end must be writable now, not after the run's work is done."""
    if not path:
        return None
    target = Path(path).expanduser()
    shown = f"{flag} {one_line(json.dumps(path), 200)}"
    # The nearest folder that exists: the run creates the missing ones below it.
    folder = next((p for p in [target.parent, *target.parent.parents] if p.exists()), Path("/"))
    if target.is_dir():
        return f"{shown} is a folder, not a file"
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        return f"{shown} cannot be written ({one_line(str(folder), 200)} is not a writable folder)"
    if target.exists() and not os.access(target, os.W_OK):
        return f"{shown} cannot be written (permission denied)"
    return None


def split_test_command(text: str | None) -> tuple[list[str], str | None]:
    """The test command as argv, or why it cannot be split (an unbalanced quote...)."""
    if not text:
        return [], None
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        return [], f"--test-cmd {one_line(json.dumps(text), 100)} cannot be split into words: {exc}"
    if not argv:
        return [], "--test-cmd is empty"
    return argv, None


def model_option_problems(
    base_url: str | None, request_timeout: float | None, temperature: float | None, base_url_from: str = "--base-url"
) -> str | None:
    """The model options that can be judged without asking the model (``base_url_from``: where the URL was given)."""
    env_url = os.environ.get("OPENAI_BASE_URL") or None
    return (
        url_problem(base_url, base_url_from)
        or (url_problem(env_url, "OPENAI_BASE_URL") if base_url is None else None)
        or number_problem("--request-timeout", request_timeout, minimum=0, inclusive=False)
        or _temperature_problem(temperature)
    )


def _temperature_problem(temperature: float | None) -> str | None:
    if temperature is None or 0 <= temperature <= 2:
        return None
    return f"--temperature must be between 0 and 2 (got {temperature:g})"


def missing_test_program(task: TaskSpec, image: str, allow_shell: bool = False) -> str | None:
    """Can the image serve this task? Its platform, the /repo mount point, --allow-shell's /bin/sh, and the
    test command's program: in the repository (a relative path with a /), else in the image (on PATH, or
    an absolute path). A cheap probe on codebox's own runtime, cached per image (agent.containers.probe)."""
    program = task.test_cmd[0] if task.test_cmd else ""
    script = ""
    if "/" in program and not program.startswith("/"):
        path = Path(task.repo) / program
        if not path.is_file():
            return f"--test-cmd: {one_line(repr(program))} is not a file in the repository {one_line(task.repo)}"
        script, program = program, _interpreter(path)  # a script's #! program must be in the image
    from agent.containers.probe import image_problem

    return image_problem(image, program, allow_shell, script=script)


def _interpreter(script: Path) -> str:
    """The program a script's ``#!`` line starts (``#!/usr/bin/env bash``: bash), or "" for none."""
    try:
        with script.open("rb") as f:
            first = f.readline(256)
    except OSError:
        return ""
    words = first[2:].decode("utf-8", "replace").split() if first.startswith(b"#!") else []
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    return words[0] if words else ""
