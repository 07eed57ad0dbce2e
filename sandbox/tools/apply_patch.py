"""apply_patch {patch} (or {input}, the name Codex's function tool uses)

Wraps ``sandbox.patch.apply_patch`` (imported on first use): the patch is
applied under the server's root, all of it or nothing. A ``PatchError`` becomes
``ok: false, outcome: "error"`` with the error's message, as the model should
read it. data: ``summary`` (``A path`` / ``M path`` / ``D path`` / ``R old ->
new`` lines), ``changed_paths``, ``diff`` (unified, capped), ``diff_truncated``.
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping, Optional

from sandbox.tools import Context, ToolError, ToolResult, check_names, opt_str
from sandbox.tools.output import cap_text

# Used when sandbox.patch does not define its own defaults.
MAX_PATCH_BYTES = 1_000_000
MAX_FILE_BYTES = 5_000_000


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def apply_patch(ctx: Context, args: Mapping[str, Any], timeout_s: Optional[float]) -> ToolResult:
    tool = "apply_patch"
    check_names(tool, args, {"patch", "input"})
    patch = opt_str(tool, args, "patch")
    alt = opt_str(tool, args, "input")
    if patch is not None and alt is not None:
        raise ToolError("apply_patch: give 'patch' or 'input', not both")
    text = patch if patch is not None else alt
    if text is None:
        raise ToolError("apply_patch: missing required argument 'patch' (the patch text)")

    try:
        mod = importlib.import_module("sandbox.patch")
    except ImportError as e:
        raise ToolError(f"apply_patch is not available in this sandbox: {e}") from None
    try:
        result = mod.apply_patch(
            text,
            ctx.root,
            max_patch_bytes=int(getattr(mod, "DEFAULT_MAX_PATCH_BYTES", MAX_PATCH_BYTES)),
            max_file_bytes=int(getattr(mod, "DEFAULT_MAX_FILE_BYTES", MAX_FILE_BYTES)),
            max_diff_chars=max(1000, ctx.output_limit - 4000),
        )
    except mod.PatchError as e:
        raise ToolError(str(e)) from None

    output, _ = cap_text(str(result.text()), ctx.output_limit)
    data = {
        "summary": _jsonable(getattr(result, "summary", None)),
        "changed_paths": _jsonable(list(getattr(result, "changed_paths", []) or [])),
        "diff": _jsonable(getattr(result, "diff", None)),
        "diff_truncated": bool(getattr(result, "diff_truncated", False)),
    }
    return ToolResult(output=output, data=data)
