"""Linear-algebra graph-building functions (MAX ``ops`` names; spec/ops/matmul.md,
spec/ops/band_part.md)."""

from __future__ import annotations

import numpy as np

from ...errors import GraphTypeError
from ...promotion import broadcast_shapes
from ...registry import get_op
from ..core import TensorValue, Value
from .shape import broadcast_to, reshape
from .staging import stage1


def matmul(lhs: TensorValue, rhs: TensorValue) -> TensorValue:
    """numpy ``@``: rank-1 operands gain (then lose) a unit dim, batch dims broadcast."""
    op = get_op("matmul")
    for v in (lhs, rhs):
        if not isinstance(v, Value):
            raise GraphTypeError(f"matmul: operand {v!r} is not a graph value [GRAPH-4]")
    types = [lhs.type, rhs.type]
    if lhs.rank == 0 or rhs.rank == 0:
        op.fail(types, "matmul.C3", "operands must have rank >= 1 (use mul for scalars)")
    a = reshape(lhs, (1, lhs.shape[0])) if lhs.rank == 1 else lhs
    b = reshape(rhs, (rhs.shape[0], 1)) if rhs.rank == 1 else rhs
    if a.shape[-1] != b.shape[-2]:
        op.fail(types, "matmul.C1", f"contraction dimensions differ: lhs has {a.shape[-1]} "
                f"columns, rhs has {b.shape[-2]} rows")
    batch = broadcast_shapes([a.shape[:-2], b.shape[:-2]])
    if batch is None:
        op.fail(types, "BCAST-1", f"batch dimensions {list(a.shape[:-2])} and "
                f"{list(b.shape[:-2])} are not broadcastable")
    if a.shape[:-2] != batch:
        a = broadcast_to(a, batch + a.shape[-2:])
    if b.shape[:-2] != batch:
        b = broadcast_to(b, batch + b.shape[-2:])
    out = stage1("matmul", (a, b))
    if lhs.rank == 1 or rhs.rank == 1:
        keep = out.shape[:-2] + (out.shape[-2:-1] if lhs.rank > 1 else ()) + (
            out.shape[-1:] if rhs.rank > 1 else ())
        out = reshape(out, keep)
    return out


def band_part(x: TensorValue, num_lower: int | None = None, num_upper: int | None = None,
              exclude: bool = False) -> TensorValue:
    """Keep the band ``-num_lower <= column - row <= num_upper`` of each matrix in the last
    two axes (``None`` or -1: no limit on that side), zero the rest (or, with ``exclude``,
    the band)."""
    attrs = {"num_lower": -1 if num_lower is None else num_lower,
             "num_upper": -1 if num_upper is None else num_upper, "exclude": exclude}
    return stage1("band_part", (x,), {k: int(v) if isinstance(v, np.integer) else v
                                      for k, v in attrs.items()})


__all__ = ["band_part", "matmul"]
