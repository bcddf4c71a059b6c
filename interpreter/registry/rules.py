"""Reusable primitive type rules (``OpDef.infer`` functions)."""

from __future__ import annotations

from collections.abc import Sequence

from ..dtype import DType
from ..errors import GraphShapeError, GraphTypeError
from ..types import TensorType, ValueType
from .core import Attrs, OpDef

__all__ = [
    "elementwise",
    "predicate",
    "same_types",
]


def same_types(op: OpDef, types: Sequence[ValueType]) -> TensorType:
    """All operands are tensors of one dtype, shape and device (LOWER-1); returns it."""
    first = types[0]
    if first.__class__ is TensorType:  # fast path: one type object (usual after staging)
        for t in types:
            if t is not first:
                break
        else:
            return first
    first = op.check_tensor(types, 0)
    for i in range(1, len(types)):
        t = op.check_tensor(types, i)
        if t.dtype != first.dtype:
            op.fail(types, "LOWER-1", "primitive operands must have identical dtypes",
                    GraphTypeError)
        if t.shape != first.shape:
            op.fail(types, "LOWER-1", "primitive operands must have identical shapes")
        if t.device != first.device:
            op.fail(types, "DEV-1", "operands must be on the same device; transfer first",
                    GraphShapeError)
    return first


def elementwise(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    """Result has the operands' common type."""
    return (same_types(op, types),)


def predicate(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    """Result has the operands' shape and dtype bool (comparisons, is_nan, ...)."""
    return (same_types(op, types).with_(dtype=DType.bool),)
