"""Implicit promotion and broadcasting of one op's operand types (PROMO-1/2, BCAST-1).

Used by staging (to type-check the high level) and by lowering (to make it explicit).
"""

from __future__ import annotations

from ..errors import GraphShapeError, GraphTypeError
from ..promotion import broadcast_shapes, promote_dtypes
from ..registry.core import OpDef
from ..types import TensorType, ValueType

__all__ = ["normalized_types"]


def normalized_types(op: OpDef, types: list[ValueType]) -> list[ValueType]:
    """Operand types after implicit promotion/broadcasting; ``types`` itself if unchanged."""
    if not (op.promote or op.broadcast) or not types:
        return types
    t0 = types[0]
    for t in types:  # fast path: identical types need nothing (a plain loop: hot)
        if t is not t0 and t != t0:
            break
    else:
        return types
    dtypes = [t.dtype for t in types]
    shapes = [t.shape for t in types]
    if op.promote:
        promoted = promote_dtypes([dtypes[i] for i in op.promote])
        if promoted is None:
            op.fail(types, "PROMO-2", "operand dtypes cannot be promoted safely "
                    f"({', '.join(dtypes[i].value for i in op.promote)}); cast one operand "
                    "explicitly", GraphTypeError)
        for i in op.promote:
            dtypes[i] = promoted
    if op.broadcast:
        shape = broadcast_shapes(shapes)
        if shape is None:
            op.fail(types, "BCAST-1", "operand shapes "
                    f"{', '.join(str(list(s)) for s in shapes)} are not broadcastable",
                    GraphShapeError)
        shapes = [shape] * len(types)
    if dtypes == [t.dtype for t in types] and shapes == [t.shape for t in types]:
        return types
    return [TensorType(d, s, t.device) if isinstance(t, TensorType) else t
            for d, s, t in zip(dtypes, shapes, types, strict=True)]
