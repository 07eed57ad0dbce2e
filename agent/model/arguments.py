"""Tool-call arguments as models send them: usually a JSON object in a string, sometimes not."""

from __future__ import annotations

import json
from typing import Any


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if value is None:
        return "null"
    return type(value).__name__


def parse_arguments(raw: Any, *, cut_off: bool = False) -> tuple[dict[str, Any], str | None, str | None]:
    """Tool call arguments as the model sent them → (arguments, raw_arguments, parse_error).

    Valid: a JSON object, an empty string (no arguments), a JSON string holding a JSON object
    (double-encoded, common: decoded once more), or an object (some servers send one).
    Anything else keeps ``raw`` and says what was wrong, so the model can resend.
    """
    if raw is None:
        return {}, None, None
    if isinstance(raw, dict):
        return raw, None, None
    if not isinstance(raw, str):
        return {}, json.dumps(raw), f"arguments must be a JSON object, got {_json_kind(raw)}"
    if not raw.strip():
        return {}, None, None
    hint = " (the reply was cut off at the token limit)" if cut_off else ""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        # Some of json's messages end in "at" ("Unterminated string starting at"): no "at at".
        what = e.msg.removesuffix(" at")
        # The tool registry adds what to do ("Send the arguments as one JSON object."): said once.
        return {}, raw, f"arguments are not valid JSON: {what} at line {e.lineno} column {e.colno}{hint}"
    if isinstance(value, str):
        try:
            inner = json.loads(value)
        except json.JSONDecodeError:
            inner = None
        if isinstance(inner, dict):
            return inner, None, None
    if not isinstance(value, dict):
        return {}, raw, f"arguments must be a JSON object, got {_json_kind(value)}{hint}"
    return value, None, None


