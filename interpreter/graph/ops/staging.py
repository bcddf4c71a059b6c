"""Shared staging helpers for the graph-building functions in ``interpreter.graph.ops``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...dtype import DType
from ...errors import GraphTypeError
from ...promotion import broadcast_shapes, promote_dtypes
from ...registry import OpDef, get_op, op_with
from ...types import DeviceRef, TensorType
from ..core import Graph, Site, TensorValue, Value, user_location
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
    "stage_op",
    "weak_dtype",
]

Operand = Value | bool | int | float

#: Default dtypes of Python scalars with no tensor to take a dtype from (PROMO-4).
DEFAULT_FLOAT = DType.float32
DEFAULT_INT = DType.int64


_CONSTANT = op_with("literal")  # the op weak constants are (PROMO-4)
_CPU = DeviceRef.CPU()

#: Python and numpy scalar types staged as weak constants (PROMO-4).
_SCALARS = (bool, int, float, np.generic)
_PYTHON_SCALARS = (float, int, bool)
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
             shape: tuple[int, ...] = (), like: TensorType | None = None,
             location: Site | None = None) -> TensorValue:
    """A weak scalar constant, splatted to ``shape`` (a shared read-only broadcast view)."""
    attrs = {"value": splat(value, dtype, shape), "device": device}
    loc = location or user_location()
    if (like is not None and like.dtype is dtype and like.shape == shape
            and like.device is device):  # the weak-constant case: the tensor's type
        return graph.append(_CONSTANT, (), attrs, like, loc)
    (v,) = graph.stage(_CONSTANT, (), attrs, loc)
    return v  # type: ignore[return-value]


def graph_of(operands: Sequence[object]) -> Graph:
    for a in operands:
        if isinstance(a, Value):
            return a.graph
    return Graph.current


def stage(name: str, operands: Sequence[Any], attrs: dict[str, Any] | None = None
          ) -> tuple[Value, ...]:
    """Stage op ``name``; Python scalars among ``operands`` become weak constants."""
    return stage_op(get_op(name), operands, attrs, user_location())


def stage_op(op: OpDef, operands: Sequence[Any], attrs: dict[str, Any] | None = None,
             location: Site | None = None) -> tuple[Value, ...]:
    """Stage registry op ``op`` (and its weak constants) as staged by the user at
    ``location`` (default: the first stack frame outside this package)."""
    loc = location or user_location()
    for a in operands:  # a plain loop: this is the staging hot path
        if a.__class__ is not TensorValue and not isinstance(a, Value):
            operands = _weak_constants(op, operands, loc)
            break
    graph = operands[0].graph if operands else Graph.current
    return graph.stage(op, operands, attrs, loc)


def _weak_constants(op: OpDef, operands: Sequence[Any], location: Site | None
                    ) -> list[Value]:
    """Replace Python scalars by weak constants (PROMO-4); reject anything else.

    A scalar takes the dtype of the promoted tensor operands, their device and (for a
    broadcasting op) their broadcast shape, so the op needs no cast or ``broadcast_to``."""
    if len(operands) == 2 and op.broadcast and op.promote == (0, 1):  # `x + 1.0`, `2 * x`:
        a, b = operands  # the most common case, spelled out: the scalar takes x's type
        tensor, scalar = (a, b) if isinstance(a, Value) else (b, a)
        t = getattr(tensor, "type", None)
        if t.__class__ is TensorType and scalar.__class__ in _PYTHON_SCALARS:
            c = constant(tensor.graph, scalar, weak_dtype(op.name, scalar, t.dtype), t.device,
                         t.shape, t, location)
            return [tensor, c] if tensor is a else [c, tensor]
    values: list[Value] = []
    promoted: list[Value] = []  # the tensor operands the scalars' dtype comes from
    for i, a in enumerate(operands):
        if isinstance(a, Value):
            values.append(a)
            if not op.promote or i in op.promote:
                promoted.append(a)
    graph = values[0].graph if values else Graph.current
    like: DType | None = None
    if len(promoted) == 1:
        like = promoted[0].dtype
    elif promoted:  # an unpromotable mix is reported by staging (PROMO-2) with the types
        like = promote_dtypes([t.dtype for t in promoted]) or promoted[0].dtype
    like_type = values[0].type if values else None
    device = like_type.device if like_type is not None else _CPU
    shape: tuple[int, ...] = ()  # LOWER-1
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
            a = constant(graph, a, wd, device, shape, like_type, location)
        converted.append(a)
    return converted


def stage1(name: str, operands: Sequence[Any], attrs: dict[str, Any] | None = None
           ) -> TensorValue:
    (v,) = stage_op(get_op(name), operands, attrs, user_location())
    return v  # type: ignore[return-value]
