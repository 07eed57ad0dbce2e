"""apply_patch {patch} (or {input}, the name Codex's function tool uses)

Wraps ``sandbox.patch.apply_patch`` (imported on first use): the patch is
applied under the server's root, all of it or nothing. A ``PatchError`` becomes
``ok: false, outcome: "error"`` with the error's message, as the model should
read it. data: ``summary`` (``A path`` / ``M path`` / ``D path`` / ``R old ->
new`` lines), ``changed_paths``, ``diff`` (unified, capped), ``diff_truncated``,
and ``net_diffs``: for each file this patch touched, the diff from its content before
the first patch of this server's life (the run's write container lives as long as the
run) to its content now, "" when it is back as it was, null when its first content was
not kept (over NET_MEMORY_BYTES); ``net_truncated``. The host shows the run's changes
from these, once per file, rather than patch after patch.
"""

from __future__ import annotations

import importlib
import os
import re
import stat
from typing import Any, Dict, List, Mapping, Optional, Tuple

from sandbox.tools import Context, ToolError, ToolResult, check_names, opt_str
from sandbox.tools.output import cap_text

# Used when sandbox.patch does not define its own defaults.
MAX_PATCH_BYTES = 1_000_000
MAX_FILE_BYTES = 5_000_000
EXEC_BITS = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
NET_MEMORY_BYTES = 64 * 1024 * 1024  # first contents kept for the net diffs; past it a file's is not
_MISSING = object()
# path -> its content before the first patch that touched it (None: there was no file)
_FIRST: Dict[str, Optional[bytes]] = {}
_first_bytes = 0
# C0, DEL, C1, bidi overrides and line separators (the host policy refuses the same set).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _refuse_control_paths(paths: List[Tuple[str, str]]) -> None:
    for _op, path in paths:
        if _CONTROL.search(path):
            raise ToolError(f"apply_patch: refused: the path {path!r} contains a control character")


def _exec_modes(root: str, paths: List[Tuple[str, str]]) -> Dict[str, bool]:
    """For each path a patch writes: was it an executable regular file before?"""
    before: Dict[str, bool] = {}
    for _op, rel in paths:
        try:
            st = os.lstat(os.path.join(root, rel))
        except OSError:
            before[rel] = False
            continue
        before[rel] = stat.S_ISREG(st.st_mode) and bool(st.st_mode & EXEC_BITS)
    return before


def _strip_new_exec_bits(root: str, before: Dict[str, bool]) -> None:
    """Clear the exec bits of any written file that was not executable before (a move
    carries its source's mode; an add over nothing gets the umask's)."""
    for rel, was_exec in before.items():
        if was_exec:
            continue
        path = os.path.join(root, rel)
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_mode & EXEC_BITS:
                os.chmod(path, stat.S_IMODE(st.st_mode) & ~EXEC_BITS)
        except OSError:
            continue


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
        paths = list(mod.patch_paths(text))
    except mod.PatchError as e:
        raise ToolError(str(e)) from None
    _refuse_control_paths(paths)
    before = _exec_modes(ctx.root, paths)
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
    _strip_new_exec_bits(ctx.root, before)

    output, _ = cap_text(str(result.text()), ctx.output_limit)
    nets, net_cut = _net_diffs(list(getattr(result, "files", []) or []), max(1000, ctx.output_limit - 4000))
    data = {
        "summary": _jsonable(getattr(result, "summary", None)),
        "changed_paths": _jsonable(list(getattr(result, "changed_paths", []) or [])),
        "diff": _jsonable(getattr(result, "diff", None)),
        "diff_truncated": bool(getattr(result, "diff_truncated", False)),
        "net_diffs": nets,
        "net_truncated": net_cut,
    }
    return ToolResult(output=output, data=data)


NetDiffs = Dict[str, Optional[str]]


def _net_diffs(files: List[Tuple[str, Optional[bytes], Optional[bytes]]], limit: int) -> Tuple[NetDiffs, bool]:
    """Each touched file's diff from its first content (kept at its first patch) to now."""
    global _first_bytes
    diffs = importlib.import_module("sandbox.patch.diff")
    nets: NetDiffs = {}
    cut_any = False
    for rel, before, after in files:
        first = _FIRST.get(rel, _MISSING)
        if first is _MISSING:
            size = len(before or b"")
            if _first_bytes + size > NET_MEMORY_BYTES:
                nets[rel] = None
                continue
            _FIRST[rel] = before
            _first_bytes += size
            first = before
        assert first is None or isinstance(first, bytes)
        if first is None and after is None:  # added, then deleted again
            nets[rel] = ""
            continue
        diff, cut = diffs.cap_diff(diffs.file_diff(first, after, rel, rel), limit)
        nets[rel] = diff
        cut_any = cut_any or cut
    return nets, cut_any
