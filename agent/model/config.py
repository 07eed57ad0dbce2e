"""How to reach an OpenAI-compatible model: the config, and the API key it names."""

from __future__ import annotations

import os
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field

from agent.defaults import DEFAULT_REQUEST_TIMEOUT_S
from agent.model.base import ModelError

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
PLACEHOLDER_KEY = "not-needed"  # local servers that check no key still want the header

ToolChoice = Literal["auto", "required", "none"]


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value else None


class OpenAIConfig(BaseModel):
    """How to reach the model. Holds the NAME of the key's variable, never the key."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(default_factory=lambda: _env("CODEBOX_MODEL") or "")
    """Model name as the server knows it."""
    base_url: str | None = Field(default_factory=lambda: _env("OPENAI_BASE_URL"))
    """The endpoint, ending in /v1 for most local servers; None: OpenAI."""
    api_key_env: str = DEFAULT_API_KEY_ENV
    """The variable that holds the key (the key itself is never stored here)."""
    api: Literal["chat", "responses"] = "chat"
    """Chat Completions, or the Responses API."""
    request_timeout_s: float = Field(default=DEFAULT_REQUEST_TIMEOUT_S, gt=0)
    """Per request; when streaming, the longest silence between two chunks."""
    temperature: float | None = None
    """None: not sent, the server's default applies."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Cap on one reply's output tokens; None: not sent (many local servers then never stop early)."""
    tool_choice: ToolChoice = "auto"
    """Sent whenever tools are: some servers (llama-cpp-python) leave the tools out of the prompt without it."""
    stream: bool = True
    """Chat Completions only: receive the reply as it is generated (text deltas reach the console)."""
    stream_usage: bool = True
    """Ask for usage in the last chunk (``stream_options``); dropped by itself for a server that refuses it."""
    max_attempts: int = Field(default=6, ge=1)
    """Attempts per reply, the first included."""
    max_retry_time_s: float = Field(default=120.0, gt=0)
    """All attempts of one reply together."""
    backoff_base_s: float = Field(default=0.5, ge=0)
    """Exponential backoff multiplier (with jitter)."""
    backoff_max_s: float = Field(default=20.0, ge=0)
    """Cap of one backoff wait (a server's Retry-After aside)."""

    @classmethod
    def from_options(cls, **options: Any) -> OpenAIConfig:
        """Build from CLI-style options: a None value means "not given" (env or default applies).

        ``OpenAIConfig.from_options(model=args.model, base_url=args.base_url,
        api_key_env=args.api_key_env, request_timeout_s=args.timeout, temperature=args.temperature)``
        """
        return cls(**{k: v for k, v in options.items() if v is not None})

    @property
    def uses_openai_endpoint(self) -> bool:
        if not self.base_url:
            return True
        return (urlparse(self.base_url).hostname or "").lower() == "api.openai.com"

    @property
    def display_base_url(self) -> str:
        """The base URL for messages: without user:password and without a query (keys hide there)."""
        parts = urlparse((self.base_url or OPENAI_DEFAULT_BASE_URL).rstrip("/"))
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        return parts._replace(netloc=host, query="", fragment="").geturl()


def resolve_api_key(config: OpenAIConfig) -> str:
    """The key from ``config.api_key_env``; a placeholder for local servers when it is unset."""
    key = os.environ.get(config.api_key_env, "").strip()
    if key:
        return key
    if not config.uses_openai_endpoint:
        return PLACEHOLDER_KEY
    raise ModelError(
        f"no API key: set {config.api_key_env} (or name another variable with --api-key-env), "
        f"or use --base-url to point at a local OpenAI-compatible server"
    )
