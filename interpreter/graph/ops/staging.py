"""Shared staging helpers for the graph-building functions in ``interpreter.graph.ops``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...dtype import DType
from ...errors import GraphTypeError
from ...promotion import broadcast_shapes, promote_dtypes
from ...registry import OpDef, get_op
from ...types import DeviceRef, TensorType
from ..core import Graph, TensorValue, Value
from ..splat import splat

__all__ = [
    "DEFAULT_FLOAT",
    "DEFAULT_INT",
    "Operand",
    "constant",
    "default_dtype",
    "graph_of",
    "is_scalar",
    "stage",
    "stage1",
    "weak_dtype",
]

Operand = Value | bool | int | float

#: Default dtypes of Python scalars with no tensor to take a dtype from (PROMO-4).
DEFAULT_FLOAT = DType.float32
DEFAULT_INT = DType.int64


_CONSTANT = get_op("constant")

#: Python and numpy scalar types staged as weak constants (PROMO-4).
_SCALARS = (bool, int, float, np.generic)
_BOOLS = (bool, np.bool_)
_INTS = (int, np.integer)


def is_scalar(x: object) -> bool:
    return isinstance(x, _SCALARS) and not isinstance(x, Value)


def default_dtype(value: object) -> DType:
    if isinstance(value, _BOOLS):
        return DType.bool
    if isinstance(value, _INTS):
        return DEFAULT_INT
    return DEFAULT_FLOAT


def weak_dtype(op: str, value: Any, like: DType | None) -> DType:
    """The dtype a Python scalar takes next to a tensor of dtype ``like`` (PROMO-4)."""
    if like is None:
        return default_dtype(value)
    if like.is_float() and value.__class__ is float:  # the usual case: nothing to check
        return like
    if isinstance(value, _BOOLS):
        return like
    if like is DType.bool or (like.is_integral() and not isinstance(value, _INTS)):
        raise GraphTypeError(f"{op}: Python scalar {value!r} cannot take the dtype "
                             f"{like.value} of the tensor operand; cast the tensor first "
                             "[PROMO-4]")
    if like.is_integral():
        info = np.iinfo(like.to_numpy())
        if not info.min <= int(value) <= info.max:
            raise GraphTypeError(f"{op}: Python scalar {value!r} is out of range for "
                                 f"{like.value} [PROMO-4]")
    return like


def constant(graph: Graph, value: Any, dtype: DType, device: DeviceRef,
             shape: tuple[int, ...] = (), like: TensorType | None = None) -> TensorValue:
    """A weak scalar constant, splatted to ``shape`` (a shared read-only broadcast view)."""
    attrs = {"value": splat(value, dtype.to_numpy(), shape), "device": device}
    if (like is not None and like.dtype is dtype and like.shape == shape
            and like.device is device):  # the weak-constant case: the tensor's type
        (v,) = graph.append(_CONSTANT, (), attrs, (like,))
    else:
        (v,) = graph.stage(_CONSTANT, (), attrs)
    return v  # type: ignore[return-value]


def graph_of(operands: Sequence[object]) -> Graph:
    for a in operands:
        if isinstance(a, Value):
            return a.graph
    return Graph.current


def stage(name: str, operands: Sequence[Any], attrs: dict[str, Any] | None = None
          ) -> tuple[Value, ...]:
    """Stage op ``name``; Python scalars among ``operands`` become weak constants."""
    op = get_op(name)
    for a in operands:  # a plain loop: this is the staging hot path
        if not isinstance(a, Value):
            operands = _weak_constants(op, operands)
            break
    graph = operands[0].graph if operands else Graph.current
    return graph.stage(op, operands, attrs or {})


def _weak_constants(op: OpDef, operands: Sequence[Any]) -> list[Value]:
    """Replace Python scalars by weak constants (PROMO-4); reject anything else."""
    values = [a for a in operands if isinstance(a, Value)]
    graph = values[0].graph if values else Graph.current
    tensors = [operands[i] for i in op.promote or range(len(operands))
               if isinstance(operands[i], Value)]
    like: DType | None = None
    if len(tensors) == 1:
        like = tensors[0].dtype
    elif tensors:  # an unpromotable mix is reported by staging (PROMO-2) with the types
        like = promote_dtypes([t.dtype for t in tensors]) or tensors[0].dtype
    like_type = values[0].type if values else None
    device = like_type.device if like_type is not None else DeviceRef.CPU()
    # splat to the tensors' broadcast shape: the op then needs no broadcast_to (LOWER-1)
    shape: tuple[int, ...] = ()
    if op.broadcast and like_type is not None:
        shape = like_type.shape if len(values) == 1 else (
            broadcast_shapes([v.shape for v in values]) or ())
    if like_type.__class__ is not TensorType:
        like_type = None
    converted = []
    for a in operands:
        if not isinstance(a, Value):
            if not isinstance(a, _SCALARS):
                raise GraphTypeError(f"{op.name}: operand {a!r} is not a graph value or a "
                                     "Python scalar")
            if isinstance(a, np.generic):
                a = a.item()
            wd = default_dtype(a) if like is None else weak_dtype(op.name, a, like)
            a = constant(graph, a, wd, device, shape, like_type)
        converted.append(a)
    return converted


def stage1(name: str, operands: Sequence[Any], attrs: dict[str, Any] | None = None
           ) -> TensorValue:
    (v,) = stage(name, operands, attrs)
    return v  # type: ignore[return-value]
