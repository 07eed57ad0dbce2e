"""Which failed model requests a retry can fix, and what the server said about them."""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping
from typing import Any

import openai

# 408 request timeout, 409 conflict (lock timeouts), 429 rate limit; and 5xx that are not validation errors.
RETRYABLE_STATUS = frozenset({408, 409, 429})
BODY_LIMIT = 20_000  # the server's message is kept whole up to this; a larger body is a server bug
# 502, 503, 504 say "not now" (a proxy, an overloaded or starting server): the same words again
# are expected, and waiting is what fixes them, as for connection errors, timeouts and 429.
WAIT_STATUS = frozenset({502, 503, 504})

# What a request-validation error looks like in a 5xx body. llama-cpp-python answers a request
# its pydantic models refuse with HTTP 500 and the ValidationError's text; FastAPI with a list
# of {"loc", "msg"}. The same request would be refused again: no retry can fix it.
_VALIDATION = re.compile(
    r"\d+ validation errors? for "
    r"|errors\.pydantic\.dev"
    r"|\[type=[a-z_]+, input_value="
    r"|'loc':|\"loc\":"
    r"|field required|extra inputs are not permitted|input should be "
    r"|invalid_request_error",
    re.IGNORECASE,
)


SERVER_ERROR_EVENT = "the server sent an error in the stream"

# A server that cannot stream a reply when the request carries tools says so in these words
# (llama-cpp-python's chatml-function-calling handler raises "Automatic streaming tool choice is
# not supported", which its server turns into an HTTP 500); the same request fails the same way.
_NO_STREAMING_WITH_TOOLS = re.compile(
    r"streaming tool choice is not supported"
    r"|stream(?:ing)?\b.{0,40}\btool(?:s| calls?| choice)?\b.{0,40}\bnot (?:supported|implemented)"
    r"|tool(?:s| calls?)\b.{0,40}\bstream(?:ing)?\b.{0,40}\bnot (?:supported|implemented)",
    re.IGNORECASE,
)
# A 5xx that says the server cannot do what was asked: waiting will not teach it.
_UNSUPPORTED = re.compile(r"\bnot (?:supported|implemented)\b|\bunsupported\b|NotImplementedError", re.IGNORECASE)


class StreamInterrupted(Exception):
    """A streamed reply stopped before its end (connection cut, no final chunk, an error event).

    Retried like any failed request: a reply is used whole or not at all.
    """


class EmptyStream(StreamInterrupted):
    """HTTP 200 and an event stream that ended, or broke, before its first chunk.

    What llama-cpp-python's server answers a streamed request with tools when its chat handler
    cannot stream tool calls. On a first request that carries tools it means "cannot stream
    here" (the client then goes on unstreamed); later it is an interrupted stream like any other.
    """


def short(text: str, limit: int = 300) -> str:
    """One line, at most ``limit`` characters: for places where a whole body would not fit."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def bounded(text: str, limit: int = BODY_LIMIT) -> str:
    """The text whole, unless it is unreasonably large; then its head and how much was cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text) - limit} more characters)"


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP-date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000
            if math.isfinite(value):
                return max(0.0, value)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if ra is None:
        return None
    try:
        value = float(ra)
        return max(0.0, value) if math.isfinite(value) else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _message_in(body: Any) -> str | None:
    """The message inside an error body (OpenAI, vLLM, FastAPI, llama.cpp shapes)."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            for key in ("message", "detail", "msg"):
                if inner.get(key):
                    value = inner[key]
                    return value if isinstance(value, str) else repr(value)
        elif isinstance(inner, str) and inner:
            return inner
        return None
    if isinstance(body, str) and body.strip():
        return body
    return None


def server_message(exc: openai.APIStatusError) -> str:
    """The server's own words from an error reply, whole (see ``bounded``)."""
    said = _message_in(exc.body)
    if said is None:
        try:
            said = exc.response.text
        except Exception:
            said = ""
    return bounded(said) if said.strip() else f"HTTP {exc.status_code}"


def is_validation_error(text: str) -> bool:
    return bool(_VALIDATION.search(text))


def _said(exc: BaseException) -> str:
    """What the server said in a failed reply: an error body, or an error event in a stream."""
    if isinstance(exc, openai.APIStatusError):
        return server_message(exc)
    if isinstance(exc, StreamInterrupted) and str(exc).startswith(SERVER_ERROR_EVENT):
        return str(exc)
    return ""


def cannot_stream_with_tools(exc: BaseException) -> bool:
    """The server said it cannot stream a reply to a request with tools (in its words)."""
    return bool(_NO_STREAMING_WITH_TOOLS.search(_said(exc)))


def will_repeat(exc: BaseException) -> bool:
    """A failure the same request meets again however long one waits: a validation error in a
    5xx, or a server that says it does not support what was asked ("not supported", "not
    implemented"). 502/503/504 are "not now" whatever their words (see WAIT_STATUS)."""
    if isinstance(exc, openai.APIStatusError) and (exc.status_code < 500 or exc.status_code in WAIT_STATUS):
        return False
    said = _said(exc)
    return bool(said) and (is_validation_error(said) or bool(_UNSUPPORTED.search(said)))


def is_retryable(exc: BaseException) -> bool:
    """Connection errors, timeouts, cut streams, 408/409/429 and 5xx, unless the failure will repeat."""
    if will_repeat(exc):
        return False
    if isinstance(exc, openai.APIConnectionError | StreamInterrupted):
        return True  # APIConnectionError includes APITimeoutError
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500
    return False


def fingerprint(exc: BaseException) -> str | None:
    """What makes two server errors "the same"; None for errors that may well repeat and pass."""
    if isinstance(exc, openai.APIStatusError) and exc.status_code >= 500 and exc.status_code not in WAIT_STATUS:
        return f"{exc.status_code}:{server_message(exc)}"
    if isinstance(exc, StreamInterrupted) and str(exc).startswith(SERVER_ERROR_EVENT):
        return str(exc)
    return None


class RetryDecider:
    """tenacity's ``retry`` predicate for one reply: retryable, and not the same error twice in a row.

    A 500 (or an error event in a stream) that repeats word for word comes from the request
    itself or from a server that is stuck: a third identical answer teaches nothing, so it is
    not retried again.
    """

    def __init__(self) -> None:
        self._last: str | None = None
        self.repeated = False

    def __call__(self, exc: BaseException) -> bool:
        if not is_retryable(exc):
            return False
        mark = fingerprint(exc)
        if mark is not None and mark == self._last:
            self.repeated = True
            return False
        self._last = mark
        return True
