"""Which model client a model spec names: `scripted:FILE`, or a model of an OpenAI-compatible API
(Chat Completions or Responses). The OpenAI SDK is imported only when such a client is built."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agent.model.base import ModelClient, ModelError
from agent.model.scripted import ScriptedModel

if TYPE_CHECKING:
    from agent.model.config import OpenAIConfig


def make_client(config: OpenAIConfig) -> ModelClient:
    """The adapter ``config.api`` names: "chat" (Chat Completions) or "responses"."""
    if config.api == "responses":
        from agent.model.responses_client import OpenAIResponsesClient

        return OpenAIResponsesClient(config)
    from agent.model.openai_client import OpenAIChatClient

    return OpenAIChatClient(config)


def build_model(spec: str, **openai_options: Any) -> ModelClient:
    """`scripted:FILE` for a scripted model, anything else is a model name for the OpenAI client.

    Raises ModelError with a message for a person (missing key, bad option, unreadable script).
    """
    if spec.startswith("scripted:"):
        return ScriptedModel.from_file(spec.removeprefix("scripted:"))
    from agent.model.config import OpenAIConfig

    try:
        config = OpenAIConfig.from_options(model=spec, **openai_options)
    except ValidationError as exc:
        raise ModelError(f"bad model options: {exc}") from exc
    return make_client(config)
