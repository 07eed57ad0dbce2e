"""read_file, host side: arguments, console summary (the file and the line range)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from agent.tools.base import ToolArgs, ToolHandler


class ReadFileArgs(ToolArgs):
    path: str = Field(min_length=1, description="File path relative to the repository root.")
    start_line: int | None = Field(default=None, ge=1, description="First line to read (1-based).")
    end_line: int | None = Field(default=None, ge=1, description="Last line to read (inclusive).")


class ReadFileTool(ToolHandler):
    name = "read_file"
    description = (
        "Read a text file of the repository, with line numbers. "
        "Use start_line/end_line for a part of a large file."
    )
    args_model = ReadFileArgs

    def summary(self, arguments: dict[str, Any]) -> str:
        rng = ""
        if "start_line" in arguments:
            rng = f":{arguments.get('start_line', '')}-{arguments.get('end_line', '')}"
        return f"{arguments.get('path', '')}{rng}"
