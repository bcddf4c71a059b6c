"""Python operators and methods of graph values, installed on ``TensorValue``/``BufferValue``.

``graph/core.py`` declares them (for type checkers) and this module, which can stage ops,
attaches them, as ``jax.numpy`` installs the array methods: ``x + 1`` is ``add(x, 1)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...dtype import DType
from ..core import BufferValue, TensorValue
from .buffer import buffer_load
from .elementwise import (
    abs,
    add,
    cast,
    div,
    equal,
    floor_div,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    mod,
    mul,
    negate,
    not_equal,
    pow,
    sub,
)
from .linalg import matmul
from .shape import getitem, reshape, transpose

__all__ = ["install_value_methods"]

Binary = Callable[[Any, Any], TensorValue]


def _forward(op: Binary) -> Callable[[TensorValue, Any], TensorValue]:
    def method(self: TensorValue, o: Any) -> TensorValue:
        return op(self, o)

    return method


def _reflected(op: Binary) -> Callable[[TensorValue, Any], TensorValue]:
    def method(self: TensorValue, o: Any) -> TensorValue:
        return op(o, self)

    return method


def _buffer_getitem(self: BufferValue, index: Any) -> TensorValue:
    loaded = buffer_load(self)
    return loaded if index is Ellipsis else getitem(loaded, index)


def _t(self: TensorValue) -> TensorValue:
    return transpose(self, -1, -2)


def _reshape(self: TensorValue, shape: Sequence[int]) -> TensorValue:
    return reshape(self, shape)


def _cast(self: TensorValue, dtype: DType) -> TensorValue:
    return cast(self, dtype)


def install_value_methods() -> None:
    """Attach the operators (``x + 1`` is ``add``; comparisons are IEEE ops) and methods."""
    binary: dict[str, Binary] = {  # also reflected: __radd__, ...
        "__add__": add, "__sub__": sub, "__mul__": mul, "__truediv__": div,
        "__floordiv__": floor_div, "__mod__": mod, "__pow__": pow, "__matmul__": matmul}
    for name, op in binary.items():
        setattr(TensorValue, name, _forward(op))
        setattr(TensorValue, f"__r{name[2:]}", _reflected(op))
    forward_only: dict[str, Binary] = {
        "__and__": logical_and, "__or__": logical_or, "__xor__": logical_xor,
        "__eq__": equal, "__ne__": not_equal, "__gt__": greater, "__ge__": greater_equal,
        "__lt__": less, "__le__": less_equal, "__getitem__": getitem}
    for name, op in forward_only.items():
        setattr(TensorValue, name, _forward(op))
    TensorValue.__neg__ = negate  # type: ignore[method-assign]
    TensorValue.__abs__ = abs  # type: ignore[method-assign]
    TensorValue.__invert__ = logical_not  # type: ignore[method-assign]
    TensorValue.T = property(_t)  # type: ignore[method-assign,assignment]
    TensorValue.reshape = _reshape  # type: ignore[method-assign]
    TensorValue.cast = _cast  # type: ignore[method-assign]
    BufferValue.__getitem__ = _buffer_getitem  # type: ignore[method-assign]
