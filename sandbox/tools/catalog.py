"""The tools the server offers, in one place: their names, where they live, which ones write and
which ones run repository code.

The server's dispatch table, the host's routing (a writing tool goes to the write container) and
the host's handling of a code-running call all come from here; nothing else names a tool. Tool
modules are imported on first use, so a server that never runs a tool never pays for importing it.
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

# Tools that change the repository: the host sends them to the write container only, and the
# write container serves nothing else.
WRITE_TOOLS = frozenset({"apply_patch"})

# Tools that run repository code: their own ``timeout_s`` argument bounds the run (the host
# fills it in when the model gave none), the host asks the daemon about OOM kills after a failed
# run, and the server stops what they started (their module's ``shutdown()``) before it exits.
CODE_TOOLS = frozenset({"run_test"})

NAMES = tuple(TOOL_MODULES)


def load(name: str) -> Handler:
    """The function that runs tool ``name`` (KeyError for an unknown name)."""
    module = importlib.import_module(TOOL_MODULES[name])
    handler: Handler = getattr(module, name)
    return handler
