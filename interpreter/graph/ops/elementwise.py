"""Elementwise graph-building functions (MAX ``ops`` names)."""

from __future__ import annotations

from ...dtype import DType
from ..core import TensorValue
from .staging import Operand, stage1


def add(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("add", (lhs, rhs))


def sub(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("sub", (lhs, rhs))


def mul(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("mul", (lhs, rhs))


def div(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("div", (lhs, rhs))


def floor_div(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("floor_div", (lhs, rhs))


def mod(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("mod", (lhs, rhs))


def pow(lhs: Operand, rhs: Operand) -> TensorValue:  # MAX name (shadows a builtin)
    return stage1("pow", (lhs, rhs))


def maximum(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("max", (lhs, rhs))


def minimum(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("min", (lhs, rhs))


def equal(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("equal", (lhs, rhs))


def not_equal(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("not_equal", (lhs, rhs))


def greater(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("greater", (lhs, rhs))


def greater_equal(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("greater_equal", (lhs, rhs))


def less(lhs: Operand, rhs: Operand) -> TensorValue:
    """``lhs < rhs`` lowers to ``greater(rhs, lhs)`` (IEEE, NUM-1; not MAX's ``not >=``)."""
    return stage1("greater", (rhs, lhs))


def less_equal(lhs: Operand, rhs: Operand) -> TensorValue:
    """``lhs <= rhs`` lowers to ``greater_equal(rhs, lhs)`` (NUM-1)."""
    return stage1("greater_equal", (rhs, lhs))


def logical_and(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("logical_and", (lhs, rhs))


def logical_or(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("logical_or", (lhs, rhs))


def logical_xor(lhs: Operand, rhs: Operand) -> TensorValue:
    return stage1("logical_xor", (lhs, rhs))


def logical_not(x: TensorValue) -> TensorValue:
    return stage1("logical_not", (x,))


def negate(x: TensorValue) -> TensorValue:
    return stage1("negate", (x,))


def abs(x: TensorValue) -> TensorValue:  # MAX name (shadows a builtin)
    return stage1("abs", (x,))


def exp(x: TensorValue) -> TensorValue:
    return stage1("exp", (x,))


def log(x: TensorValue) -> TensorValue:
    return stage1("log", (x,))


def log1p(x: TensorValue) -> TensorValue:
    return stage1("log1p", (x,))


def sqrt(x: TensorValue) -> TensorValue:
    return stage1("sqrt", (x,))


def rsqrt(x: TensorValue) -> TensorValue:
    return stage1("rsqrt", (x,))


def tanh(x: TensorValue) -> TensorValue:
    return stage1("tanh", (x,))


def sin(x: TensorValue) -> TensorValue:
    return stage1("sin", (x,))


def cos(x: TensorValue) -> TensorValue:
    return stage1("cos", (x,))


def erf(x: TensorValue) -> TensorValue:
    return stage1("erf", (x,))


def sigmoid(x: TensorValue) -> TensorValue:
    return stage1("sigmoid", (x,))


def silu(x: TensorValue) -> TensorValue:
    return stage1("silu", (x,))


def gelu(x: TensorValue, approximate: str = "none") -> TensorValue:
    return stage1("gelu", (x,), {"approximate": approximate})


def floor(x: TensorValue) -> TensorValue:
    return stage1("floor", (x,))


def ceil(x: TensorValue) -> TensorValue:
    return stage1("ceil", (x,))


def round(x: TensorValue) -> TensorValue:  # MAX name (shadows a builtin)
    return stage1("round", (x,))


def trunc(x: TensorValue) -> TensorValue:
    return stage1("trunc", (x,))


def is_nan(x: TensorValue) -> TensorValue:
    return stage1("is_nan", (x,))


def is_inf(x: TensorValue) -> TensorValue:
    return stage1("is_inf", (x,))


def cast(x: TensorValue, dtype: DType) -> TensorValue:
    return stage1("cast", (x,), {"dtype": dtype})

__all__ = [
    "abs",
    "add",
    "cast",
    "ceil",
    "cos",
    "div",
    "equal",
    "erf",
    "exp",
    "floor",
    "floor_div",
    "gelu",
    "greater",
    "greater_equal",
    "is_inf",
    "is_nan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mod",
    "mul",
    "negate",
    "not_equal",
    "pow",
    "round",
    "rsqrt",
    "sigmoid",
    "silu",
    "sin",
    "sqrt",
    "sub",
    "tanh",
    "trunc",
]


# -- issue 19: activations ---------------------------------------------------------------
def relu(x: TensorValue) -> TensorValue:
    return stage1("relu", (x,))


def atanh(x: TensorValue) -> TensorValue:
    return stage1("atanh", (x,))


__all__ += ["atanh", "relu"]
