"""What a setup.py passes to ``setup()``, read from its syntax tree (``static_eval``), never executed.

Literal arguments are read, and so are names bound at module level before the call
(``EXTRAS_REQUIRE = {...}; EXTRAS_REQUIRE["dev"] = ...; setup(extras_require=EXTRAS_REQUIRE)``).
An argument only running the file would tell is listed in ``computed`` with the reason.
Compiled extensions are decided from the tree too: ``ext_modules=[]`` is none, ``Extension(...)``,
``cythonize(...)``, ``cffi_modules``/``rust_extensions`` or a non-empty ``ext_modules`` are some.
"""

from __future__ import annotations

import ast
import reprlib
from pathlib import Path
from typing import Any

from agent.env.errors import EnvError
from agent.env.read.safe_read import check_nesting, read_text
from agent.env.read.static_eval import (
    EXTENSION_CALLS,
    EXTENSION_LISTS,
    EXTENSION_NAMES,
    Evaluator,
    ExtensionMarker,
    NotStatic,
)

WANTED = ("name", "version", "install_requires", "extras_require", "tests_require", "python_requires",
          "package_dir", "entry_points", "setup_requires")
EXTENSION_KEYS = ("ext_modules", "cffi_modules", "rust_extensions")
# Keywords whose computed value leaves the project's dependency metadata unknown.
METADATA_KEYS = ("install_requires", "extras_require")
_SHORT = reprlib.Repr()  # a value shown in a note: bounded however much it nests or repeats
_SHORT.maxstring = _SHORT.maxother = 80


class SetupCall:
    """The first ``setup(...)`` call: its statically known arguments, and which ones were computed."""

    def __init__(self, relative: str = "setup.py") -> None:
        self.relative = relative
        self.found = False  # a setup(...) call is in the file
        self.values: dict[str, Any] = {}
        self.computed: dict[str, str] = {}  # keyword -> why it is not known statically
        self.extensions: list[str] = []  # why the project has compiled extensions (empty: none)
        # An extension keyword computed by code the file does not show (astropy's ``get_extensions()``):
        # the tree's C/Cython sources decide then (read/declared.py).
        self.computed_extensions = ""
        self.notes: list[str] = []

    @property
    def has_extensions(self) -> bool:
        return bool(self.extensions)


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
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise EnvError(f"{relative}: not valid Python ({exc.__class__.__name__}: {reason}); refused",
                       usage=True) from None
    except (RecursionError, MemoryError):
        raise EnvError(f"{relative}: nested too deeply to parse; refused", usage=True) from None
    result = SetupCall(relative)
    evaluator = Evaluator(tree)
    calls = [n for n in evaluator.calls if _is_setup(n)]
    if not calls:
        result.extensions = _extension_calls(evaluator)
        return result
    result.found = True
    try:
        evaluator.run_until(calls[0])
    except RecursionError:
        raise EnvError(f"{relative}: nested too deeply to read; refused", usage=True) from None
    _arguments(calls[0], evaluator, result)
    _decide_extensions(evaluator, result)
    return result


def _arguments(call: ast.Call, evaluator: Evaluator, result: SetupCall) -> None:
    splat: str | None = None
    for keyword in call.keywords:
        if keyword.arg is None:  # setup(**kwargs)
            try:
                spread = evaluator.value(keyword.value)
            except NotStatic as exc:
                splat = str(exc)
                continue
            if type(spread) is dict:
                for key, value in spread.items():
                    if key in (*WANTED, *EXTENSION_KEYS):
                        _keep(result, str(key), value, evaluator)
            continue
        if keyword.arg not in (*WANTED, *EXTENSION_KEYS):
            continue
        try:
            value = evaluator.value(keyword.value)
        except NotStatic as exc:
            result.computed[keyword.arg] = str(exc)
            continue
        _keep(result, keyword.arg, value, evaluator)
    if splat is not None:
        for key in (*WANTED, *EXTENSION_KEYS):
            if key not in result.values and key not in result.computed:
                result.computed[key] = f"passed through **kwargs: {splat}"


def _keep(result: SetupCall, key: str, value: Any, evaluator: Evaluator) -> None:
    changed = evaluator.changed_by(value)
    if changed is not None:
        result.computed[key] = f"changed by code not followed: {changed}"
        return
    if key not in EXTENSION_KEYS:
        if _holds(value, ExtensionMarker):
            result.computed[key] = "holds an Extension object"
            return
        check_nesting(value, f"{result.relative} {key}=")
    result.values[key] = value


def _holds(value: Any, kind: type, budget: int = 10_000) -> bool:
    pending = [value]
    while pending and budget > 0:
        budget -= 1
        item = pending.pop()
        if isinstance(item, kind):
            return True
        if type(item) is dict:
            pending.extend([*item.keys(), *item.values()])
        elif type(item) in (list, tuple, set):
            pending.extend(item)
    return False


def _decide_extensions(evaluator: Evaluator, result: SetupCall) -> None:
    where = result.relative
    computed = []
    for key in EXTENSION_KEYS:
        if key in result.values:
            value = result.values.pop(key)
            count = len(value) if type(value) in (list, tuple, dict, set) else 1 if value else 0
            if count:
                shown = ", ".join(_SHORT.repr(v) for v in list(value)[:3]) if type(value) in (list, tuple) else key
                result.extensions.append(f"{where} {key}= lists {count} ({shown})")
        elif key in result.computed:
            computed.append((key, result.computed.pop(key)))
    if computed and not result.extensions:
        key, why = computed[0]
        found = _extension_calls(evaluator)
        if found:
            result.extensions.append(f"{where} {key}= is computed ({why}); the file makes {found[0]}")
        else:
            result.computed_extensions = f"{where} {key}= is computed ({why})"


def _extension_calls(evaluator: Evaluator) -> list[str]:
    """``Extension(...)``-like calls anywhere in the file, as 'Extension(...) at line N'."""
    found = []
    for node in evaluator.calls:
        qualified = evaluator.qualified(node.func)
        bare = node.func.id if isinstance(node.func, ast.Name) else (
            node.func.attr if isinstance(node.func, ast.Attribute) else None)
        if (qualified in EXTENSION_CALLS | EXTENSION_LISTS or bare in EXTENSION_NAMES
                or evaluator.is_extension_class(node.func)):
            found.append((node.lineno, f"{bare}(...) at line {node.lineno}"))
    return [text for _, text in sorted(found)]
