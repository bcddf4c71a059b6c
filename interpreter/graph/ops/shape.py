"""Shape and data-movement graph-building functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import GraphShapeError
from ..core import TensorValue
from ._staging import stage1
from .indexing import result_shape, slice_triples


def broadcast_to(x: TensorValue, shape: Sequence[int]) -> TensorValue:
    return stage1("broadcast_to", (x,), {"shape": tuple(int(d) for d in shape)})


def reshape(x: TensorValue, shape: Sequence[int]) -> TensorValue:
    """Reshape; one dimension may be -1 (inferred)."""
    dims = [int(d) for d in shape]
    if dims.count(-1) > 1:
        raise GraphShapeError(f"reshape: at most one -1 in shape {dims} [reshape.C1]")
    if -1 in dims:
        known = 1
        for d in dims:
            if d != -1:
                known *= d
        n = x.type.num_elements
        if known == 0 or n % known:
            raise GraphShapeError(f"reshape: cannot infer -1 in {dims} for {x.type} "
                                  "[reshape.C1]")
        dims[dims.index(-1)] = n // known
    return stage1("reshape", (x,), {"shape": tuple(dims)})


def slice_tensor(x: TensorValue, index: Any) -> TensorValue:
    """numpy basic indexing: ints, slices (negative steps), Ellipsis, None (INDEX-1..4)."""
    plain = tuple(i for i in (index if isinstance(index, tuple) else (index,)) if i is not None)
    triples, region = slice_triples("getitem", x.shape, plain)
    out = stage1("slice", (x,), {"slices": triples})
    final = result_shape(x.shape, index, region)
    return out if final == out.shape else reshape(out, final)


def getitem(x: TensorValue, index: Any) -> TensorValue:
    """``x[index]``: basic indexing, or a gather for a 1-D int list / int tensor (INDEX-5)."""
    if isinstance(index, list | TensorValue):
        from .shape_more import gather_index

        return gather_index(x, index)
    return slice_tensor(x, index)

__all__ = [
    "broadcast_to",
    "getitem",
    "reshape",
    "slice_tensor",
]
