"""Derived lab parameters: values the seed does not draw but computes from the drawn ones.

A diagnosis can only check a candidate's own evidence against facts of the variant, and the facts a run
shows are often sums and counts of parameters rather than parameters themselves: the batches each rank
gets from its share of the export, the seconds a save takes at the store's speed. ``params:`` may declare
``{derived: "<expression>"}``, e.g. ``rank1_batches: {derived: "ceil((rows_c + rows_d + rows_e) / 32)"}``.

An expression is arithmetic over numbers and earlier parameters only, parsed into a small tree and
evaluated by walking it: lab specs come from authors through the browser too, and ``eval`` would run
whatever they wrote on the web server.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping
from functools import lru_cache

MAX_EXPRESSION = 200
FUNCTIONS = {"ceil": math.ceil, "floor": math.floor, "round": round, "min": min, "max": max, "abs": abs}
# How many arguments each takes. round() gets one only: round(x, n) with a large negative n builds 10**-n
# before any result exists to be checked, minutes of CPU on the server that loads the lab.
ARITY = {"ceil": (1, 1), "floor": (1, 1), "round": (1, 1), "abs": (1, 1), "min": (2, 16), "max": (2, 16)}
BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}  # fmt: skip
UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
# Large enough for any count a lab shows; small enough that no expression builds a huge integer.
MAX_MAGNITUDE = 10**12


class DerivedError(ValueError):
    """An expression that is not allowed or cannot be evaluated; the message says which part."""


def parse(expression: str) -> ast.Expression:
    """The expression's tree, refused unless it is arithmetic over names, numbers and ``FUNCTIONS``."""
    if not isinstance(expression, str) or not expression.strip():
        raise DerivedError('must be a non-empty arithmetic expression, e.g. "rows_a + rows_b"')
    return _tree(expression)


@lru_cache(maxsize=512)
def _tree(expression: str) -> ast.Expression:
    # Cached: grading a diagnosis evaluates a derived parameter over every combination of its inputs (up to
    # labs.diagnosis.MAX_COMBINATIONS), and the walkers only read the tree.
    if len(expression) > MAX_EXPRESSION:
        raise DerivedError(f"at most {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise DerivedError(f"not an expression ({exc.msg})") from None
    for node in ast.walk(tree):
        number = (
            isinstance(node, ast.Constant) and type(node.value) in (int, float) and abs(node.value) <= MAX_MAGNITUDE
        )
        call = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS
        allowed = (
            isinstance(node, ast.Expression | ast.Name | ast.Load)
            or number
            or (isinstance(node, ast.BinOp) and type(node.op) in BINARY)
            or (isinstance(node, ast.UnaryOp) and type(node.op) in UNARY)
            or isinstance(node, ast.operator | ast.unaryop)
            or (call and not node.keywords and ARITY[node.func.id][0] <= len(node.args) <= ARITY[node.func.id][1])
        )  # fmt: skip
        if not allowed:
            raise DerivedError(
                f"{ast.unparse(node) if isinstance(node, ast.expr) else type(node).__name__!s} is not allowed: "
                f"use numbers up to {MAX_MAGNITUDE:.0e}, parameters, + - * / // %, {', '.join(sorted(ARITY))} of one "
                "value, and min, max of two or more"
            )
    return tree


def names(expression: str) -> set[str]:
    """The parameters an expression reads (the names of called functions are not parameters)."""
    tree = parse(expression)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and id(node) not in called}


def evaluate(expression: str, values: Mapping[str, object]) -> int | float:
    """The expression's value for one variant. Integral results come back as ``int`` so that a rubric or a
    program shows "47", not "47.0"."""
    result = _eval(parse(expression).body, values)
    if isinstance(result, float) and result.is_integer():
        return int(result)
    return result


def _eval(node: ast.AST, values: Mapping[str, object]) -> int | float:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise DerivedError(f"{node.id!r} is not a parameter declared before this one")
        value = values[node.id]
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise DerivedError(f"{node.id!r} is {value!r}, not a number")
        return value
    if isinstance(node, ast.UnaryOp):
        return UNARY[type(node.op)](_eval(node.operand, values))
    if isinstance(node, ast.Call):
        return _checked(FUNCTIONS[node.func.id](*(_eval(arg, values) for arg in node.args)))
    left, right = _eval(node.left, values), _eval(node.right, values)
    if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and right == 0:
        raise DerivedError(f"{ast.unparse(node)} divides by zero")
    return _checked(BINARY[type(node.op)](left, right))


def _checked(value: int | float) -> int | float:
    if (isinstance(value, float) and not math.isfinite(value)) or abs(value) > MAX_MAGNITUDE:
        raise DerivedError(f"a value out of range ({value!r})")
    return value
