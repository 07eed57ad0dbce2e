"""The user's defaults: a `codebox.toml` in the user's config folder, `[tool.codebox]` in the
pyproject.toml of the current folder, CODEBOX_* environment variables; command-line flags win.

Precedence, highest first: flags, environment (CODEBOX_MODEL ...), ./pyproject.toml
[tool.codebox], $XDG_CONFIG_HOME/codebox/codebox.toml (~/.config/codebox/codebox.toml).

Every command reads these before it parses its flags, so this module imports no pydantic (and
codebox needs no pydantic-settings): the sources are merged here and the values they set are
checked here, with the same words as the flags' checks ("max_steps: must be at least 1 (got 0)").
The built-in defaults come from agent.defaults.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from agent.console.escape import one_line
from agent.defaults import (
    DEFAULT_CPUS,
    DEFAULT_JOBS,
    DEFAULT_MAX_STEPS,
    DEFAULT_MEMORY,
    DEFAULT_PIDS,
    DEFAULT_POLICY,
    DEFAULT_TIMEOUT_S,
    POLICY_NAMES,
    PolicyName,
)
from agent.errors import CodeboxError


class ConfigError(CodeboxError):
    """A config file that cannot be read or holds a bad value; the message names the file."""


def user_config_file() -> Path:
    root = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(root) / "codebox" / "codebox.toml"


def project_config_file() -> Path:
    return Path.cwd() / "pyproject.toml"


ENV_PREFIX = "CODEBOX_"


class CodeboxSettings:
    """Every default a user may set once instead of on every command line.

    A plain class, not a dataclass (whose import costs `--help` more than the rest of this
    module): the annotations are the keys, the class attributes their built-in defaults.
    """

    model: str | None = None
    """Model name for an OpenAI-compatible API, or scripted:FILE."""
    base_url: str | None = None
    """OpenAI-compatible endpoint (default: OPENAI_BASE_URL, else OpenAI)."""
    api_key_env: str | None = None
    """The variable that holds the API key (default OPENAI_API_KEY)."""
    api: Literal["chat", "responses"] | None = None
    """Chat Completions (default) or Responses."""
    request_timeout: float | None = None
    """Seconds per model request."""
    temperature: float | None = None
    """Sampling temperature."""
    policy: PolicyName = DEFAULT_POLICY
    """read-only, workspace-write or ask."""
    allow: list[str] = []
    """Writable paths (globs) under workspace-write / ask."""
    deny: list[str] = []
    """Paths never written (globs)."""
    test_cmd: str | None = None
    """The test command run_test runs, e.g. "python3 -m pytest -q"."""
    max_steps: int = DEFAULT_MAX_STEPS
    """Model steps before a run stops."""
    timeout: float = DEFAULT_TIMEOUT_S
    """Wall-clock budget per task, seconds."""
    image: str | None = None
    """Sandbox image (default codebox-sandbox:latest)."""
    memory: str = DEFAULT_MEMORY
    """Container memory limit, e.g. 1g."""
    pids: int = DEFAULT_PIDS
    """Container process limit."""
    cpus: float = DEFAULT_CPUS
    """Container CPU limit."""
    jobs: int = DEFAULT_JOBS
    """Batch tasks at once."""

    def __init__(self, **values: Any) -> None:
        """The built-in defaults, replaced by ``values`` (checked already: see load_settings)."""
        for key in KNOWN_KEYS:
            value = values[key] if key in values else getattr(CodeboxSettings, key)
            setattr(self, key, list(value) if isinstance(value, list) else value)

    def __repr__(self) -> str:
        return "CodeboxSettings(" + ", ".join(f"{key}={getattr(self, key)!r}" for key in KNOWN_KEYS) + ")"


KNOWN_KEYS: tuple[str, ...] = tuple(CodeboxSettings.__annotations__)

# What each key holds. Values come typed from TOML and as text from the environment; a number
# given as text is read as one (CODEBOX_JOBS=4).
_TEXT = frozenset({"model", "base_url", "api_key_env", "test_cmd", "image", "memory"})
_CHOICES: dict[str, tuple[str, ...]] = {"api": ("chat", "responses"), "policy": POLICY_NAMES}
_INTEGERS = frozenset({"max_steps", "pids", "jobs"})
_NUMBERS = frozenset({"request_timeout", "temperature", "timeout", "cpus"})
# Written as JSON in an environment variable: CODEBOX_DENY='["*.pem", "*.key"]'.
_LISTS = frozenset({"allow", "deny"})
# The bounds of the numbers: (at least, more than, at most).
_BOUNDS: dict[str, tuple[float | None, float | None, float | None]] = {
    "request_timeout": (None, 0, None),
    "temperature": (0, None, 2),
    "max_steps": (1, None, None),
    "timeout": (None, 0, None),
    "pids": (16, None, None),
    "cpus": (None, 0, None),
    "jobs": (1, None, None),
}


def _read_toml(path: Path, table: tuple[str, ...] = ()) -> dict[str, Any]:
    """The file's table, {} when the file is absent; ConfigError when it is not valid TOML."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(one_line(f"{path}: cannot read it as TOML: {exc}", 300)) from exc
    import tomllib  # here: with no file, `codebox --help` does without it

    try:
        data: Any = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(one_line(f"{path}: cannot read it as TOML: {exc}", 300)) from exc
    for key in table:
        data = data.get(key, {}) if isinstance(data, dict) else {}
    return data if isinstance(data, dict) else {}


def _read_environment() -> tuple[dict[str, Any], dict[str, str]]:
    """The CODEBOX_<KEY> variables of known keys (any letter case), and the variable each came from.

    A list is written as JSON (``CODEBOX_ALLOW='["src/**"]'``); JSON null leaves the key unset.
    """
    wanted = {ENV_PREFIX + key.upper(): key for key in KNOWN_KEYS}
    values: dict[str, Any] = {}
    names: dict[str, str] = {}
    for name, text in os.environ.items():
        key = wanted.get(name.upper())
        if key is None:
            continue
        value: Any = text
        if key in _LISTS:
            import json

            try:
                value = json.loads(text)
            except ValueError:
                raise ConfigError(
                    f"the environment variable {one_line(name, 60)}: {key}: a list is written as JSON, "
                    f"e.g. {name}='[\"src/**\"]' (got {one_line(text, 60)!r})"
                ) from None
            if value is None:
                continue
        values[key], names[key] = value, name
    return values, names


def load_settings() -> CodeboxSettings:
    """The user's defaults; ConfigError with the file and key when one is wrong."""
    env, env_names = _read_environment()
    # Lowest first: each later source overrides the keys it sets.
    sources = [
        (str(user_config_file()), _read_toml(user_config_file())),
        (f"{project_config_file()} [tool.codebox]", _read_toml(project_config_file(), ("tool", "codebox"))),
        ("the environment", env),
    ]
    merged: dict[str, Any] = {}
    for _, data in sources:
        merged.update(data)
    if not merged:
        return CodeboxSettings()

    def origin(key: str) -> str:
        if key in env:
            return f"the environment variable {env_names[key]}"
        return next((name for name, data in reversed(sources[:2]) if key in data), "the configuration")

    unknown = [key for key in merged if key not in KNOWN_KEYS]
    if unknown:
        key = unknown[0]
        raise ConfigError(one_line(f"{origin(key)}: {key}: unknown key (known: {', '.join(KNOWN_KEYS)})", 400))
    return _validated(merged, origin)


def _validated(merged: dict[str, Any], origin: Callable[[str], str]) -> CodeboxSettings:
    checked: dict[str, Any] = {}
    for key, value in merged.items():
        try:
            checked[key] = _check(key, value)
        except ValueError as exc:
            scalar = isinstance(value, str | int | float) and not isinstance(value, bool)
            got = f" (got {_shown(value)})" if scalar else ""
            raise ConfigError(one_line(f"{origin(key)}: {key}: {exc}{got}", 400)) from None
    return CodeboxSettings(**checked)


def _shown(value: str | float) -> str:
    import json

    return json.dumps(value) if isinstance(value, str) else format(value, "g")


def _check(key: str, value: Any) -> Any:
    """The value as the setting holds it; ValueError saying what is wrong with it."""
    if key in _TEXT:
        if not isinstance(value, str):
            raise ValueError("must be a string")
        return value
    if key in _CHOICES:
        choices = _CHOICES[key]
        if value not in choices:
            quoted = [f"'{c}'" for c in choices]
            raise ValueError("must be " + (", ".join(quoted[:-1]) + " or " + quoted[-1]))
        return value
    if key in _LISTS:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError("must be a list of strings")
        return list(value)
    number = _integer(value) if key in _INTEGERS else _number(value)
    at_least, more_than, at_most = _BOUNDS.get(key, (None, None, None))
    if at_least is not None and number < at_least:
        raise ValueError(f"must be at least {at_least:g}")
    if more_than is not None and number <= more_than:
        raise ValueError(f"must be more than {more_than:g}")
    if at_most is not None and number > at_most:
        raise ValueError(f"must be at most {at_most:g}")
    return number


def _integer(value: Any) -> int:
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise ValueError("must be a whole number") from None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("must be a whole number")
    return value


def _number(value: Any) -> float:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError("must be a number") from None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ValueError("must be a number")
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return float(value)
