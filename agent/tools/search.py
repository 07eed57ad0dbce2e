"""search, host side: arguments, console summary (the query)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from agent.tools.base import ToolArgs, ToolHandler


class SearchArgs(ToolArgs):
    query: str = Field(min_length=1, description="Text to find (a regular expression if regex is true).")
    path: str | None = Field(default=None, description="Limit the search to this file or directory.")
    glob: str | None = Field(default=None, description="Only files matching this glob, e.g. '*.py'.")
    regex: bool = Field(default=False, description="Treat query as a regular expression.")
    max_results: int | None = Field(default=None, ge=1, le=500, description="At most this many matches.")


class SearchTool(ToolHandler):
    name = "search"
    description = (
        "Search the repository's files for text (literal by default). "
        "Returns 'path:line: text' for each match."
    )
    args_model = SearchArgs

    def summary(self, arguments: dict[str, Any]) -> str:
        return repr(arguments.get("query", ""))
