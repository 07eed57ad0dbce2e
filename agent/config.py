"""The user's defaults: a `codebox.toml` in the user's config folder, `[tool.codebox]` in the
pyproject.toml of the current folder, CODEBOX_* environment variables; command-line flags win.

Precedence, highest first: flags, environment (CODEBOX_MODEL ...), ./pyproject.toml
[tool.codebox], $XDG_CONFIG_HOME/codebox/codebox.toml (~/.config/codebox/codebox.toml).

Every command reads these before it parses its flags, so this module imports no pydantic: the
sources are merged here, and only values that some source actually sets are validated (by a
pydantic model built on first use). With no file and no variable, the built-in defaults of
agent.defaults are the settings as they are.
"""

from __future__ import annotations

import functools
import os
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agent.console.escape import one_line
from agent.defaults import (
    DEFAULT_CPUS,
    DEFAULT_JOBS,
    DEFAULT_MAX_STEPS,
    DEFAULT_MEMORY,
    DEFAULT_PIDS,
    DEFAULT_POLICY,
    DEFAULT_TIMEOUT_S,
    PolicyName,
)
from agent.errors import CodeboxError

if TYPE_CHECKING:
    from pydantic import BaseModel


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


# The bounds a set value must keep (pydantic Field constraints), by field.
_BOUNDS: dict[str, dict[str, Any]] = {
    "request_timeout": {"gt": 0},
    "temperature": {"ge": 0, "le": 2},
    "max_steps": {"ge": 1},
    "timeout": {"gt": 0},
    "pids": {"ge": 16},
    "cpus": {"gt": 0},
    "jobs": {"ge": 1},
}
KNOWN_KEYS: tuple[str, ...] = tuple(CodeboxSettings.__annotations__)
# Written as JSON in an environment variable: CODEBOX_DENY='["*.pem", "*.key"]'.
_LIST_KEYS = frozenset(k for k, kind in CodeboxSettings.__annotations__.items() if str(kind).startswith("list"))


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
        if key in _LIST_KEYS:
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


def _validated(merged: dict[str, Any], origin: typing.Callable[[str], str]) -> CodeboxSettings:
    from pydantic import ValidationError

    from agent.checks import error_message

    try:
        checked = _schema().model_validate(merged)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        key = str(error["loc"][0]) if error["loc"] else ""
        raise ConfigError(one_line(f"{origin(key)}: {error_message(error, {})}", 400)) from exc
    return CodeboxSettings(**{key: getattr(checked, key) for key in merged})


@functools.cache
def _schema() -> type[BaseModel]:
    """CodeboxSettings as a pydantic model (its types and _BOUNDS), for the values a source sets."""
    from pydantic import ConfigDict, Field, create_model

    hints = typing.get_type_hints(CodeboxSettings)
    fields: dict[str, Any] = {key: (hints[key], Field(None, **_BOUNDS.get(key, {}))) for key in KNOWN_KEYS}
    model: type[BaseModel] = create_model("CodeboxSettings", __config__=ConfigDict(extra="forbid"), **fields)
    return model
