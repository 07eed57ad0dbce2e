"""Values in a setup.py worked out from its syntax tree, statement by statement, never run.

The statements before the ``setup(...)`` call are followed in order: assignments of literals,
of names bound earlier, ``+`` of lists/tuples/strings, ``|`` of dicts/sets, ``dict(...)``,
``list(...)``, ``sorted(...)``, f-strings of known strings, subscripts, and in-place changes of
a known list/dict/set (``X["dev"] = ...``, ``X += [...]``, ``X.append(...)``, ``X.update(...)``),
with Python's own aliasing (values are real lists and dicts, shared like Python shares them).

Anything else (an ``if``/``for``/``with``/``try`` block, a call of anything but the builtins
above, a ``global`` in a function) makes what it touches unknown: the names it binds, and every
list/dict/set it could change (those it names, and those that the functions it calls name).
A value read through something unknown is "computed", with the line that made it so.

``Extension(...)``, ``cythonize(...)`` and their kin (imported under any name) evaluate to a
marker, so ``ext_modules=[Extension(...)]`` reads as "has compiled extensions" and
``ext_modules=[]`` as "has none". Sizes and steps are capped: a file cannot make the reader slow.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterator
from typing import Any

MAX_ITEMS = 100_000  # elements of one list/dict/set, characters of one string
MAX_STEPS = 200_000  # expressions evaluated in one file
MAX_DEPTH = 100  # expressions inside each other
# Callables whose result is a compiled extension (or a list of them), by qualified and bare name.
EXTENSION_CALLS = {
    "setuptools.Extension", "setuptools.extension.Extension", "distutils.core.Extension",
    "distutils.extension.Extension", "Cython.Distutils.Extension", "Cython.Distutils.extension.Extension",
    "pybind11.setup_helpers.Pybind11Extension", "torch.utils.cpp_extension.CppExtension",
    "torch.utils.cpp_extension.CUDAExtension", "setuptools_rust.RustExtension", "numpy.distutils.core.Extension",
}
EXTENSION_LISTS = {"Cython.Build.cythonize", "Cython.Build.Dependencies.cythonize", "mypyc.build.mypycify"}
EXTENSION_NAMES = {q.rsplit(".", 1)[1] for q in EXTENSION_CALLS | EXTENSION_LISTS}
_MUTATORS = {"append", "extend", "insert", "update", "setdefault", "add", "discard", "remove", "pop", "clear"}
_READERS = {"copy", "keys", "values", "items", "split", "splitlines", "strip", "join", "lower", "get"}


class NotStatic(Exception):
    """The value depends on something only running the file would tell; the message says what."""


class ExtensionMarker:
    """What ``Extension(...)`` or its kin would return: a compiled extension, its arguments unread."""

    def __init__(self, kind: str, line: int) -> None:
        self.kind = kind
        self.line = line

    def __repr__(self) -> str:
        return f"{self.kind}(...)"


class _Opaque:
    """A module, function or class bound to a name: never a value, but known by what it is."""

    def __init__(self, qualified: str, node: ast.AST | None = None) -> None:
        self.qualified = qualified
        self.node = node


class _Unknown:
    def __init__(self, why: str) -> None:
        self.why = why


class Scope:
    """Names to values (or _Unknown), with the module's scope behind a function's."""

    def __init__(self, parent: Scope | None = None) -> None:
        self.names: dict[str, Any] = {}
        self.parent = parent

    def lookup(self, name: str) -> Any:
        if name in self.names:
            return self.names[name]
        if self.parent is not None:
            return self.parent.lookup(name)
        raise KeyError(name)


class Evaluator:
    """One file's statements followed in order; ``value`` evaluates an expression against them."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        # One walk of the tree for everything asked of it later: parents, calls, globals.
        self.parents: dict[int, ast.AST] = {}
        self.calls: list[ast.Call] = []
        globals_: set[str] = set()
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent
            if isinstance(parent, ast.Call):
                self.calls.append(parent)
            elif isinstance(parent, ast.Global):  # rebound by a function: its value depends on when it runs
                globals_.update(parent.names)
        self.calls.sort(key=lambda n: (n.lineno, n.col_offset))
        self.module = Scope()
        self.scope = self.module
        self.steps = 0
        # id -> (the object, kept alive so its id stays its own; the statement that may change it)
        self._tainted: dict[int, tuple[Any, str]] = {}
        self._functions: dict[str, ast.AST] = {}
        self._volatile = globals_

    # --- statements -------------------------------------------------------------------------

    def run(self, statements: list[ast.stmt]) -> None:
        for statement in statements:
            self.statement(statement)

    def statement(self, node: ast.stmt) -> None:
        try:
            if self._precise(node):
                return
        except NotStatic as exc:
            self._opaque(node, str(exc))
            return
        self._opaque(node, f"line {node.lineno}: {_describe(node)}")

    def _precise(self, node: ast.stmt) -> bool:
        """Follow ``node`` exactly; False when it is not a statement this reader follows."""
        if isinstance(node, ast.Assign):
            value = self.value(node.value)
            for target in node.targets:
                self._store(target, value)
            return True
        if isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self._store(node.target, self.value(node.value))
            return True
        if isinstance(node, ast.AugAssign):
            current = self.value(_as_load(node.target))
            self._store(node.target, self._inplace(node.op, current, self.value(node.value), node))
            return True
        if isinstance(node, ast.Expr):
            return self._expression_statement(node.value)
        if isinstance(node, ast.Import | ast.ImportFrom):
            self._import(node)
            return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            self.scope.names[node.name] = _Opaque(node.name, node)
            self._functions[node.name] = node
            return True
        if isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.scope.names[target.id] = _Unknown(f"line {node.lineno}: deleted")
                else:
                    return False
            return True
        return isinstance(node, ast.Pass | ast.Global | ast.Nonlocal)

    def _expression_statement(self, call: ast.expr) -> bool:
        if isinstance(call, ast.Constant):  # a docstring
            return True
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in _MUTATORS):
            return False
        try:
            target = self.value(call.func.value)
        except NotStatic:
            return False  # helper.add(R): described as the call it is
        if type(target) not in (list, dict, set):
            return False
        args = [self.value(a) for a in call.args if not isinstance(a, ast.Starred)]
        if len(args) != len(call.args) or call.keywords:
            return False
        method = getattr(target, call.func.attr, None)
        if method is None:
            return False
        try:
            method(*args)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError):
            raise NotStatic(f"line {call.lineno}: .{call.func.attr}() fails") from None
        self._size(target, call)
        return True

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if isinstance(node, ast.Import):
                bound = alias.asname or alias.name.split(".")[0]
                self.scope.names[bound] = _Opaque(alias.name if alias.asname else bound)
            elif alias.name != "*":
                self.scope.names[alias.asname or alias.name] = _Opaque(f"{node.module or ''}.{alias.name}")

    def _store(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.scope.names[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            if type(value) not in (list, tuple) or len(value) != len(target.elts):
                raise NotStatic(f"line {target.lineno}: unpacking")
            for element, item in zip(target.elts, value, strict=True):
                self._store(element, item)
        elif isinstance(target, ast.Subscript):
            container = self.value(target.value)
            key = self.value(target.slice)
            if type(container) is dict or (type(container) is list and type(key) is int):
                try:
                    container[key] = value
                except (IndexError, TypeError):
                    raise NotStatic(f"line {target.lineno}: subscript assignment fails") from None
                self._size(container, target)
            else:
                raise NotStatic(f"line {target.lineno}: assignment into a value that is not a list or dict")
        else:
            raise NotStatic(f"line {target.lineno}: assignment to an attribute")

    def _opaque(self, node: ast.stmt, why: str) -> None:
        """``node`` is not followed: what it binds becomes unknown, what it could change tainted."""
        for name in _stored_names(node):
            self.scope.names[name] = _Unknown(why)
        for name in self._reachable_names(node):
            with contextlib.suppress(KeyError):
                self._taint(self.scope.lookup(name), why)

    def _reachable_names(self, node: ast.AST) -> set[str]:
        """Names ``node`` loads, and those loaded by the local functions it may call (transitively)."""
        names: set[str] = set()
        pending = [node]
        seen: set[str] = set()
        while pending:
            for sub in ast.walk(pending.pop()):
                if isinstance(sub, ast.Name) and sub.id not in names:
                    names.add(sub.id)
                    if sub.id in self._functions and sub.id not in seen:
                        seen.add(sub.id)
                        pending.append(self._functions[sub.id])
        return names

    def _taint(self, value: Any, why: str) -> None:
        pending, budget = [value], MAX_ITEMS
        while pending and budget > 0:
            item = pending.pop()
            budget -= 1
            if type(item) in (list, dict, set) and id(item) not in self._tainted:
                self._tainted[id(item)] = (item, why)
                pending.extend(item.values() if type(item) is dict else item)

    def changed_by(self, value: Any) -> str | None:
        """Why a part of ``value`` may have been changed by a statement not followed; None if none was."""
        pending, budget = [value], MAX_ITEMS
        while pending and budget > 0:
            item = pending.pop()
            budget -= 1
            if type(item) in (list, dict, set):
                if id(item) in self._tainted:
                    return self._tainted[id(item)][1]
                pending.extend(item.values() if type(item) is dict else item)
        return None if not pending else "too large to check"

    # --- expressions --------------------------------------------------------------------------

    def value(self, node: ast.expr, depth: int = 0) -> Any:
        """The value of ``node`` as data (str, numbers, lists, dicts, ExtensionMarker); NotStatic else."""
        self.steps += 1
        if self.steps > MAX_STEPS or depth > MAX_DEPTH:
            raise NotStatic(f"line {node.lineno}: too much to follow")
        result = self._value(node, depth + 1)
        if type(result) in (list, dict, set) and id(result) in self._tainted:
            raise NotStatic(f"changed by code not followed: {self._tainted[id(result)][1]}")
        return result

    def _value(self, node: ast.expr, depth: int) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str | int | float | bool) or node.value is None:
                return node.value
            raise NotStatic(f"line {node.lineno}: a {type(node.value).__name__} constant")
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items: list[Any] = []
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    items.extend(_iterable(self.value(element.value, depth), element))
                else:
                    items.append(self.value(element, depth))
            self._size(items, node)
            if isinstance(node, ast.Tuple):
                return tuple(items)
            return set(_hashable(items, node)) if isinstance(node, ast.Set) else items
        if isinstance(node, ast.Dict):
            result: dict[Any, Any] = {}
            for key, item in zip(node.keys, node.values, strict=True):
                if key is None:
                    result.update(_mapping(self.value(item, depth), item))
                else:
                    result[_hashable([self.value(key, depth)], key)[0]] = self.value(item, depth)
            return self._size(result, node)
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left, depth), self.value(node.right, depth)
            return self._size(_binary(node.op, left, right, node), node)
        if isinstance(node, ast.JoinedStr):
            return self._size(self._fstring(node, depth), node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        raise NotStatic(f"line {node.lineno}: {type(node).__name__} expression")

    def _name(self, node: ast.Name) -> Any:
        if node.id in self._volatile:
            raise NotStatic(f"line {node.lineno}: {node.id} is changed through 'global' in a function")
        try:
            found = self.scope.lookup(node.id)
        except KeyError:
            raise NotStatic(f"line {node.lineno}: {node.id} is not bound before") from None
        if isinstance(found, _Unknown):
            raise NotStatic(found.why)
        if isinstance(found, _Opaque):
            raise NotStatic(f"line {node.lineno}: {node.id} is a module, function or class")
        return found

    def _fstring(self, node: ast.JoinedStr, depth: int) -> str:
        parts, total = [], 0
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                parts.append(part.value)
            elif isinstance(part, ast.FormattedValue) and part.conversion == -1 and part.format_spec is None:
                inner = self.value(part.value, depth)
                if type(inner) not in (str, int):
                    raise NotStatic(f"line {node.lineno}: an f-string of a {type(inner).__name__}")
                parts.append(str(inner))
            else:
                raise NotStatic(f"line {node.lineno}: a formatted f-string")
            total += len(parts[-1])
            if total > MAX_ITEMS:  # before the string is made: f"{s}{s}..." of one 65536-character s
                raise NotStatic(f"line {node.lineno}: more than {MAX_ITEMS} items")
        return "".join(parts)

    def _subscript(self, node: ast.Subscript, depth: int) -> Any:
        container = self.value(node.value, depth)
        if isinstance(node.slice, ast.Slice):
            bounds = [None if b is None else self.value(b, depth) for b in (node.slice.lower, node.slice.upper,
                                                                              node.slice.step)]
            if type(container) not in (list, tuple, str) or any(b is not None and type(b) is not int
                                                                  for b in bounds):
                raise NotStatic(f"line {node.lineno}: a slice")
            return container[slice(*bounds)]
        key = self.value(node.slice, depth)
        if type(container) is dict or (type(container) in (list, tuple, str) and type(key) is int):
            try:
                return container[key]
            except (KeyError, IndexError, TypeError):
                raise NotStatic(f"line {node.lineno}: the subscript fails") from None
        raise NotStatic(f"line {node.lineno}: a subscript of a {type(container).__name__}")

    def _call(self, node: ast.Call, depth: int) -> Any:
        qualified = self.qualified(node.func)
        bare = _bare(node.func)
        if qualified in EXTENSION_CALLS or self.is_extension_class(node.func) or (
                qualified is None and bare in EXTENSION_NAMES - {"cythonize", "mypycify"}):
            return ExtensionMarker(_bare(node.func) or "Extension", node.lineno)
        if qualified in EXTENSION_LISTS or (qualified is None and _bare(node.func) in ("cythonize", "mypycify")):
            return [ExtensionMarker(_bare(node.func) or "cythonize", node.lineno)]
        if isinstance(node.func, ast.Name) and qualified is None and node.func.id in _BUILTINS:
            return self._size(self._builtin(node, depth), node)
        if isinstance(node.func, ast.Attribute) and node.func.attr in _READERS:
            return self._size(self._reader(node, depth), node)
        raise NotStatic(f"line {node.lineno}: a call to {_shown_call(node.func)}")

    def qualified(self, func: ast.expr) -> str | None:
        """``setuptools.Extension`` for ``Extension`` imported from setuptools (or ``st.Extension``)."""
        if isinstance(func, ast.Name):
            try:
                found = self.scope.lookup(func.id)
            except KeyError:
                return None
            return found.qualified if isinstance(found, _Opaque) else f"<value {func.id}>"
        if isinstance(func, ast.Attribute):
            base = self.qualified(func.value)
            return f"{base}.{func.attr}" if base and not base.startswith("<") else None
        return None

    def is_extension_class(self, func: ast.expr) -> bool:
        """A class of this file deriving from Extension (``class CMakeExtension(Extension)``)."""
        if not isinstance(func, ast.Name):
            return False
        try:
            found = self.scope.lookup(func.id)
        except KeyError:
            return False
        if not (isinstance(found, _Opaque) and isinstance(found.node, ast.ClassDef)):
            return False
        return any(self.qualified(base) in EXTENSION_CALLS or _bare(base) in EXTENSION_NAMES
                   for base in found.node.bases)

    def _builtin(self, node: ast.Call, depth: int) -> Any:
        assert isinstance(node.func, ast.Name)
        name = node.func.id
        args = [self.value(a, depth) for a in node.args if not isinstance(a, ast.Starred)]
        if len(args) != len(node.args):
            raise NotStatic(f"line {node.lineno}: *args")
        keywords = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                if name != "dict":
                    raise NotStatic(f"line {node.lineno}: **kwargs")
                keywords.update(_mapping(self.value(keyword.value, depth), keyword.value))
            else:
                keywords[keyword.arg] = self.value(keyword.value, depth)
        return _BUILTINS[name](args, keywords, node)

    def _reader(self, node: ast.Call, depth: int) -> Any:
        assert isinstance(node.func, ast.Attribute)
        target = self.value(node.func.value, depth)
        args = [self.value(a, depth) for a in node.args if not isinstance(a, ast.Starred)]
        method = node.func.attr
        allowed: dict[type, set[str]] = {dict: {"copy", "keys", "values", "items", "get"}, list: {"copy"},
                                         set: {"copy"}, str: {"split", "splitlines", "strip", "join", "lower"}}
        if node.keywords or len(args) != len(node.args) or method not in allowed.get(type(target), set()):
            raise NotStatic(f"line {node.lineno}: .{method}() of a {type(target).__name__}")
        if method == "join":
            parts = _iterable(args[0], node) if len(args) == 1 else [None]
            if not all(type(s) is str for s in parts):
                raise NotStatic(f"line {node.lineno}: .join() of something that is not strings")
            if sum(map(len, parts)) + len(target) * len(parts) > MAX_ITEMS:  # before it is made: 65536 x
                raise NotStatic(f"line {node.lineno}: more than {MAX_ITEMS} items")  # 65536 characters was 4 GB
        result = getattr(target, method)(*args)
        return list(result) if method in ("keys", "values", "items") else result

    def _inplace(self, op: ast.operator, current: Any, other: Any, node: ast.AST) -> Any:
        if isinstance(op, ast.Add) and type(current) is list:
            current.extend(_iterable(other, node))  # list += x changes the list in place (aliases see it)
            return self._size(current, node)
        if isinstance(op, ast.BitOr) and type(current) in (dict, set) and type(other) is type(current):
            current.update(other)
            return self._size(current, node)
        return self._size(_binary(op, current, other, node), node)

    def _size(self, value: Any, node: ast.AST) -> Any:
        if type(value) in (list, tuple, dict, set, str) and len(value) > MAX_ITEMS:
            raise NotStatic(f"line {getattr(node, 'lineno', 0)}: more than {MAX_ITEMS} items")
        return value

    # --- the call of interest -----------------------------------------------------------------

    def run_until(self, call: ast.Call) -> None:
        """Follow the statements that run before ``call`` (through the blocks and functions around it)."""
        chain = self._enclosing(call)
        self._run_chain(self.tree.body, chain)

    def _enclosing(self, target: ast.AST) -> list[ast.stmt]:
        """The statements around ``target``, outermost first (the last one holds it directly)."""
        chain: list[ast.stmt] = []
        node: ast.AST | None = target
        while node is not None and node is not self.tree:
            if isinstance(node, ast.stmt):
                chain.append(node)
            node = self.parents.get(id(node))
        return chain[::-1]

    def _run_chain(self, body: list[ast.stmt], chain: list[ast.stmt]) -> None:
        if not chain:
            return
        head, rest = chain[0], chain[1:]
        if isinstance(head, ast.FunctionDef | ast.AsyncFunctionDef):
            # A function that calls setup() runs after the module body (from a main guard, most often).
            self.run([s for s in body if s is not head])
            self.scope.names[head.name] = _Opaque(head.name, head)
            self._functions[head.name] = head
            local = Scope(self.scope)
            args = head.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None:
                    local.names[arg.arg] = _Unknown(f"line {head.lineno}: a parameter of {head.name}()")
            self.scope = local
            inner: list[ast.stmt] = head.body
        else:
            index = next(i for i, s in enumerate(body) if s is head)
            self.run(body[:index])
            inner = _body_holding(head, rest[0]) if rest else []
        self._run_chain(inner, rest)


_BLOCKS = {ast.If: "an if block", ast.For: "a for loop", ast.While: "a while loop", ast.With: "a with block",
           ast.Try: "a try block", ast.Match: "a match block", ast.AsyncFor: "a for loop",
           ast.AsyncWith: "a with block"}


def _describe(node: ast.stmt) -> str:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return f"a call to {_shown_call(node.value.func)}"
    return _BLOCKS.get(type(node), f"a {type(node).__name__} statement")


def _as_load(target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Name):
        return ast.Name(id=target.id, ctx=ast.Load(), lineno=target.lineno, col_offset=target.col_offset)
    if isinstance(target, ast.Subscript):
        return ast.Subscript(value=target.value, slice=target.slice, ctx=ast.Load(), lineno=target.lineno,
                             col_offset=target.col_offset)
    raise NotStatic(f"line {target.lineno}: augmented assignment to an attribute")


def _binary(op: ast.operator, left: Any, right: Any, node: ast.AST) -> Any:
    kinds = (type(left), type(right))
    if isinstance(op, ast.Add) and kinds in ((list, list), (tuple, tuple), (str, str)):
        if len(left) + len(right) > MAX_ITEMS:
            raise NotStatic(f"line {getattr(node, 'lineno', 0)}: more than {MAX_ITEMS} items")
        return left + right
    if isinstance(op, ast.BitOr) and kinds in ((dict, dict), (set, set)):
        return left | right
    raise NotStatic(f"line {getattr(node, 'lineno', 0)}: {type(op).__name__} of {kinds[0].__name__} "
                    f"and {kinds[1].__name__}")


def _sorted(items: Any) -> list[Any]:
    """``items`` in a fixed order: by kind, then by value (a tuple by its items' keys). Not by repr:
    the repr of each of 65536 references to one 65536-character string is 4 GB of keys."""
    keys: dict[int, tuple[str, Any]] = {}  # a tuple's key, made once however often it is shared

    def key(value: Any) -> tuple[str, Any]:
        kind = type(value)
        if kind is tuple:
            if id(value) not in keys:
                keys[id(value)] = ("tuple", tuple(key(v) for v in value))
            return keys[id(value)]
        return (kind.__name__, value if kind in (str, int, float, bool) else 0)

    return sorted(items, key=key)


def _iterable(value: Any, node: ast.AST) -> list[Any]:
    if type(value) in (list, tuple, set, str):
        return _sorted(value) if type(value) is set else list(value)
    if type(value) is dict:
        return list(value)
    raise NotStatic(f"line {getattr(node, 'lineno', 0)}: iterating over a {type(value).__name__}")


def _mapping(value: Any, node: ast.AST) -> dict[Any, Any]:
    if type(value) is not dict:
        raise NotStatic(f"line {getattr(node, 'lineno', 0)}: ** of a {type(value).__name__}")
    return value


def _hashable(items: list[Any], node: ast.AST) -> list[Any]:
    if not all(type(i) in (str, int, float, bool, tuple) or i is None for i in items):
        raise NotStatic(f"line {getattr(node, 'lineno', 0)}: an unhashable key")
    return items


def _as_dict(args: list[Any], keywords: dict[str, Any], node: ast.Call) -> dict[Any, Any]:
    if len(args) > 1:
        raise NotStatic(f"line {node.lineno}: dict() of several arguments")
    result = dict(_mapping(args[0], node)) if args else {}
    result.update(keywords)
    return result


def _one(args: list[Any], keywords: dict[str, Any], node: ast.Call) -> Any:
    if len(args) != 1 or keywords:
        raise NotStatic(f"line {node.lineno}: a call with other arguments")
    return args[0]


def _sum(args: list[Any], keywords: dict[str, Any], node: ast.Call) -> Any:
    if len(args) != 2 or keywords or type(args[1]) is not list:
        raise NotStatic(f"line {node.lineno}: sum() that is not of lists")
    total = list(args[1])
    for item in _iterable(args[0], node):
        if type(item) is not list or len(total) + len(item) > MAX_ITEMS:
            raise NotStatic(f"line {node.lineno}: sum() that is not of lists")
        total.extend(item)
    return total


_BUILTINS: dict[str, Any] = {
    "dict": _as_dict,
    "list": lambda a, k, n: list(_iterable(_one(a, k, n), n)),
    "tuple": lambda a, k, n: tuple(_iterable(_one(a, k, n), n)),
    "set": lambda a, k, n: set(_hashable(_iterable(_one(a, k, n), n), n)),
    "sorted": lambda a, k, n: _sorted(_hashable(_iterable(_one(a, k, n), n), n)),
    "sum": _sum,
}


def _bare(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _shown_call(func: ast.expr) -> str:
    try:
        return ast.unparse(func)[:60] + "()"
    except (ValueError, RecursionError):
        return "a computed function"


def _stored_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del)} | {
        n.name for n in ast.walk(node) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def _body_holding(block: ast.stmt, statement: ast.stmt) -> list[ast.stmt]:
    """The statement list of ``block`` (an if/try/with/for body, an else, a handler) that holds ``statement``."""
    for body in _bodies(block):
        if any(s is statement for s in body):
            return body
    return []


def _bodies(block: ast.stmt) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        value = getattr(block, field, None)
        if isinstance(value, list):
            yield value
    for handler in getattr(block, "handlers", []) or []:
        yield handler.body
    for case in getattr(block, "cases", []) or []:
        yield case.body
