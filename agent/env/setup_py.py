"""What a setup.py passes to ``setup()``, read from its syntax tree: literals only, never executed.

Arguments computed at run time (``install_requires=read_reqs()``) are reported as not read.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from agent.env.errors import EnvError
from agent.env.safe_read import check_nesting, read_text

_WANTED = ("name", "version", "install_requires", "extras_require", "tests_require", "python_requires",
           "package_dir", "entry_points")


class SetupCall:
    """The literal keyword arguments of the first ``setup(...)`` call, and which ones were not literal."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.computed: list[str] = []
        self.has_extensions = False


def _is_setup(call: ast.Call) -> bool:
    func = call.func
    return (isinstance(func, ast.Name) and func.id == "setup") or (
        isinstance(func, ast.Attribute) and func.attr == "setup"
    )


def read_setup_py(repo: Path, relative: str = "setup.py") -> SetupCall | None:
    text = read_text(repo, relative)
    if text is None:
        return None
    try:
        tree = ast.parse(text, filename=relative)
    except (SyntaxError, ValueError) as exc:
        raise EnvError(f"{relative}: not valid Python ({exc.__class__.__name__}: {exc}); refused", usage=True) from None
    except (RecursionError, MemoryError):
        raise EnvError(f"{relative}: nested too deeply to parse; refused", usage=True) from None
    result = SetupCall()
    result.has_extensions = "Extension(" in text or "ext_modules" in text or "cythonize(" in text
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_setup(node):
            _keywords(node, result, relative)
            break
    return result


def _keywords(call: ast.Call, result: SetupCall, relative: str) -> None:
    for keyword in call.keywords:
        if keyword.arg not in _WANTED:
            continue
        try:
            value = ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            result.computed.append(keyword.arg)
            continue
        check_nesting(value, relative)
        result.values[keyword.arg] = value
