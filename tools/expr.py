"""Arithmetic expressions over named sizes ("ceil_div(N, 256)", "4 * M * N"), evaluated safely.

Task files are data, not code: only numbers, names, arithmetic and a few functions are allowed.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping

_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def _ceil_div(a: float, b: float) -> int:
    return -(-int(a) // int(b))


_FUNCS: dict[str, Callable[..., float]] = {
    "ceil_div": _ceil_div,
    "min": min,
    "max": max,
    "ceil": math.ceil,
    "floor": math.floor,
}


class ExprError(ValueError):
    """The expression is not allowed or cannot be evaluated; the message says why."""


def parse(text: str | int | float) -> ast.expr:
    """Parse and vet an expression; raises ExprError for anything but plain arithmetic."""
    if isinstance(text, bool):
        raise ExprError("expected a number or an expression, got a boolean")
    if isinstance(text, int | float):
        return ast.Constant(text)
    try:
        tree = ast.parse(str(text), mode="eval").body
    except SyntaxError as exc:
        raise ExprError(f"cannot parse {text!r}: {exc.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS or node.keywords:
                raise ExprError(f"{text!r}: only {', '.join(_FUNCS)} may be called")
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise ExprError(f"{text!r}: only numbers are allowed, not {node.value!r}")
        elif (
            not isinstance(
                node, ast.BinOp | ast.UnaryOp | ast.Name | ast.Load | ast.USub | ast.UAdd
            )
            and type(node) not in _BINOPS
        ):
            raise ExprError(f"{text!r}: {type(node).__name__} is not allowed")
    return tree


def names(text: str | int | float) -> set[str]:
    """The size names an expression uses (function names excluded)."""
    tree = parse(text)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}  # type: ignore[attr-defined]
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called


def substitute(text: str | int | float, values: Mapping[str, int]) -> str:
    """The expression with the names in `values` replaced by their numbers ("ceil_div(N, 4 *
    BLOCK)" with BLOCK=128 is "ceil_div(N, 4 * 128)"); the other names stay."""
    if not names(text) & set(values):
        return str(text)

    class Put(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.expr:
            node.args = [self.visit(a) for a in node.args]  # the function's own name stays
            return node

        def visit_Name(self, node: ast.Name) -> ast.expr:
            return ast.Constant(values[node.id]) if node.id in values else node

    return ast.unparse(Put().visit(parse(text)))


def name_constant(text: str | int | float, value: int, name: str) -> str | None:
    """The expression with each literal `value` replaced by `name` ("ceil_div(N, 256)" with
    256 as BLOCK is "ceil_div(N, BLOCK)"); None when the literal is not in it."""
    found = False

    class Put(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.expr:
            nonlocal found
            if type(node.value) is int and node.value == value:
                found = True
                return ast.Name(name, ast.Load())
            return node

    out = ast.unparse(Put().visit(parse(text)))
    return out if found else None


def evaluate(text: str | int | float, env: Mapping[str, int | float]) -> float:
    """Evaluate an expression with the sizes in env."""
    tree = parse(text)

    def ev(node: ast.expr) -> float:
        if isinstance(node, ast.Constant):
            return float(node.value) if isinstance(node.value, float) else int(node.value)  # type: ignore[arg-type]
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise ExprError(f"unknown size {node.id!r} (known: {', '.join(sorted(env))})")
            return env[node.id]
        if isinstance(node, ast.UnaryOp):
            value = ev(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > 2**32):
                raise ExprError(f"{left} ** {right} is too large")
            try:
                return _BINOPS[type(node.op)](left, right)
            except ZeroDivisionError:
                raise ExprError("division by zero") from None
            except OverflowError:
                raise ExprError("number too large") from None
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            try:
                return _FUNCS[node.func.id](*(ev(a) for a in node.args))
            except ZeroDivisionError:
                raise ExprError(f"{node.func.id}(): division by zero") from None
            except (TypeError, ValueError, OverflowError) as exc:
                raise ExprError(f"{node.func.id}(): {exc}") from None
        raise ExprError(f"{type(node).__name__} is not allowed")

    return ev(tree)


def evaluate_int(text: str | int | float, env: Mapping[str, int | float]) -> int:
    """Evaluate an expression that must give a whole number (a shape, a grid dimension)."""
    value = evaluate(text, env)
    if isinstance(value, float):
        if not value.is_integer():
            raise ExprError(f"{text!r} gives {value}, not a whole number")
        value = int(value)
    return int(value)
