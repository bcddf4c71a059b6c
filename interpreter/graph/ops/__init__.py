"""Graph-building functions (MAX ``max.graph.ops`` names).

These accept broadcastable/promotable operands and Python scalars (the high level); the
lowering pass (``interpreter.graph.lowering.lower``) turns the result into primitive ops.
"""

from .buffer import buffer_create, buffer_load, buffer_store, buffer_store_slice
from .creation import arange, constant, range
from .elementwise import (
    abs, add, cast, ceil, cos, div, equal, erf, exp, floor, floor_div, gelu, greater,
    greater_equal, is_inf, is_nan, less, less_equal, log, log1p, logical_and, logical_not,
    logical_or, logical_xor, maximum, minimum, mod, mul, negate, not_equal, pow, round, rsqrt,
    sigmoid, silu, sin, sqrt, sub, tanh, trunc,
)
from .shape import broadcast_to, getitem, reshape, slice_tensor

__all__ = [
    "abs", "add", "arange", "broadcast_to", "buffer_create", "buffer_load", "buffer_store",
    "buffer_store_slice", "cast", "ceil", "constant", "cos", "div", "equal", "erf", "exp",
    "floor", "floor_div", "gelu", "getitem", "greater", "greater_equal", "is_inf", "is_nan",
    "less", "less_equal", "log", "log1p", "logical_and", "logical_not", "logical_or",
    "logical_xor", "maximum", "minimum", "mod", "mul", "negate", "not_equal", "pow", "range",
    "reshape", "round", "rsqrt", "sigmoid", "silu", "sin", "slice_tensor", "sqrt", "sub",
    "tanh", "trunc",
]
