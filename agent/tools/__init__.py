"""The four tools the model may call: one module per tool (host side), and the registry.

Each handler runs on the host and forwards to the sandbox, where the real tool runs
inside the task's container (``sandbox/tools/``).
"""

from agent.tools.apply_patch import ApplyPatchArgs, ApplyPatchTool
from agent.tools.base import (
    RunEffects,
    SandboxPort,
    ToolArgs,
    ToolContext,
    ToolHandler,
    ToolInputError,
)
from agent.tools.read_file import ReadFileArgs, ReadFileTool
from agent.tools.registry import PreparedCall, ToolRegistry, default_tools, format_validation_error
from agent.tools.run_test import RunTestArgs, RunTestTool
from agent.tools.search import SearchArgs, SearchTool

__all__ = [
    "ApplyPatchArgs",
    "ApplyPatchTool",
    "PreparedCall",
    "ReadFileArgs",
    "ReadFileTool",
    "RunEffects",
    "RunTestArgs",
    "RunTestTool",
    "SandboxPort",
    "SearchArgs",
    "SearchTool",
    "ToolArgs",
    "ToolContext",
    "ToolHandler",
    "ToolInputError",
    "ToolRegistry",
    "default_tools",
    "format_validation_error",
]
