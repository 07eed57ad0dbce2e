"""Tools served by the in-container server (stdlib only, python3 >= 3.9).

Each tool is a function ``tool(ctx, args, timeout_s) -> ToolResult``:

- ``ctx`` is the server's fixed configuration (root, limits, flags),
- ``args`` is the request's ``args`` object, unvalidated: every tool checks
  names and types itself with the helpers below,
- ``timeout_s`` is the request-level ``timeout_s`` (or None).

A failure the model caused or can fix (bad argument, path refused, missing
file, patch rejected) is raised as ``ToolError``: the server turns it into
``ok: false, outcome: "error"`` with the message as both ``error`` and
``output``. Anything else that escapes a tool is an internal error: the server
logs the traceback to stderr and answers ``ok: false`` with a one-line summary.
"""

from __future__ import annotations

import math

# Not `from typing import ...` at run time: typing is the largest import of the server's boot
# (~2 MB of an idle sandbox); mypy reads these names, the interpreter never needs them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping, Optional, Sequence


class ToolError(Exception):
    """A model-facing error: the message is what the model reads."""

    def __init__(self, message: str, *, data: Optional[dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.message = message
        self.data: dict[str, Any] = dict(data or {})


class ToolResult:
    """What a tool returns (a plain class, not a dataclass: ``dataclasses`` costs the server's
    boot an import of ``inspect``)."""

    __slots__ = ("data", "error", "ok", "outcome", "output")

    def __init__(
        self,
        output: str,
        ok: bool = True,
        outcome: str = "ok",
        error: Optional[str] = None,
        data: Optional[dict[str, Any]] = None,
    ) -> None:
        self.output = output
        self.ok = ok
        self.outcome = outcome
        self.error = error
        self.data: dict[str, Any] = {} if data is None else data

    def __repr__(self) -> str:
        shown = self.output[:80]
        return f"ToolResult(ok={self.ok!r}, outcome={self.outcome!r}, error={self.error!r}, output={shown!r})"


class Context:
    """What every tool may know about the server (fixed for its life)."""

    __slots__ = ("_root_fd", "allow_shell", "literal_in_python", "output_limit", "reap_all", "rg", "rg_via", "root",
                 "wipe_tmp")

    def __init__(
        self,
        root: str,  # the repository root, already realpath'd
        output_limit: int = 32000,  # bytes kept per stream / per tool output
        allow_shell: bool = False,  # run_test accepts {"shell": "..."}
        reap_all: bool = False,  # in a container: every process but us and our ancestors is a leftover
        rg: Optional[str] = None,  # path of ripgrep, None: use the pure-Python search
        wipe_tmp: bool = False,  # run_test empties /tmp before and after each run (a container's own tmpfs only)
        literal_in_python: bool = False,  # a literal search runs in Python even with rg (under gVisor)
        rg_via: Sequence[str] = (),  # the loader that starts rg: the injected runtime's (sandbox.server --runtime)
    ) -> None:
        self.root = root
        self.output_limit = output_limit
        self.allow_shell = allow_shell
        self.reap_all = reap_all
        self.rg = rg
        self.wipe_tmp = wipe_tmp
        self.literal_in_python = literal_in_python
        self.rg_via = tuple(rg_via)
        self._root_fd = -1

    def root_fd(self) -> int:
        """A descriptor of the root the path walks start from, opened once (close-on-exec: no
        test process inherits it)."""
        if self._root_fd < 0:
            from sandbox.tools.paths import open_root

            self._root_fd = open_root(self.root)
        return self._root_fd


# -- argument helpers ---------------------------------------------------------------


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def check_names(tool: str, args: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(k for k in args if k not in allowed)
    if unknown:
        raise ToolError(
            f"{tool}: unknown argument(s) {', '.join(repr(k) for k in unknown)}; accepted: {', '.join(sorted(allowed))}"
        )


def req_str(tool: str, args: Mapping[str, Any], name: str) -> str:
    if args.get(name) is None:
        raise ToolError(f"{tool}: missing required argument {name!r} (a string)")
    return opt_str(tool, args, name) or ""


def opt_str(tool: str, args: Mapping[str, Any], name: str) -> Optional[str]:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolError(f"{tool}: {name!r} must be a string, got {_type_name(value)}")
    return value


def opt_int(tool: str, args: Mapping[str, Any], name: str) -> Optional[int]:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"{tool}: {name!r} must be an integer, got {_type_name(value)}")
    return value


def opt_float(tool: str, args: Mapping[str, Any], name: str) -> Optional[float]:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolError(f"{tool}: {name!r} must be a number, got {_type_name(value)}")
    if not math.isfinite(value):
        raise ToolError(f"{tool}: {name!r} must be a finite number")
    return float(value)


def opt_bool(tool: str, args: Mapping[str, Any], name: str) -> Optional[bool]:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise ToolError(f"{tool}: {name!r} must be true or false, got {_type_name(value)}")
    return value


def opt_str_list(tool: str, args: Mapping[str, Any], name: str) -> Optional[list[str]]:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ToolError(f"{tool}: {name!r} must be an array of strings, got {_type_name(value)}")
    return list(value)


def opt_str_dict(tool: str, args: Mapping[str, Any], name: str) -> Optional[dict[str, str]]:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ToolError(f"{tool}: {name!r} must be an object of string values, got {_type_name(value)}")
    return dict(value)
