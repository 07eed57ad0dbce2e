"""What the Chat and Responses adapters share: the SDK client, retries, and error messages.

The ``openai`` SDK is built with ``max_retries=0``: tenacity owns the retries here, so each
one is counted, reported (``model.retry``) and bounded in one place. Nothing but
``ModelError`` leaves ``complete()``; its message names the request, the HTTP status and the
server's whole message, and says what to change. The API key is read from the variable the
config names, handed to the SDK, and never put in a repr, an event or an error message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import openai
from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from agent.model.base import EmitFn, ModelError
from agent.model.config import OPENAI_DEFAULT_BASE_URL, PLACEHOLDER_KEY, OpenAIConfig, resolve_api_key
from agent.model.retry_rules import (
    RetryDecider,
    StreamInterrupted,
    is_validation_error,
    parse_retry_after,
    server_message,
    short,
    will_repeat,
)
from agent.protocol import Message, ModelOutput, ToolSpec

_T = TypeVar("_T")

# request(timeout_s, attempt) -> the reply's body as a dict
RequestFn = Callable[[float, int], _T]


class OpenAIClientBase:
    """Config, the SDK client, retries and error messages; an adapter adds body, fetch and parse."""

    endpoint = ""  # the path under the base URL, for messages ("/chat/completions")

    def __init__(self, config: OpenAIConfig | None = None, **options: Any) -> None:
        config = config or OpenAIConfig.from_options(**options)
        if not config.model:
            raise ModelError("no model given: pass --model NAME or set CODEBOX_MODEL")
        self.config = config
        self.name = config.model
        self.requests_made = 0
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

    @property
    def max_output_tokens(self) -> int | None:
        """The cap on one reply, when one is set (the loop's budget check reads it)."""
        return self.config.max_tokens

    def listed_models(self) -> list[str]:
        """The model ids the endpoint lists (GET /models, one attempt, no retry): whether it answers and takes
        the key (`codebox doctor`). Raises ModelError with the reason, the key scrubbed, and the HTTP status."""
        try:
            return [str(model.id) for model in self._client.models.list()]
        except openai.APIStatusError as exc:
            raise ModelError(self._reason(exc), status=exc.status_code) from None
        except Exception as exc:  # no answer, a timeout, a body that is not a model list
            raise ModelError(self._reason(exc)) from None

    # -- messages for people -------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        key = self._key if hasattr(self, "_key") else ""
        if key and key != PLACEHOLDER_KEY and len(key) >= 4:
            text = text.replace(key, "***")
        return text

    def _label(self, messages: int, tools: int) -> str:
        """Names the request in messages: which one, where, and what it carried."""
        url = f"{self.config.display_base_url}{self.endpoint}"
        return f"request {self.requests_made} (POST {url}, {messages} messages, {tools} tools)"

    def _reason(self, exc: BaseException) -> str:
        if isinstance(exc, openai.APIStatusError):
            return self._scrub(f"HTTP {exc.status_code}: {server_message(exc)}")
        if isinstance(exc, openai.APITimeoutError):
            return f"APITimeoutError: no answer within {self.config.request_timeout_s:g} s"
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f" ({type(cause).__name__}: {cause})" if cause else ""
            return self._scrub(short(f"{type(exc).__name__}: {exc.message}{detail}", 300))
        if isinstance(exc, StreamInterrupted):
            return self._scrub(f"stream interrupted: {exc}")
        return self._scrub(short(f"{type(exc).__name__}: {exc}", 300))

    def _status_details(self, exc: BaseException | None) -> dict[str, Any]:
        if isinstance(exc, openai.APIStatusError):
            return {"status": exc.status_code, "body": self._scrub(server_message(exc))}
        return {}

    def _refusal(self, exc: openai.APIStatusError, label: str) -> ModelError:
        """A status error that is not retried → a message that says what to change."""
        said = self._scrub(server_message(exc))
        return ModelError(self._refusal_text(exc, label, said), request=label, status=exc.status_code, body=said)

    def _refusal_text(self, exc: openai.APIStatusError, label: str, said: str) -> str:
        cfg = self.config
        url = cfg.display_base_url
        status = exc.status_code
        if status == 401:
            unset = f"; {cfg.api_key_env} is not set" if self._key == PLACEHOLDER_KEY else ""
            return f"authentication failed: set {cfg.api_key_env} to a valid key{unset} (server at {url} said: {said})"
        if status == 403:
            return (
                f"permission denied at {url} for model '{cfg.model}': {said} "
                f"(check that the key in {cfg.api_key_env} may use this model)"
            )
        if status == 404:
            return self._not_found_hint(exc, said)
        if status in (400, 422):
            return f"{label} was rejected with HTTP {status}: {said}"
        if status >= 500 and is_validation_error(said):
            return (
                f"{label} was refused with HTTP {status}, a validation error (the same request would be "
                f"refused again, so it was not retried): {said}"
            )
        if will_repeat(exc):
            return f"{label} was refused with HTTP {status}: the server does not support it (not retried): {said}"
        return f"{label} failed with HTTP {status}: {said}"

    def _not_found_hint(self, exc: openai.APIStatusError, said: str) -> str:
        cfg = self.config
        url = cfg.display_base_url
        body = exc.body if isinstance(exc.body, dict) else {}
        inner = body.get("error", body)
        code = inner.get("code") if isinstance(inner, dict) else None
        about_model = code == "model_not_found" or cfg.model in said
        if cfg.api == "responses" and not about_model:
            return (
                f"this server has no Responses API (POST {url}/responses answered 404): "
                f"use --api chat (server said: {said})"
            )
        return (
            f"model '{cfg.model}' not found at {url} (check --model and --base-url; "
            f"local servers usually want a base URL ending in /v1): {said}"
        )

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

    def _call_with_retries(self, emit: EmitFn, request: RequestFn[_T], label: str) -> _T:
        """Run ``request(timeout_s, attempt)`` with retries; every failure comes out as ModelError."""
        cfg = self.config
        started = time.monotonic()
        decider = RetryDecider()
        attempts = 0

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            wait = state.next_action.sleep if state.next_action is not None else 0.0
            data: dict[str, Any] = {
                "attempt": state.attempt_number,
                "wait_s": round(float(wait), 3),
                "reason": self._reason(exc) if exc is not None else "unknown",
                "request": label,
            }
            emit("model.retry", data | self._status_details(exc))

        def attempt() -> _T:
            nonlocal attempts
            attempts += 1
            # The last attempt may not run past the total budget by a whole request timeout.
            remaining = cfg.max_retry_time_s - (time.monotonic() - started)
            timeout = min(cfg.request_timeout_s, max(remaining, 1.0))
            return request(timeout, attempts)

        retrying = Retrying(
            retry=retry_if_exception(decider),
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
                f"model unavailable: {label} failed {last.attempt_number} times over "
                f"{time.monotonic() - started:.1f} s: {reason}",
                request=label,
                **self._status_details(exc),
            ) from None
        except (openai.APIStatusError, StreamInterrupted) as e:
            if decider.repeated:
                raise ModelError(
                    f"{label} failed with the same answer twice in a row, so it was not retried again: "
                    f"{self._reason(e)}",
                    request=label,
                    **self._status_details(e),
                ) from None
            if isinstance(e, StreamInterrupted):  # not retryable only when it repeated
                raise ModelError(f"{label}: {self._reason(e)}", request=label) from None
            raise self._refusal(e, label) from None
        except ModelError:
            raise
        except Exception as e:
            raise ModelError(
                self._scrub(f"unexpected error from the model client: {type(e).__name__}: {short(str(e))}"),
                request=label,
            ) from None

    # -- what each adapter supplies: the body, the fetch, the reply's reading -----------------

    def request_body(self, instructions: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        raise NotImplementedError

    def fetch(self, body: dict[str, Any], timeout: float, attempt: int, emit: EmitFn) -> Any:
        """One attempt: send ``body``, return the reply as a JSON value. Errors propagate raw."""
        raise NotImplementedError

    def parse(self, data: Any) -> ModelOutput:
        raise NotImplementedError

    def json_of(self, raw: Any) -> Any:
        """The JSON of a ``with_raw_response`` reply; a page that is not JSON is a ModelError."""
        try:
            return raw.http_response.json()
        except ValueError:
            raise ModelError(
                f"the server at {self.config.display_base_url} answered with something that is "
                f"not JSON: {self._scrub(short(raw.http_response.text, 200))}"
            ) from None

    def complete(
        self,
        instructions: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        emit: EmitFn,
    ) -> ModelOutput:
        body = self.request_body(instructions, messages, tools)
        self.requests_made += 1
        label = self._label(len(messages), len(tools))
        data = self._call_with_retries(emit, lambda timeout, n: self.fetch(body, timeout, n, emit), label)
        try:
            return self.parse(data)
        except ModelError:
            raise
        except Exception as e:
            raise ModelError(f"could not read the server's reply to {label}: {type(e).__name__}: {e}") from None
