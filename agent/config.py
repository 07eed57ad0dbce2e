"""The user's defaults: a `codebox.toml` in the user's config folder, `[tool.codebox]` in the
pyproject.toml of the current folder, CODEBOX_* environment variables; command-line flags win.

Precedence, highest first: flags, environment (CODEBOX_MODEL ...), ./pyproject.toml
[tool.codebox], $XDG_CONFIG_HOME/codebox/codebox.toml (~/.config/codebox/codebox.toml).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    PyprojectTomlConfigSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from agent.checks import error_message
from agent.console.escape import one_line
from agent.containers.spec import SandboxConfig
from agent.errors import CodeboxError
from agent.protocol import PolicyName, TaskSpec


class ConfigError(CodeboxError):
    """A config file that cannot be read or holds a bad value; the message names the file."""


def user_config_file() -> Path:
    root = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(root) / "codebox" / "codebox.toml"


def project_config_file() -> Path:
    return Path.cwd() / "pyproject.toml"


class CodeboxSettings(BaseSettings):
    """Every default a user may set once instead of on every command line."""

    model_config = SettingsConfigDict(
        env_prefix="CODEBOX_",
        extra="forbid",
        pyproject_toml_table_header=("tool", "codebox"),
    )

    model: str | None = None
    """Model name for an OpenAI-compatible API, or scripted:FILE."""
    base_url: str | None = None
    """OpenAI-compatible endpoint (default: OPENAI_BASE_URL, else OpenAI)."""
    api_key_env: str | None = None
    """The variable that holds the API key (default OPENAI_API_KEY)."""
    api: Literal["chat", "responses"] | None = None
    """Chat Completions (default) or Responses."""
    request_timeout: float | None = Field(default=None, gt=0)
    """Seconds per model request."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature."""
    policy: PolicyName = TaskSpec.model_fields["policy"].default
    """read-only, workspace-write or ask."""
    allow: list[str] = Field(default_factory=list)
    """Writable paths (globs) under workspace-write / ask."""
    deny: list[str] = Field(default_factory=list)
    """Paths never written (globs)."""
    test_cmd: str | None = None
    """The test command run_test runs, e.g. "python3 -m pytest -q"."""
    max_steps: int = Field(default=TaskSpec.model_fields["max_steps"].default, ge=1)
    """Model steps before a run stops."""
    timeout: float = Field(default=TaskSpec.model_fields["timeout_s"].default, gt=0)
    """Wall-clock budget per task, seconds."""
    image: str | None = None
    """Sandbox image (default codebox-sandbox:latest)."""
    memory: str = SandboxConfig.model_fields["memory"].default
    """Container memory limit, e.g. 1g."""
    pids: int = Field(default=SandboxConfig.model_fields["pids_limit"].default, ge=16)
    """Container process limit."""
    cpus: float = Field(default=SandboxConfig.model_fields["cpus"].default, gt=0)
    """Container CPU limit."""
    jobs: int = Field(default=2, ge=1)
    """Batch tasks at once."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            PyprojectTomlConfigSettingsSource(settings_cls, project_config_file()),
            TomlConfigSettingsSource(settings_cls, user_config_file()),
        )


def _read_toml(path: Path, table: tuple[str, ...] = ()) -> dict[str, Any]:
    """The file's table, {} when the file is absent; ConfigError when it is not valid TOML."""
    try:
        data: Any = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(one_line(f"{path}: cannot read it as TOML: {exc}", 300)) from exc
    for key in table:
        data = data.get(key, {}) if isinstance(data, dict) else {}
    return data if isinstance(data, dict) else {}


def load_settings() -> CodeboxSettings:
    """The user's defaults; ConfigError with the file and key when one is wrong."""
    sources = {
        f"{project_config_file()} [tool.codebox]": _read_toml(project_config_file(), ("tool", "codebox")),
        str(user_config_file()): _read_toml(user_config_file()),
    }
    try:
        return CodeboxSettings()
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        key = str(error["loc"][0]) if error["loc"] else ""
        where = [name for name, data in sources.items() if key in data]
        if os.environ.get(f"CODEBOX_{key.upper()}") is not None:
            where.insert(0, f"the environment variable CODEBOX_{key.upper()}")
        message = error_message(error, {})
        if error["type"] == "extra_forbidden":
            message = f"{key}: unknown key (known: " + ", ".join(CodeboxSettings.model_fields) + ")"
        origin = where[0] if where else "the configuration"
        raise ConfigError(one_line(f"{origin}: {message}", 400)) from exc
