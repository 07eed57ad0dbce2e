"""What an untrusted project may set: per key, the comparison that says whether its value tightens the default.

A project's settings (agent.settings.sources) sit right above the built-in defaults, so an untrusted
project's value is compared with the default it replaces. It counts when it is no looser: a lower
limit, a stricter policy (read-only < ask < workspace-write), an allow list narrower than every
path that names no file the host runs by itself, more deny rules. A key that redirects
(the model, its endpoint, the key's variable, the API, the image) or names a command is never
taken from an untrusted project. `RULES` is the table; docs/configuration.md shows it, and a test
checks that every setting has a rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from agent import defaults

Check = Callable[[Any], str | None]  # the value (already valid) -> why it is refused, None when it counts


class Rule(NamedTuple):
    """How an untrusted project's value of one key is judged."""

    may: str  # what an untrusted project may do with the key, in a few words (the docs' table)
    refusal: Check


def _never(why: str) -> Rule:
    return Rule(f"nothing: {why}", lambda _value: why)


def _at_most(default: float | None, unit: str = "") -> Rule:
    """Lower is tighter; a default of None is no limit, so any value tightens it."""

    def check(value: Any) -> str | None:
        if default is None or value <= default:
            return None
        return f"{_number(value)}{unit} is more than the default {_number(default)}{unit}"

    return Rule(f"lower it (at most {_number(default)}{unit})" if default is not None else "set one (none by default)",
                check)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else format(value, "g")


def _memory(value: Any) -> str | None:
    from agent.sandboxes.config import size_bytes

    if size_bytes(value, "memory limit") <= size_bytes(defaults.DEFAULT_MEMORY, "memory limit"):
        return None
    return f"{value} is more than the default {defaults.DEFAULT_MEMORY}"


POLICY_STRICTNESS = {"read-only": 0, "ask": 1, "workspace-write": 2}  # lower is stricter


def _policy(value: Any) -> str | None:
    if POLICY_STRICTNESS[value] <= POLICY_STRICTNESS[defaults.DEFAULT_POLICY]:
        return None
    return f"{value} allows more than the default {defaults.DEFAULT_POLICY}"


def _allow(value: Any) -> str | None:
    """Narrower than every path but the files the host runs by itself (the default), or refused: a rule
    that matches every path ("**") is no narrower, one that names a host-run file explicitly is wider."""
    from agent.task.host_run import HOST_RUN_GLOBS, names_explicitly

    for rule in value:  # repository-relative by construction (a leading / anchors at its root)
        if not rule.startswith("!") and not rule.strip("*/"):
            return f"{rule!r} makes every path writable"
        for area in HOST_RUN_GLOBS:
            if names_explicitly(rule, area):
                return f"{rule!r} makes {area} writable: files the host runs by itself"
    return None


# The rules agent.defaults.SETTINGS names by their key (a project field "policy" is judged by _policy ...).
_NAMED: dict[str, Rule] = {
    "policy": Rule("make it stricter (read-only < ask < workspace-write)", _policy),
    "allow": Rule("narrow it: no rule that matches every path (`**`), none that names a file the host runs "
                  "(`.husky/**`, `.envrc` ...)", _allow),
    "deny": Rule("set it (any deny rules)", lambda _value: None),
    "memory": Rule(f"lower it (at most {defaults.DEFAULT_MEMORY})", _memory),
    "request_timeout": _at_most(defaults.DEFAULT_REQUEST_TIMEOUT_S, " s"),  # None means the model's own default
}


def _rule(key: str) -> Rule:
    """The rule SETTINGS[key].project names."""
    setting = defaults.SETTINGS[key]
    if setting.project.startswith("never: "):
        return _never(setting.project.removeprefix("never: "))
    if setting.project == "at_most":
        unit = " s" if key.endswith("timeout") else ""
        return _at_most(setting.default, unit)
    return _NAMED[setting.project]


RULES: dict[str, Rule] = {key: _rule(key) for key in defaults.SETTINGS}


def refusal(key: str, value: Any) -> str | None:
    """Why an untrusted project's (valid) value of ``key`` does not count; None when it tightens."""
    rule = RULES.get(key)
    if rule is None:  # a key without a rule is taken from trusted projects only
        return "codebox has no rule for this key"
    return rule.refusal(value)
