"""Reduction graph-building functions (MAX ``ops`` names; spec/reductions.md).

Each reduces one axis (default the last) and keeps it with size 1 (REDUCE-1).
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import GraphShapeError, GraphTypeError
from ..core import TensorValue, Value
from .elementwise import maximum, minimum
from .staging import Operand, stage, stage1


def sum(x: TensorValue, axis: int = -1) -> TensorValue:
    return stage1("reduce_sum", (x,), {"axis": axis})


def mean(x: TensorValue, axis: int = -1) -> TensorValue:
    """Arithmetic mean (floats only: an integer mean is an error, not a truncation)."""
    if isinstance(x, Value) and not x.dtype.is_float():
        raise GraphTypeError(f"mean: the mean of a {x.dtype.value} tensor is not defined; "
                             "cast it to a float dtype first, e.g. "
                             f"ops.mean(x.cast(DType.float32)) [reduce_mean.C1]; operands: "
                             f"({x.type})")
    return stage1("reduce_mean", (x,), {"axis": axis})


def prod(x: TensorValue, axis: int = -1) -> TensorValue:
    return stage1("reduce_prod", (x,), {"axis": axis})


def _extreme(reduction: str, pairwise: Callable[[Operand, Operand], TensorValue],
             x: TensorValue, y: Operand | None, axis: int | None) -> TensorValue:
    """``pairwise(x, y)`` with two operands, else the registry op ``reduction`` of ``x``."""
    if y is not None:
        if axis is not None:
            name = reduction.removeprefix("reduce_")  # MAX's function: max, min
            raise GraphShapeError(f"{name}: Axis not allowed for elementwise {name} (two "
                                  f"operands); got axis={axis!r} [REDUCE-7]")
        return pairwise(x, y)
    return stage1(reduction, (x,), {"axis": -1 if axis is None else axis})


def max(x: TensorValue, y: Operand | None = None, axis: int | None = None
        ) -> TensorValue:
    """``max(x, y)``: elementwise maximum; ``max(x, axis=-1)``: reduction (REDUCE-7)."""
    return _extreme("reduce_max", maximum, x, y, axis)


def min(x: TensorValue, y: Operand | None = None, axis: int | None = None
        ) -> TensorValue:
    """``min(x, y)``: elementwise minimum; ``min(x, axis=-1)``: reduction (REDUCE-7)."""
    return _extreme("reduce_min", minimum, x, y, axis)


def argmax(x: TensorValue, axis: int = -1) -> TensorValue:
    return stage1("argmax", (x,), {"axis": axis})


def argmin(x: TensorValue, axis: int = -1) -> TensorValue:
    return stage1("argmin", (x,), {"axis": axis})


def cumsum(x: TensorValue, axis: int = -1, exclusive: bool = False, reverse: bool = False
           ) -> TensorValue:
    return stage1("cumsum", (x,), {"axis": axis, "exclusive": exclusive, "reverse": reverse})


def softmax(x: TensorValue, axis: int = -1) -> TensorValue:
    return stage1("softmax", (x,), {"axis": axis})


def logsoftmax(x: TensorValue, axis: int = -1) -> TensorValue:
    return stage1("logsoftmax", (x,), {"axis": axis})


def top_k(x: TensorValue, k: int, axis: int = -1) -> tuple[TensorValue, TensorValue]:
    """The ``k`` largest elements along ``axis`` (descending) and their int64 indices."""
    values, indices = stage("top_k", (x,), {"k": k, "axis": axis})
    return values, indices  # type: ignore[return-value]


def bottom_k(x: TensorValue, k: int, axis: int = -1) -> tuple[TensorValue, TensorValue]:
    """The ``k`` smallest elements along ``axis`` (ascending) and their int64 indices."""
    values, indices = stage("bottom_k", (x,), {"k": k, "axis": axis})
    return values, indices  # type: ignore[return-value]


__all__ = [
    "argmax",
    "argmin",
    "bottom_k",
    "cumsum",
    "logsoftmax",
    "max",
    "mean",
    "min",
    "prod",
    "softmax",
    "sum",
    "top_k",
]
