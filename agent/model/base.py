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
    ``request``, ``status`` and ``body`` (the server's whole answer) go to the events as they are.
    """

    def __init__(
        self, message: str, *, request: str | None = None, status: int | None = None, body: str | None = None
    ) -> None:
        super().__init__(message)
        self.request = request
        self.status = status
        self.body = body

    def details(self) -> dict[str, Any]:
        """What the events carry beside the message: only what is known."""
        found = {"request": self.request, "status": self.status, "body": self.body}
        return {k: v for k, v in found.items() if v is not None}


class ModelClient(Protocol):
    name: str

    def complete(
        self,
        instructions: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        emit: EmitFn,
    ) -> ModelOutput:
        """Sample one reply. Raises ModelError when no reply can be had.

        A streaming client may emit ``message.delta`` ({"text", "attempt"}) while the reply
        comes in; the deltas of an attempt that failed (a ``model.retry`` follows) are void.
        """
        ...
