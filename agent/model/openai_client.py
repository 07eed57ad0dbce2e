"""The real model client: any OpenAI-compatible Chat Completions endpoint with function calling.

Works with OpenAI and with the servers people run locally (vLLM, Ollama, llama.cpp server,
LM Studio, LiteLLM). The ``openai`` SDK is built with ``max_retries=0``: tenacity owns the
retries here, so each one is counted, reported (``model.retry``) and bounded in one place.

Nothing but ``ModelError`` leaves ``complete()``; its message says what to change.
The API key is read from the environment variable named in the config when the client is
built, handed to the SDK, and never put in a repr, an event or an error message.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar
from urllib.parse import urlparse

import openai
from pydantic import BaseModel, ConfigDict, Field
from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from agent.model.arguments import parse_arguments
from agent.model.base import EmitFn, ModelError
from agent.protocol import (
    AssistantMessage,
    Message,
    ModelOutput,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
    new_id,
)

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
PLACEHOLDER_KEY = "not-needed"  # local servers that check no key still want the header

# 408 request timeout, 409 conflict (lock timeouts), 429 rate limit; every 5xx.
RETRYABLE_STATUS = frozenset({408, 409, 429})

_T = TypeVar("_T")


# --- configuration -------------------------------------------------------------------------------


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value else None


class OpenAIConfig(BaseModel):
    """How to reach the model. Holds the NAME of the key's variable, never the key."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(default_factory=lambda: _env("CODEBOX_MODEL") or "")
    base_url: str | None = Field(default_factory=lambda: _env("OPENAI_BASE_URL"))
    api_key_env: str = DEFAULT_API_KEY_ENV
    api: Literal["chat", "responses"] = "chat"
    request_timeout_s: float = Field(default=60.0, gt=0)
    temperature: float | None = None  # None: not sent, the server's default applies
    max_tokens: int | None = Field(default=None, ge=1)  # None: not sent
    max_attempts: int = Field(default=6, ge=1)
    max_retry_time_s: float = Field(default=120.0, gt=0)
    backoff_base_s: float = Field(default=0.5, ge=0)  # exponential backoff multiplier (with jitter)
    backoff_max_s: float = Field(default=20.0, ge=0)  # cap of one backoff wait (Retry-After aside)

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


# --- arguments -----------------------------------------------------------------------------------


def arguments_to_wire(call: ToolCall) -> str:
    """What the model is shown of its own call: what it sent when that could not be parsed."""
    if call.parse_error is not None and call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


# --- errors and retries --------------------------------------------------------------------------


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


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def server_message(exc: openai.APIStatusError) -> str:
    """The server's own words from an error reply (OpenAI, vLLM, FastAPI, plain text shapes)."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            for key in ("message", "detail", "msg"):
                if inner.get(key):
                    return _short(str(inner[key]))
        elif isinstance(inner, str) and inner:
            return _short(inner)
    if isinstance(body, str) and body.strip():
        return _short(body)
    try:
        text = exc.response.text
    except Exception:
        text = ""
    return _short(text) if text.strip() else f"HTTP {exc.status_code}"


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code >= 500 or exc.status_code in RETRYABLE_STATUS
    return False


class _OpenAIClientBase:
    """Config, the SDK client, retries and error messages: shared by the Chat and Responses adapters."""

    def __init__(self, config: OpenAIConfig | None = None, **options: Any) -> None:
        config = config or OpenAIConfig.from_options(**options)
        if not config.model:
            raise ModelError("no model given: pass --model NAME or set CODEBOX_MODEL")
        self.config = config
        self.name = config.model
        self._key = resolve_api_key(config)
        try:
            self._client = openai.OpenAI(
                base_url=config.base_url or OPENAI_DEFAULT_BASE_URL,
                api_key=self._key,
                timeout=config.request_timeout_s,
                max_retries=0,
            )
        except Exception as e:  # a malformed URL, say
            message = f"cannot build the OpenAI client: {type(e).__name__}: {e}"
            raise ModelError(self._scrub(message)) from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.name!r}, base_url={self.config.display_base_url!r})"

    # -- messages for people -------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        key = self._key if hasattr(self, "_key") else ""
        if key and key != PLACEHOLDER_KEY and len(key) >= 4:
            text = text.replace(key, "***")
        return text

    def _reason(self, exc: BaseException) -> str:
        if isinstance(exc, openai.APIStatusError):
            return self._scrub(f"{exc.status_code}: {server_message(exc)}")
        if isinstance(exc, openai.APITimeoutError):
            return f"APITimeoutError: no answer within {self.config.request_timeout_s:g} s"
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f" ({type(cause).__name__}: {cause})" if cause else ""
            return self._scrub(_short(f"{type(exc).__name__}: {exc.message}{detail}", 200))
        return self._scrub(_short(f"{type(exc).__name__}: {exc}", 200))

    def _refusal(self, exc: openai.APIStatusError) -> ModelError:
        """A non-retried status error → a message that says what to change."""
        cfg = self.config
        url = cfg.display_base_url
        said = self._scrub(server_message(exc))
        status = exc.status_code
        if status == 401:
            unset = f"; {cfg.api_key_env} is not set" if self._key == PLACEHOLDER_KEY else ""
            return ModelError(
                f"authentication failed: set {cfg.api_key_env} to a valid key{unset} (server at {url} said: {said})"
            )
        if status == 403:
            return ModelError(
                f"permission denied at {url} for model '{cfg.model}': {said} "
                f"(check that the key in {cfg.api_key_env} may use this model)"
            )
        if status == 404:
            return ModelError(
                f"model '{cfg.model}' not found at {url} (check --model and --base-url; "
                f"local servers usually want a base URL ending in /v1): {said}"
            )
        if status in (400, 422):
            return ModelError(f"request rejected by {url} (HTTP {status}): {said}")
        return ModelError(f"HTTP {status} from {url}: {said}")

    # -- retries -------------------------------------------------------------------------------

    def _wait(self, state: RetryCallState) -> float:
        remaining = max(0.0, self.config.max_retry_time_s - (state.seconds_since_start or 0.0))
        exc = state.outcome.exception() if state.outcome is not None else None
        retry_after = None
        if isinstance(exc, openai.APIStatusError):
            retry_after = parse_retry_after(exc.response.headers)
        if retry_after is None:
            cfg = self.config
            wait = float(wait_random_exponential(multiplier=cfg.backoff_base_s, max=cfg.backoff_max_s)(state))
        else:
            wait = retry_after
        return min(wait, remaining)

    def _call_with_retries(self, emit: EmitFn, request: Callable[[float], _T]) -> _T:
        """Run ``request(timeout_s)`` with retries; every failure comes out as ModelError."""
        cfg = self.config
        started = time.monotonic()

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            wait = state.next_action.sleep if state.next_action is not None else 0.0
            emit(
                "model.retry",
                {
                    "attempt": state.attempt_number,
                    "wait_s": round(float(wait), 3),
                    "reason": self._reason(exc) if exc is not None else "unknown",
                },
            )

        def attempt() -> _T:
            # The last attempt may not run past the total budget by a whole request timeout.
            remaining = cfg.max_retry_time_s - (time.monotonic() - started)
            timeout = min(cfg.request_timeout_s, max(remaining, 1.0))
            return request(timeout)

        retrying = Retrying(
            retry=retry_if_exception(is_retryable),
            stop=stop_after_attempt(cfg.max_attempts) | stop_after_delay(cfg.max_retry_time_s),
            wait=self._wait,
            before_sleep=before_sleep,
            reraise=False,
        )
        try:
            return retrying(attempt)
        except RetryError as e:
            last = e.last_attempt
            exc = last.exception()
            reason = self._reason(exc) if exc is not None else "unknown"
            raise ModelError(
                f"model unavailable after {last.attempt_number} attempts over "
                f"{time.monotonic() - started:.1f} s: {reason}"
            ) from None
        except openai.APIStatusError as e:
            raise self._refusal(e) from None
        except ModelError:
            raise
        except Exception as e:
            raise ModelError(
                self._scrub(f"unexpected error from the model client: {type(e).__name__}: {_short(str(e))}")
            ) from None



    # What each adapter supplies: the body, the SDK call, the reply's reading.
    def request_body(self, instructions: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        raise NotImplementedError

    def create(self, body: dict[str, Any], timeout: float) -> Any:
        raise NotImplementedError

    def parse(self, data: Any) -> ModelOutput:
        raise NotImplementedError

    def complete(
        self,
        instructions: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        emit: EmitFn,
    ) -> ModelOutput:
        body = self.request_body(instructions, messages, tools)

        def request(timeout: float) -> Any:
            raw = self.create(body, timeout)
            try:
                return raw.http_response.json()
            except ValueError:
                raise ModelError(
                    f"the server at {self.config.display_base_url} answered with something that is "
                    f"not JSON: {self._scrub(_short(raw.http_response.text, 200))}"
                ) from None

        data = self._call_with_retries(emit, request)
        try:
            return self.parse(data)
        except ModelError:
            raise
        except Exception as e:
            raise ModelError(f"could not read the server's reply: {type(e).__name__}: {e}") from None

# --- Chat Completions ----------------------------------------------------------------------------


def chat_messages(instructions: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The history as Chat Completions messages."""
    out: list[dict[str, Any]] = []
    if instructions:
        out.append({"role": "system", "content": instructions})
    for m in messages:
        if isinstance(m, UserMessage):
            out.append({"role": "user", "content": m.content})
        elif isinstance(m, AssistantMessage):
            msg: dict[str, Any] = {"role": "assistant", "content": m.content}
            if m.tool_calls:
                msg["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": arguments_to_wire(c)},
                    }
                    for c in m.tool_calls
                ]
            elif m.content is None:
                msg["content"] = ""  # neither text nor calls: still a valid message
            out.append(msg)
        elif isinstance(m, ToolResultMessage):
            out.append({"role": "tool", "tool_call_id": m.call_id, "content": m.content})
    return out


def chat_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parse_usage(data: Any) -> Usage | None:
    """``usage`` of a Chat Completions (prompt/completion) or Responses (input/output) reply."""
    if not isinstance(data, dict):
        return None
    inp = _int(data.get("prompt_tokens", data.get("input_tokens")))
    out = _int(data.get("completion_tokens", data.get("output_tokens")))
    total = _int(data.get("total_tokens")) or inp + out
    return Usage(input_tokens=inp, output_tokens=out, total_tokens=total)


def _text(value: Any) -> str | None:
    """Message content: a string, or a list of text parts; blank → None."""
    if isinstance(value, list):
        value = "".join(str(p.get("text", "")) for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    if isinstance(value, str) and value.strip():
        return value
    return None


def make_tool_call(call_id: Any, name: Any, raw_arguments: Any, *, cut_off: bool) -> ToolCall:
    args, raw, error = parse_arguments(raw_arguments, cut_off=cut_off)
    return ToolCall(
        id=call_id if isinstance(call_id, str) and call_id else new_id("call"),
        name=name if isinstance(name, str) else "",
        arguments=args,
        raw_arguments=raw,
        parse_error=error,
    )


def parse_chat_completion(data: Any) -> ModelOutput:
    """A chat.completion body → ModelOutput. Tolerant of what local servers leave out."""
    if not isinstance(data, dict):
        raise ModelError(f"the server's reply is not a JSON object: {_short(json.dumps(data), 200)}")
    usage = parse_usage(data.get("usage"))
    choices = data.get("choices")
    if not choices:
        if data.get("error"):
            err = data["error"]
            said = err.get("message", err) if isinstance(err, dict) else err
            raise ModelError(f"the server answered with an error: {_short(str(said))}")
        return ModelOutput(message=None, finish_reason=None, usage=usage)
    choice = choices[0] if isinstance(choices[0], dict) else {}
    finish_reason = choice.get("finish_reason")
    message = choice.get("message") or {}
    cut_off = finish_reason == "length"
    text = _text(message.get("content"))
    if text is None and isinstance(message.get("refusal"), str) and message["refusal"].strip():
        text = message["refusal"]
    calls: list[ToolCall] = []
    for raw_call in message.get("tool_calls") or []:
        if not isinstance(raw_call, dict):
            continue
        fn = raw_call.get("function") or {}
        calls.append(make_tool_call(raw_call.get("id"), fn.get("name"), fn.get("arguments"), cut_off=cut_off))
    legacy = message.get("function_call")
    if not calls and isinstance(legacy, dict):  # the pre-tools function calling shape
        calls.append(make_tool_call(None, legacy.get("name"), legacy.get("arguments"), cut_off=cut_off))
    return ModelOutput(
        message=text,
        tool_calls=calls,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=usage,
    )


class OpenAIChatClient(_OpenAIClientBase):
    """ModelClient over ``POST {base_url}/chat/completions`` with ``tools``."""

    def request_body(self, instructions: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        cfg = self.config
        body: dict[str, Any] = {"model": cfg.model, "messages": chat_messages(instructions, messages)}
        if tools:  # OpenAI refuses an empty list
            body["tools"] = chat_tools(tools)
        if cfg.temperature is not None:
            body["temperature"] = cfg.temperature
        if cfg.max_tokens is not None:
            # OpenAI's newer models only take max_completion_tokens; local servers know max_tokens.
            key = "max_completion_tokens" if cfg.uses_openai_endpoint else "max_tokens"
            body[key] = cfg.max_tokens
        return body

    def create(self, body: dict[str, Any], timeout: float) -> Any:
        return self._client.chat.completions.with_raw_response.create(**body, timeout=timeout)

    def parse(self, data: Any) -> ModelOutput:
        return parse_chat_completion(data)
