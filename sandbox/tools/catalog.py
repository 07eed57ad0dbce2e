"""The tools the server offers, in one place: their names, where they live, and which ones write.

The server's dispatch table and the host's routing (a writing tool goes
to the write container) all come from here. Tool modules are imported on first use, so a
server that never runs a tool never pays for importing it.
"""

from __future__ import annotations

import importlib

# Not `from typing import ...` at run time: typing is the largest import of the server's boot
# (~2 MB of an idle sandbox); mypy reads these names, the interpreter never needs them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Mapping, Optional

    from sandbox.tools import Context, ToolResult

    Handler = Callable[[Context, Mapping[str, Any], Optional[float]], ToolResult]

# name -> module under sandbox.tools that defines a function of the same name.
TOOL_MODULES: Dict[str, str] = {
    "read_file": "sandbox.tools.read_file",
    "search": "sandbox.tools.search",
    "apply_patch": "sandbox.tools.apply_patch",
    "run_test": "sandbox.tools.run_test",
}

# Tools that change the repository: the host sends them to the write container only.
WRITE_TOOLS = frozenset({"apply_patch"})

NAMES = tuple(TOOL_MODULES)


def load(name: str) -> Handler:
    """The function that runs tool ``name`` (KeyError for an unknown name)."""
    module = importlib.import_module(TOOL_MODULES[name])
    handler: Handler = getattr(module, name)
    return handler
