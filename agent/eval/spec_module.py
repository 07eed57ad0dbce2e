"""A Python module of constant tables read through its syntax tree, never imported: SWE-bench's specs as data.

SWE-bench writes its specs as plain tables grown by a few statements: assignments (to names and to
items), ``+=``, ``.update``/``.extend``/``.append`` calls, ``for`` loops over literal lists, ``if`` on
comparisons, dict and list comprehensions, ``{**other, ...}``, and ``int(2e9)``. Those are evaluated on
plain values; any other statement (an import, a function, a call of anything else) is skipped whole, so
nothing of the file ever runs. A step budget bounds the work.
"""

from __future__ import annotations

import ast
from typing import Any

MAX_STEPS = 500_000
_METHODS: dict[type, set[str]] = {dict: {"update"}, list: {"extend", "append"}}
_CONVERSIONS: dict[str, Any] = {"int": int, "str": str, "float": float}


class _Unknown(Exception):
    """A construct this reader does not evaluate: its statement is skipped."""


class _Budget(Exception):
    pass


def read_tables(source: str) -> dict[str, Any]:
    """Every top-level name the module binds to a value, as far as its constant statements go."""
    reader = _Reader()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    for statement in tree.body:
        try:
            reader.statement(statement)
        except (_Unknown, KeyError, IndexError, TypeError, ValueError, AttributeError, RecursionError):
            continue
        except _Budget:
            break
    return reader.names


class _Reader:
    def __init__(self) -> None:
        self.names: dict[str, Any] = {}
        self.steps = 0

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _Budget

    # --- statements ---------------------------------------------------------------------------------

    def statement(self, node: ast.stmt) -> None:
        self._tick()
        if isinstance(node, ast.Assign):
            value = self.value(node.value)
            for target in node.targets:
                self._assign(target, value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            current, added = self.value(node.target), self.value(node.value)
            if isinstance(current, list) and isinstance(added, list):
                current.extend(added)  # += on a list changes it in place, as Python does
            else:
                self._assign(node.target, self._add(current, added))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self._method_call(node.value)
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name) and not node.orelse:
            for item in list(self.value(node.iter)):
                self.names[node.target.id] = item
                for inner in node.body:
                    self.statement(inner)
        elif isinstance(node, ast.If):
            for inner in node.body if self.value(node.test) else node.orelse:
                self.statement(inner)
        elif isinstance(node, ast.Expr | ast.Pass | ast.Import | ast.ImportFrom):
            return  # a docstring, an import: nothing to read
        else:
            raise _Unknown

    def _assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.names[target.id] = value
        elif isinstance(target, ast.Subscript):
            container = self.value(target.value)
            if not isinstance(container, dict | list):
                raise _Unknown
            container[self.value(target.slice)] = value
        else:
            raise _Unknown

    def _method_call(self, call: ast.Call) -> None:
        func = call.func
        if not isinstance(func, ast.Attribute) or call.keywords or len(call.args) != 1:
            raise _Unknown
        owner = self.value(func.value)
        if func.attr not in _METHODS.get(type(owner), set()):
            raise _Unknown
        argument = self.value(call.args[0])
        if func.attr == "update" and not isinstance(argument, dict):
            raise _Unknown
        if func.attr == "extend" and not isinstance(argument, list | tuple):
            raise _Unknown
        getattr(owner, func.attr)(argument)

    # --- expressions ---------------------------------------------------------------------------------

    def value(self, node: ast.expr) -> Any:
        self._tick()
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in self.names:
                raise _Unknown
            return self.names[node.id]
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = [self.value(e) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items) if isinstance(node, ast.Tuple) else set(items)
        if isinstance(node, ast.Dict):
            return self._dict(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._add(self.value(node.left), self.value(node.right))
        if isinstance(node, ast.Subscript):
            return self.value(node.value)[self.value(node.slice)]
        if isinstance(node, ast.DictComp | ast.ListComp):
            return self._comprehension(node)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self._compare(node.ops[0], self.value(node.left), self.value(node.comparators[0]))
        if isinstance(node, ast.BoolOp):
            values = (self.value(v) for v in node.values)
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self.value(node.operand)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CONVERSIONS
                and len(node.args) == 1 and not node.keywords):
            argument = self.value(node.args[0])
            if not isinstance(argument, int | float | str):
                raise _Unknown
            return _CONVERSIONS[node.func.id](argument)
        raise _Unknown

    def _dict(self, node: ast.Dict) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key, item in zip(node.keys, node.values, strict=True):
            if key is None:
                merged = self.value(item)
                if not isinstance(merged, dict):
                    raise _Unknown
                out.update(merged)
            else:
                out[self.value(key)] = self.value(item)
        return out

    @staticmethod
    def _add(left: Any, right: Any) -> Any:
        if type(left) is not type(right) or not isinstance(left, list | str | tuple):
            raise _Unknown
        return left + right

    @staticmethod
    def _compare(op: ast.cmpop, left: Any, right: Any) -> bool:
        if isinstance(op, ast.Eq):
            return bool(left == right)
        if isinstance(op, ast.NotEq):
            return bool(left != right)
        if isinstance(op, ast.In):
            return left in right
        if isinstance(op, ast.NotIn):
            return left not in right
        raise _Unknown

    def _comprehension(self, node: ast.DictComp | ast.ListComp) -> Any:
        generator = node.generators[0]
        if len(node.generators) != 1 or not isinstance(generator.target, ast.Name):
            raise _Unknown
        name = generator.target.id
        saved = self.names.get(name, _MISSING)
        out: Any = {} if isinstance(node, ast.DictComp) else []
        try:
            for item in list(self.value(generator.iter)):
                self.names[name] = item
                if not all(self.value(test) for test in generator.ifs):
                    continue
                if isinstance(node, ast.DictComp):
                    out[self.value(node.key)] = self.value(node.value)
                else:
                    out.append(self.value(node.elt))
        finally:
            if saved is _MISSING:
                self.names.pop(name, None)
            else:
                self.names[name] = saved
        return out


_MISSING = object()
