"""Shape and data-movement ops (spec/ops/). All are exact: they only move elements.

Kernels compute in the namespace of their operands (``xp``: numpy, or CuPy on a GPU,
``interpreter/arrays.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import arrays
from ..dtype import DType
from ..errors import GraphTypeError
from ..promotion import broadcast_shapes
from ..types import ValueType
from ..validators import int_tuple_problem, is_int, sliced_shape
from .attrtypes import AttrType
from .buffer import check_slices
from .core import EXACT, ArgSource, Attrs, OpCall, OpDef, register
from .dtypesets import ALL, BOOL, INDEX
from .padding import pad_infer, pad_kernel, pad_sample
from .indexing import scatter_axis_sample
from .rules import same_types

__all__ = [
    "check_shape_attr",
]

Array = Any  # a numpy array, or a CuPy array on a GPU
#: The data-movement ops here copy element bytes (DT-6); ``pad``'s padding does not.
_BYTE_COPY = frozenset({"byte-copy"})


def check_shape_attr(op: OpDef, types: Sequence[ValueType], shape: object) -> tuple[int, ...]:
    return _int_tuple(op, types, "SHAPE-1", "shape", shape)


def _int_tuple(op: OpDef, types: Sequence[ValueType], rule: str, name: str, value: object,
               length: int | None = None) -> tuple[int, ...]:
    """Validate an attribute that is a tuple of ints >= 0 (of ``length`` if given)."""
    problem = int_tuple_problem(name, value, length)
    if problem is not None:
        op.fail(types, rule, problem)
    return value  # type: ignore[return-value]


def _same_device(op: OpDef, types: Sequence[ValueType]) -> None:
    if len({t.device for t in types}) > 1:
        op.fail(types, "DEV-1", "operands must be on the same device; transfer first")


def _data(src: ArgSource) -> tuple[DType, tuple[int, ...]]:
    """A random dtype and shape for the data operand of a sample."""
    return src.dtype(ALL, data=True), src.shape()


# -- broadcast_to --------------------------------------------------------------------------
def _broadcast_to_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                        ) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    shape = check_shape_attr(op, types, attrs.get("shape"))
    if len(shape) < t.rank or broadcast_shapes([t.shape, shape]) != shape:
        op.fail(types, "BCAST-2", f"cannot broadcast shape {list(t.shape)} to {list(shape)}")
    return (t.with_(shape=shape),)


def _broadcast_to(x: Array, *, shape: tuple[int, ...]) -> Array:
    xp = arrays.namespace(x)
    return xp.broadcast_to(x, shape)


def _broadcast_to_sample(src: ArgSource) -> OpCall:
    dtype, target = _data(src)
    start = src.integer(0, len(target))  # x keeps a suffix of the target, some dims 1
    shape = tuple(1 if src.boolean() else d for d in target[start:])
    return OpCall([src.values(dtype, shape)], {"shape": target})


register(OpDef("broadcast_to",
               summary="Stretch size-1 and missing leading dims to a target shape.",
               category="shape", operands=("x",), attrs=("shape",), infer=_broadcast_to_infer,
               kernel=_broadcast_to, dtypes=ALL, tolerance=EXACT, sample=_broadcast_to_sample,
               traits=frozenset({"byte-copy", "lowering-broadcast", "fusable",
                                 "broadcast-view"})))


# -- reshape -------------------------------------------------------------------------------
def _reshape_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                   ) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    shape = check_shape_attr(op, types, attrs.get("shape"))
    n = math.prod(shape)
    if n != t.num_elements:
        op.fail(types, "reshape.C1", f"cannot reshape {t.num_elements} elements to shape "
                f"{list(shape)} ({n} elements)")
    return (t.with_(shape=shape),)


def _reshape(x: Array, *, shape: tuple[int, ...]) -> Array:
    xp = arrays.namespace(x)
    return xp.reshape(x, shape)


def _reshape_sample(src: ArgSource) -> OpCall:
    dtype, shape = _data(src)
    n = math.prod(shape)
    if n == 0:
        target = src.shape(min_rank=1)
        target = (0, *target[1:])
    else:  # split n into a random factorization, in random order
        dims: list[int] = []
        rest = n
        for f in (2, 3, 5, 7):
            while rest % f == 0:
                rest //= f
                dims.append(f)
        dims.append(rest)
        grown = [1] * src.integer(0, 2)
        for d in dims:
            if grown and src.boolean():
                grown[src.integer(0, len(grown) - 1)] *= d
            else:
                grown.append(d)
        target = tuple(t for t in grown if t != 1 or src.boolean())
    return OpCall([src.values(dtype, shape)], {"shape": tuple(target)})


register(OpDef("reshape", summary="Same elements in row-major order, new shape.", category="shape",
               operands=("x",), attrs=("shape",), infer=_reshape_infer, kernel=_reshape,
               dtypes=ALL, tolerance=EXACT, sample=_reshape_sample, traits=_BYTE_COPY))


# -- squeeze, unsqueeze --------------------------------------------------------------------
def _squeeze_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                   ) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    axis = op.check_axis(types, attrs.get("axis"), t.rank)
    if t.shape[axis] != 1:
        op.fail(types, "squeeze.C1", f"axis {attrs.get('axis')} has length {t.shape[axis]}, "
                "not 1")
    return (t.with_(shape=t.shape[:axis] + t.shape[axis + 1:]),)


def _unsqueeze_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                     ) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    axis = op.check_axis(types, attrs.get("axis"), t.rank + 1, "AXIS-2")
    return (t.with_(shape=(*t.shape[:axis], 1, *t.shape[axis:])),)


def _squeeze(x: Array, *, axis: int) -> Array:
    xp, a = arrays.namespace(x), axis % x.ndim
    return xp.reshape(x, x.shape[:a] + x.shape[a + 1:])


def _unsqueeze(x: Array, *, axis: int) -> Array:
    xp, a = arrays.namespace(x), axis % (x.ndim + 1)
    return xp.reshape(x, (*x.shape[:a], 1, *x.shape[a:]))


def _squeeze_sample(src: ArgSource) -> OpCall:
    dtype, shape = src.dtype(ALL, data=True), list(src.shape(max_rank=3))
    axis = src.integer(-len(shape) - 1, len(shape))  # where the size-1 axis goes
    shape.insert(axis % (len(shape) + 1), 1)
    return OpCall([src.values(dtype, tuple(shape))], {"axis": axis})


def _unsqueeze_sample(src: ArgSource) -> OpCall:
    dtype, shape = _data(src)
    return OpCall([src.values(dtype, shape)],
                  {"axis": src.integer(-len(shape) - 1, len(shape))})


register(OpDef("squeeze", summary="Remove one axis of length 1.", category="shape",
               operands=("x",), attrs=("axis",), infer=_squeeze_infer, kernel=_squeeze,
               dtypes=ALL, tolerance=EXACT, sample=_squeeze_sample, traits=_BYTE_COPY))
register(OpDef("unsqueeze", summary="Insert an axis of length 1 at a position in "
                                    "[-(rank + 1), rank].",
               category="shape", operands=("x",), attrs=("axis",), infer=_unsqueeze_infer,
               kernel=_unsqueeze, dtypes=ALL, tolerance=EXACT, sample=_unsqueeze_sample,
               traits=_BYTE_COPY))


# -- slice ---------------------------------------------------------------------------------
def _slice_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    slices = check_slices(op, types, t.shape, attrs.get("slices"))
    return (t.with_(shape=sliced_shape(t.shape, slices)),)


def _slice(x: Array, *, slices: tuple[tuple[int | None, int | None, int], ...]) -> Array:
    return x[tuple(slice(a, b, c) for a, b, c in slices)]


def _slice_sample(src: ArgSource) -> OpCall:
    dtype, shape = _data(src)
    triples = []
    for d in shape:
        bound: list[int | None] = [None, *range(-d - 2, d + 3)]
        step = src.choice([1, 1, 2, 3, -1, -2])
        triples.append((src.choice(bound), src.choice(bound), step))
    return OpCall([src.values(dtype, shape)], {"slices": tuple(triples)})


register(OpDef("slice",
               summary="Strided slice, one (start, stop, step) per axis; steps may be "
                       "negative; numpy clamping.",
               category="shape", operands=("x",), attrs=("slices",), infer=_slice_infer,
               kernel=_slice, dtypes=ALL, tolerance=EXACT, sample=_slice_sample, traits=_BYTE_COPY))


# -- permute -------------------------------------------------------------------------------
def _permute_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                   ) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    perm = attrs.get("perm")
    if not isinstance(perm, tuple) or not all(is_int(p) for p in perm) \
            or sorted(perm) != list(range(t.rank)):
        op.fail(types, "permute.C1", f"attribute perm must be a permutation of "
                f"range({t.rank}), got {perm!r}")
    return (t.with_(shape=tuple(t.shape[p] for p in perm)),)


def _permute(x: Array, *, perm: tuple[int, ...]) -> Array:
    xp = arrays.namespace(x)
    return xp.transpose(x, perm)


def _permute_sample(src: ArgSource) -> OpCall:
    dtype, shape = _data(src)
    perm = list(range(len(shape)))
    for i in range(len(perm) - 1, 0, -1):  # Fisher-Yates
        j = src.integer(0, i)
        perm[i], perm[j] = perm[j], perm[i]
    return OpCall([src.values(dtype, shape)], {"perm": tuple(perm)})


register(OpDef("permute", summary="Reorder the axes: result axis i is input axis perm[i].",
               category="shape", operands=("x",), attrs=("perm",), infer=_permute_infer,
               kernel=_permute, dtypes=ALL, tolerance=EXACT, sample=_permute_sample,
               traits=_BYTE_COPY))


# -- concat --------------------------------------------------------------------------------
def _concat_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                  ) -> tuple[ValueType, ...]:
    first = op.check_tensor(types, 0)
    axis = op.check_axis(types, attrs.get("axis"), first.rank)
    total = 0
    for i in range(len(types)):
        t = op.check_tensor(types, i)
        if t.dtype != first.dtype:
            op.fail(types, "concat.C1", "all operands must have the same dtype; cast first",
                    GraphTypeError)
        if t.rank != first.rank or any(
                a != b for k, (a, b) in enumerate(zip(t.shape, first.shape, strict=True))
                if k != axis):
            op.fail(types, "concat.C2", f"operand {i} has shape {list(t.shape)}; all "
                    f"operands must have rank {first.rank} and equal dims except axis {axis}")
        total += t.shape[axis]
    _same_device(op, types)
    shape = list(first.shape)
    shape[axis] = total
    return (first.with_(shape=tuple(shape)),)


def _concat(*values: Array, axis: int) -> Array:
    xp = arrays.namespace(values[0])
    return xp.concatenate(values, axis=axis)


def _concat_sample(src: ArgSource) -> OpCall:
    dtype, shape = src.dtype(ALL, data=True), src.shape(min_rank=1)
    axis = src.integer(-len(shape), len(shape) - 1)
    arrays = []
    for _ in range(src.integer(1, 4)):
        s = list(shape)
        s[axis] = src.axis_size(0, 4, rest=math.prod(s[:axis] + s[axis + 1:]))
        arrays.append(src.values(dtype, tuple(s)))
    return OpCall(arrays, {"axis": axis})


register(OpDef("concat", summary="Join tensors of one dtype along an existing axis.",
               category="shape", operands=("values",), attrs=("axis",), infer=_concat_infer,
               kernel=_concat, dtypes=ALL, tolerance=EXACT, variadic=True, sample=_concat_sample,
               traits=_BYTE_COPY))


# -- split ---------------------------------------------------------------------------------
def _split_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    axis = op.check_axis(types, attrs.get("axis"), t.rank)
    sizes = _int_tuple(op, types, "split.C1", "sizes", attrs.get("sizes"))
    if not sizes:
        op.fail(types, "split.C1", "attribute sizes must not be empty")
    if sum(sizes) != t.shape[axis]:
        op.fail(types, "split.C2", f"sizes {list(sizes)} sum to {sum(sizes)}, but axis "
                f"{axis} has size {t.shape[axis]}")
    out = []
    for s in sizes:
        shape = list(t.shape)
        shape[axis] = s
        out.append(t.with_(shape=tuple(shape)))
    return tuple(out)


def _split(x: Array, *, sizes: tuple[int, ...], axis: int) -> Array | tuple[Array, ...]:
    cuts = np.cumsum(sizes)[:-1].tolist()  # host ints, from the attribute
    xp = arrays.namespace(x)
    pieces = tuple(xp.split(x, cuts, axis=axis))
    return pieces if len(pieces) > 1 else pieces[0]  # one result: a plain array (kernel API)


def _split_sample(src: ArgSource) -> OpCall:
    dtype, shape = src.dtype(ALL, data=True), src.shape(min_rank=1)
    axis = src.integer(-len(shape), len(shape) - 1)
    sizes: list[int] = []
    rest = shape[axis]
    while rest or not sizes or src.integer(0, 3) == 0:
        s = src.integer(0, rest)
        sizes.append(s)
        rest -= s
        if len(sizes) > 6:
            sizes.append(rest)
            break
    return OpCall([src.values(dtype, shape)], {"sizes": tuple(sizes), "axis": axis})


register(OpDef("split", summary="Cut a tensor along an axis into pieces of the given sizes.",
               category="shape", operands=("x",), attrs=("sizes", "axis"), infer=_split_infer,
               kernel=_split, dtypes=ALL, tolerance=EXACT, sample=_split_sample, traits=_BYTE_COPY))


# -- gather --------------------------------------------------------------------------------
def _gather_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                  ) -> tuple[ValueType, ...]:
    x = op.check_tensor(types, 0)
    idx = op.check_tensor(types, 1)
    if idx.dtype not in INDEX:
        op.fail(types, "gather.C1", f"indices dtype {idx.dtype.value} must be int32 or int64",
                GraphTypeError)
    axis = op.check_axis(types, attrs.get("axis"), x.rank)
    _same_device(op, types)
    return (x.with_(shape=x.shape[:axis] + idx.shape + x.shape[axis + 1:]),)


def _normalized_index(indices: Array, n: int) -> Array:
    """Indices as int64 with negatives counted from the end (may still be out of range)."""
    idx = indices.astype(np.int64)
    xp = arrays.namespace(idx)
    return xp.where(idx < 0, idx + n, idx)


def _gather(x: Array, indices: Array, *, axis: int) -> Array:
    xp, n = arrays.namespace(x), x.shape[axis]
    axis %= x.ndim
    if n == 0:  # every index is out of range: unspecified, the reference gives zeros
        shape = x.shape[:axis] + indices.shape + x.shape[axis + 1:]
        return xp.zeros(shape, x.dtype)
    idx = xp.clip(_normalized_index(indices, n), 0, n - 1)  # out of range: unspecified
    return xp.take(x, idx, axis=axis)


def _gather_unspecified(x: np.ndarray, indices: np.ndarray, *, axis: int) -> np.ndarray:
    """Result elements read through an out-of-range index are unspecified (gather.C3)."""
    axis %= x.ndim
    n = x.shape[axis]
    bad = (indices < -n) | (indices >= n)
    shape = x.shape[:axis] + indices.shape + x.shape[axis + 1:]
    lead = (1,) * axis
    trail = (1,) * (x.ndim - axis - 1)
    return np.broadcast_to(bad.reshape(lead + indices.shape + trail), shape)


def _gather_sample(src: ArgSource) -> OpCall:
    dtype, shape = src.dtype(ALL, data=True), src.shape(min_rank=1, max_rank=3)
    axis = src.integer(-len(shape), len(shape) - 1)
    n = shape[axis]
    rest = math.prod(shape) // n if n else 1
    ishape = src.shape(max_rank=2, rest=rest) if n else (0,)
    idtype = src.dtype(INDEX)
    return OpCall([src.values(dtype, shape), src.values(idtype, ishape, f"index:{n}")],
                  {"axis": axis})


register(OpDef("gather", summary="Pick slices of x along an axis by integer indices (np.take).",
               category="shape", operands=("x", "indices"), attrs=("axis",), infer=_gather_infer,
               kernel=_gather, dtypes=ALL, tolerance=EXACT, operand_dtypes=(ALL, INDEX),
               unspecified=_gather_unspecified, sample=_gather_sample, traits=_BYTE_COPY))


# -- scatter -------------------------------------------------------------------------------
def _scatter_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                   ) -> tuple[ValueType, ...]:
    x = op.check_tensor(types, 0)
    upd = op.check_tensor(types, 1)
    idx = op.check_tensor(types, 2)
    if upd.dtype != x.dtype:
        op.fail(types, "scatter.C1", "updates must have the dtype of x; cast first",
                GraphTypeError)
    if idx.dtype not in INDEX:
        op.fail(types, "scatter.C2", f"indices dtype {idx.dtype.value} must be int32 or "
                "int64", GraphTypeError)
    axis = op.check_axis(types, attrs.get("axis"), x.rank)
    if idx.shape != upd.shape:
        op.fail(types, "scatter.C3", "indices and updates must have the same shape")
    if idx.rank != x.rank or any(
            a != b for k, (a, b) in enumerate(zip(idx.shape, x.shape, strict=True))
            if k != axis):
        op.fail(types, "scatter.C3", f"indices must have rank {x.rank} and the dims of x "
                f"except on axis {axis}")
    _same_device(op, types)
    return (x,)


def _scatter(x: Array, updates: Array, indices: Array, *, axis: int) -> Array:
    """Copy of x with ``out[..., indices[p], ...] = updates[p]``; the last write in
    row-major order of ``p`` wins; out-of-range writes are dropped (unspecified). Each
    target is written once (its last write, picked by ``unique``'s first occurrence in the
    reversed order), so no namespace has to order duplicate writes."""
    xp, out = arrays.namespace(x), x.copy()
    axis %= x.ndim
    idx = _normalized_index(indices, x.shape[axis])
    valid = (idx >= 0) & (idx < x.shape[axis])
    coords: list[Any] = list(xp.indices(indices.shape))  # row-major positions p
    coords[axis] = idx
    flat: Any = xp.ravel_multi_index(tuple(c[valid] for c in coords), x.shape)
    if flat.size:
        _, first_in_reversed = xp.unique(flat[::-1], return_index=True)
        last = flat.size - 1 - first_in_reversed  # last occurrence of each target
        out.reshape(-1)[flat[last]] = updates[valid][last]
    return out


def _scatter_unspecified(x: np.ndarray, updates: np.ndarray, indices: np.ndarray, *,
                         axis: int) -> np.ndarray:
    """A line along ``axis`` that receives an out-of-range index is unspecified (scatter.C5)."""
    axis %= x.ndim
    n = x.shape[axis]
    bad = (indices < -n) | (indices >= n)
    return np.broadcast_to(np.any(bad, axis=axis, keepdims=True), x.shape)


register(OpDef("scatter",
               summary="Copy of x with updates written at indices along an axis "
                       "(np.put_along_axis; last write wins).",
               category="shape", operands=("x", "updates", "indices"), attrs=("axis",),
               infer=_scatter_infer, kernel=_scatter, dtypes=ALL, tolerance=EXACT,
               unspecified=_scatter_unspecified, sample=scatter_axis_sample(ALL, "any"),
               operand_dtypes=(ALL, ALL, INDEX), traits=_BYTE_COPY))


# -- select --------------------------------------------------------------------------------
def _select_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                  ) -> tuple[ValueType, ...]:
    cond = op.check_tensor(types, 0)
    if cond.dtype is not DType.bool:
        op.fail(types, "select.C1", "condition must be bool", GraphTypeError)
    t = same_types(op, types[1:])
    if cond.shape != t.shape:
        op.fail(types, "LOWER-1", "primitive operands must have identical shapes")
    _same_device(op, types)
    return (t,)


def _select(cond: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(cond, x, y)


def _sub_shape(src: ArgSource, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to ``shape``: a suffix of it with some dims set to 1."""
    return tuple(1 if src.boolean() else d for d in shape[src.integer(0, len(shape)):])


def _select_sample(src: ArgSource) -> OpCall:
    dtype, shape = _data(src)
    shapes = [shape] * 3  # equal shapes half of the time (the "general" cells)
    if src.boolean():
        shapes = [_sub_shape(src, shape) for _ in range(3)]
        shapes[src.integer(0, 2)] = shape  # one operand has the full shape
    return OpCall([src.values(DType.bool, shapes[0]), src.values(dtype, shapes[1]),
                   src.values(dtype, shapes[2])])


register(OpDef("select",
               summary="Elementwise choice: x where condition is true, else y (ops.where).",
               category="shape", operands=("condition", "x", "y"), attrs=(), infer=_select_infer,
               kernel=_select, dtypes=BOOL, tolerance=EXACT, promote=(1, 2), broadcast=True,
               sample=_select_sample, result_dtypes=ALL, operand_dtypes=(BOOL, ALL, ALL),
               data_operand=1, traits=_BYTE_COPY | {"fusable"}))


# -- pad (type rule, kernel and sampler in padding.py) ------------------------------------
register(OpDef("pad", summary="Pad a tensor with a constant, a reflection or its edge values "
                              "(np.pad's constant, reflect and edge modes).",
               category="shape", operands=("x",), attrs=("paddings", "value", "mode"),
               infer=pad_infer, kernel=pad_kernel, dtypes=ALL, tolerance=EXACT,
               sample=pad_sample,
               attr_types={"value": AttrType("int | float | bool",
                                             lambda v: type(v) in (int, float, bool),
                                             "a Python scalar, converted to the operand's "
                                             "dtype"),
                           "mode": AttrType("str", lambda v: type(v) is str,
                                            "'constant', 'reflect' or 'edge'")}))


# -- tile ----------------------------------------------------------------------------------
def _tile_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    repeats = _int_tuple(op, types, "tile.C1", "repeats", attrs.get("repeats"), t.rank)
    return (t.with_(shape=tuple(d * r for d, r in zip(t.shape, repeats, strict=True))),)


def _tile(x: Array, *, repeats: tuple[int, ...]) -> Array:
    xp = arrays.namespace(x)
    return xp.tile(x, repeats)


def _tile_sample(src: ArgSource) -> OpCall:
    dtype, shape = src.dtype(ALL, data=True), src.shape(max_rank=3, max_side=3)
    return OpCall([src.values(dtype, shape)],
                  {"repeats": tuple(src.integer(0, 3) for _ in shape)})


register(OpDef("tile", summary="Repeat the whole tensor repeats[i] times along each axis i.",
               category="shape", operands=("x",), attrs=("repeats",), infer=_tile_infer,
               kernel=_tile, dtypes=ALL, tolerance=EXACT, sample=_tile_sample, traits=_BYTE_COPY))
