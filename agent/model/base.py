"""The interface every model client implements."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from agent.protocol import Message, ModelOutput, ToolSpec

# Called by a client to report what happens inside it (e.g. "model.retry", {"attempt": 2, ...}).
EmitFn = Callable[[str, dict[str, Any]], None]


class ModelError(Exception):
    """The model cannot answer: retries are spent, or the request is refused (401, 404, ...).

    The message is for a person: it says what to change (a variable, a model name, a URL).
    """


class ModelClient(Protocol):
    name: str

    def complete(
        self,
        instructions: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        emit: EmitFn,
    ) -> ModelOutput:
        """Sample one reply. Raises ModelError when no reply can be had."""
        ...
