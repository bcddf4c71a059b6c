"""Linear-algebra graph-building functions (MAX ``ops`` names; spec/ops/matmul.md)."""

from __future__ import annotations

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


__all__ = ["matmul"]
