"""Shape and data-movement graph-building functions (MAX ``ops`` names).

Builders normalize their arguments (negative axes, -1 in shapes, flat paddings, index
expressions) into the canonical attributes of the primitive ops in
``interpreter/registry/shape.py``; the primitive type rules do the checking.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...dtype import DType
from ...errors import GraphIndexError, GraphShapeError, GraphTypeError
from ...types import DeviceRef
from ...validators import axis_problem
from ..core import TensorValue, Value
from .indexing import expand_index, result_shape, slice_triples
from .staging import DEFAULT_FLOAT, DEFAULT_INT, constant, graph_of, is_scalar, stage, stage1


def _axis(op: str, x: TensorValue, axis: Any, rank: int | None = None,
          rule: str = "AXIS-1") -> int:
    """``axis`` normalized to [0, rank) (negative counts from the end), else AXIS-1."""
    rank = x.rank if rank is None else rank
    if axis_problem(axis, rank, numpy_ints=True) is not None:
        raise GraphShapeError(f"{op}: axis {axis!r} is out of range for {x.type}; expected "
                              f"an int in [{-rank}, {rank}) [{rule}]")
    return int(axis) % rank


def _py_int(v: Any) -> Any:
    """numpy integers become Python ints; anything else is left for the type rule."""
    return int(v) if isinstance(v, np.integer) else v


def _soft_axis(x: TensorValue, axis: Any) -> Any:
    """Normalize a valid axis; pass an invalid one through for the primitive to report."""
    if axis_problem(axis, x.rank, numpy_ints=True) is None:
        return int(axis) % x.rank
    return axis


def broadcast_to(x: TensorValue, shape: Sequence[int]) -> TensorValue:
    return stage1("broadcast_to", (x,), {"shape": tuple(int(d) for d in shape)})


def reshape(x: TensorValue, shape: Sequence[int]) -> TensorValue:
    """Reshape; one dimension may be -1 (inferred)."""
    dims = [int(d) for d in shape]
    if dims.count(-1) > 1:
        raise GraphShapeError(f"reshape: at most one -1 in shape {dims} [reshape.C1]")
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        n = x.type.num_elements
        if known == 0 or n % known:
            raise GraphShapeError(f"reshape: cannot infer -1 in {dims} for {x.type} "
                                  "[reshape.C1]")
        dims[dims.index(-1)] = n // known
    return stage1("reshape", (x,), {"shape": tuple(dims)})


def squeeze(x: TensorValue, axis: int) -> TensorValue:
    """Remove axis ``axis`` (negative counts from the end), which must have length 1."""
    return stage1("squeeze", (x,), {"axis": _soft_axis(x, axis)})


def unsqueeze(x: TensorValue, axis: int) -> TensorValue:
    """Insert a length-1 axis at position ``axis`` in [-(rank+1), rank+1) (AXIS-2)."""
    valid = axis_problem(axis, x.rank + 1, numpy_ints=True) is None
    return stage1("unsqueeze", (x,), {"axis": int(axis) % (x.rank + 1) if valid else axis})


def flatten(x: TensorValue, start_dim: int = 0, end_dim: int = -1) -> TensorValue:
    """Merge axes ``start_dim..end_dim`` (inclusive) into one; a rank-0 tensor gives [1]."""
    if x.rank == 0:
        return reshape(x, (1,))
    s, e = _axis("flatten", x, start_dim), _axis("flatten", x, end_dim)
    if s > e:
        raise GraphShapeError(f"flatten: start_dim {start_dim} is after end_dim {end_dim} "
                              f"for {x.type} [reshape.C3]")
    merged = math.prod(x.shape[s:e + 1])
    return reshape(x, (*x.shape[:s], merged, *x.shape[e + 1:]))


def permute(x: TensorValue, dims: Sequence[int]) -> TensorValue:
    """Reorder axes: result axis i is input axis ``dims[i]`` (negative counts from the end)."""
    perm = tuple(_axis("permute", x, d) for d in dims)
    return stage1("permute", (x,), {"perm": perm})


def transpose(x: TensorValue, axis_1: int, axis_2: int) -> TensorValue:
    """Swap two axes (``x.T`` is ``transpose(x, -1, -2)``)."""
    a, b = _axis("transpose", x, axis_1), _axis("transpose", x, axis_2)
    perm = list(range(x.rank))
    perm[a], perm[b] = perm[b], perm[a]
    return stage1("permute", (x,), {"perm": tuple(perm)})


def concat(values: Sequence[TensorValue], axis: int = 0) -> TensorValue:
    """Join tensors of one dtype along an existing axis."""
    vals = tuple(values)
    if not vals:
        raise GraphShapeError("concat: needs at least one value [GRAPH-4]")
    return stage1("concat", vals, {"axis": _soft_axis(vals[0], axis)})


def split(x: TensorValue, split_sizes: int | Sequence[int], axis: int = 0
          ) -> list[TensorValue]:
    """Pieces along ``axis``: explicit sizes (summing to the axis size), or an int chunk size
    (torch-like: equal chunks, the last one smaller; split.C3)."""
    a = _axis("split", x, axis)
    if isinstance(split_sizes, bool):
        raise GraphTypeError(f"split: split_sizes must be an int or ints, got {split_sizes!r} "
                             "[split.C1]")
    if isinstance(split_sizes, int | np.integer):
        chunk, n = int(split_sizes), x.shape[a]
        if chunk <= 0:
            raise GraphShapeError(f"split: chunk size {chunk} must be >= 1 [split.C3]")
        sizes = [chunk] * (n // chunk) + ([n % chunk] if n % chunk or n == 0 else [])
    else:
        sizes = [_py_int(s) for s in split_sizes]
    return list(stage("split", (x,), {"sizes": tuple(sizes), "axis": a}))  # type: ignore[arg-type]


def gather(x: TensorValue, indices: TensorValue, axis: int) -> TensorValue:
    """``np.take(x, indices, axis)``; out-of-range indices give unspecified values."""
    return stage1("gather", (x, indices), {"axis": _soft_axis(x, axis)})


def scatter(x: TensorValue, updates: TensorValue, indices: TensorValue, axis: int
            ) -> TensorValue:
    """Copy of ``x`` with ``updates`` written at ``indices`` along ``axis``
    (np.put_along_axis; the last duplicate in row-major order wins)."""
    return stage1("scatter", (x, updates, indices), {"axis": _soft_axis(x, axis)})


def where(condition: Any, x: Any, y: Any) -> TensorValue:
    """``x`` where ``condition`` else ``y``; Python scalars are weak, and two scalars take
    the default dtype of their kind (float32 if either is a float; select.C2)."""
    graph = graph_of((condition, x, y))
    device = next((a.device for a in (condition, x, y) if isinstance(a, Value)),
                  DeviceRef.CPU())
    if is_scalar(condition):
        if not isinstance(condition, bool | np.bool_):
            raise GraphTypeError(f"where: condition must be bool, got {condition!r} "
                                 "[select.C1]")
        condition = constant(graph, bool(condition), DType.bool, device)
    if is_scalar(x) and is_scalar(y):
        kinds = {np.asarray(v).dtype.kind for v in (x, y)}
        dtype = DEFAULT_FLOAT if "f" in kinds else DEFAULT_INT if kinds & {"i", "u"} \
            else DType.bool
        x, y = constant(graph, x, dtype, device), constant(graph, y, dtype, device)
    return stage1("select", (condition, x, y))


def pad(x: TensorValue, paddings: Sequence[Any], mode: str = "constant",
        value: bool | int | float = 0) -> TensorValue:
    """Pad with ``value`` (``mode="constant"``), a reflection (``"reflect"``) or the edge
    elements (``"edge"``): ``paddings`` is one ``(lo, hi)`` pair per axis or MAX's flat
    ``[lo0, hi0, lo1, hi1, ...]`` (MAX's signature: ``mode`` before ``value``)."""
    items = list(paddings)
    if all(isinstance(p, int | np.integer) for p in items):
        if len(items) != 2 * x.rank:
            raise GraphShapeError(f"pad: flat paddings {items} must have 2 * rank = "
                                  f"{2 * x.rank} entries for {x.type} [pad.C1]")
        items = [(items[2 * i], items[2 * i + 1]) for i in range(x.rank)]
    pairs = tuple(tuple(_py_int(v) for v in p) if isinstance(p, list | tuple) else p
                  for p in items)
    if isinstance(value, np.generic):
        value = value.item()
    return stage1("pad", (x,), {"paddings": pairs, "value": value, "mode": mode})


def tile(x: TensorValue, repeats: Sequence[int]) -> TensorValue:
    """Repeat the whole tensor ``repeats[i]`` times along each axis ``i``."""
    return stage1("tile", (x,), {"repeats": tuple(_py_int(r) for r in repeats)})


def slice_tensor(x: TensorValue, index: Any) -> TensorValue:
    """numpy basic indexing: ints, slices (negative steps), Ellipsis, None (INDEX-1..4)."""
    plain = tuple(i for i in (index if isinstance(index, tuple) else (index,)) if i is not None)
    triples, region = slice_triples("getitem", x.shape, plain)
    out = stage1("slice", (x,), {"slices": triples})
    final = result_shape(x.shape, index, region)
    return out if final == out.shape else reshape(out, final)


def _is_array_index(item: object) -> bool:
    return isinstance(item, list | np.ndarray | TensorValue)


def gather_index(x: TensorValue, index: Any, axis: int = 0) -> TensorValue:
    """``x[..., index, ...]`` for a 1-D list of ints, an integer numpy array or an int32/int64
    tensor at ``axis``: a gather (INDEX-5). Known indices are bounds-checked (INDEX-1)."""
    if x.rank == 0:
        raise GraphIndexError(f"getitem: too many indices for {x.type} [INDEX-3]")
    dim = x.shape[axis]
    if isinstance(index, TensorValue):
        if index.dtype not in (DType.int32, DType.int64):
            raise GraphTypeError(f"getitem: a tensor index must be int32 or int64, got "
                                 f"{index.type} (bool masks are not supported) [INDEX-4]")
        return gather(x, index, axis)
    if isinstance(index, list):
        if not all(isinstance(i, int | np.integer) and not isinstance(i, bool | np.bool_)
                   for i in index):
            raise GraphTypeError(f"getitem: a list index must be a flat list of ints, got "
                                 f"{index!r} [INDEX-4]")
        arr = np.array([int(i) for i in index], np.int64)
    elif index.dtype.kind in "iu":
        arr = index.astype(np.int64)
    else:
        raise GraphTypeError(f"getitem: an array index must have an integer dtype, got "
                             f"{index.dtype} [INDEX-4]")
    bad = arr[(arr < -dim) | (arr >= dim)]
    if bad.size:
        raise GraphIndexError(f"getitem: index {int(bad[0])} is out of bounds for axis {axis} "
                              f"with size {dim} [INDEX-1]")
    return gather(x, constant(x.graph, arr, DType.int64, x.device), axis)


def getitem(x: TensorValue, index: Any) -> TensorValue:
    """``x[index]``: basic indexing (INDEX-1..4), or a gather for one 1-D int list / integer
    tensor, alone or among slices and Ellipsis (INDEX-5)."""
    items = index if isinstance(index, tuple) else (index,)
    arrays = [i for i, item in enumerate(items) if _is_array_index(item)]
    if not arrays:
        return slice_tensor(x, index)
    if len(arrays) > 1 or any(not (isinstance(item, slice) or item is Ellipsis or k in arrays)
                              for k, item in enumerate(items)):
        raise GraphTypeError(f"getitem: unsupported index {index!r}; a list or tensor index "
                             "may only be combined with slices and Ellipsis [INDEX-4]")
    k = arrays[0]
    full = expand_index("getitem", x.rank, tuple(slice(None) if i == k else item
                                                 for i, item in enumerate(items)))
    axis = next(a for a, item in enumerate(expand_index(
        "getitem", x.rank, tuple(0 if i == k else item for i, item in enumerate(items))))
        if not isinstance(item, slice))
    trivial = all(isinstance(i, slice) and i == slice(None) for i in full)
    return gather_index(x if trivial else slice_tensor(x, tuple(full)), items[k], axis)


__all__ = [
    "broadcast_to",
    "concat",
    "flatten",
    "gather",
    "gather_index",
    "getitem",
    "pad",
    "permute",
    "reshape",
    "scatter",
    "slice_tensor",
    "split",
    "squeeze",
    "tile",
    "transpose",
    "unsqueeze",
    "where",
]
