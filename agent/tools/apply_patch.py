"""apply_patch, host side: the patch is parsed here first, so a malformed patch never reaches the
policy or the sandbox, and the policy sees every path it writes (a Move to target included)."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, Field

from agent.sandboxes.result import ToolResult
from agent.tools.base import RunEffects, ToolArgs, ToolHandler, ToolInputError
from sandbox.patch import PatchError, patch_paths


class ApplyPatchArgs(ToolArgs):
    patch: str = Field(
        min_length=1,
        validation_alias=AliasChoices("patch", "input"),
        description="The whole patch, from '*** Begin Patch' to '*** End Patch'.",
    )


class ApplyPatchTool(ToolHandler):
    name = "apply_patch"
    description = (
        "Edit files with a patch in this format:\n"
        "*** Begin Patch\n"
        "*** Update File: path/a.py\n"
        "@@ def handler():\n"
        " context line\n"
        "-removed line\n"
        "+added line\n"
        "*** Add File: path/new.py\n"
        "+new line\n"
        "*** Delete File: path/old.py\n"
        "*** End Patch\n"
        "Paths are relative to the repository root. Context lines must match the file."
    )
    args_model = ApplyPatchArgs

    def inspect(self, args: BaseModel) -> list[str]:
        assert isinstance(args, ApplyPatchArgs)
        try:
            return [path for _op, path in patch_paths(args.patch)]
        except PatchError as exc:
            raise ToolInputError(str(exc)) from exc

    def summary(self, arguments: dict[str, Any]) -> str:
        try:
            paths = [path for _op, path in patch_paths(str(arguments.get("patch") or arguments.get("input") or ""))]
        except PatchError:
            return "(unparsable patch)"
        return ", ".join(paths[:3]) + (f" +{len(paths) - 3}" if len(paths) > 3 else "")

    def note_effects(self, write_paths: list[str], result: ToolResult, effects: RunEffects) -> None:
        if not result.ok:
            return
        for path in result.data.get("changed_paths") or write_paths:
            if path not in effects.files_changed:
                effects.files_changed.append(path)
