"""Gathers and scatters by index vectors, scatter reductions and argsort (spec/ops/).

Index rules shared by every op here (spec/ops/gather_nd.md, scatter_add.md): indices are
int32 or int64; a negative index counts from the end of its axis; an index set that is
non-empty while an axis it indexes is empty is an error at staging (every index would be
out of range); any other out-of-range index makes the result elements it could reach
unspecified. Kernels compute in the namespace of their operands (``xp``: numpy, or CuPy on
a GPU, ``interpreter/arrays.py``); the pieces they share are in ``registry/targets.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import arrays
from ..dtype import DType
from ..errors import GraphIndexError, GraphTypeError
from ..types import TensorType, ValueType
from ..validators import is_int
from .core import EXACT, ArgSource, Attrs, OpCall, OpDef, Tolerance, register
from .dtypesets import ALL, INDEX, NUMERIC
from .reduction import float_info, saturating, widen
from .targets import (
    COMBINE,
    axis_targets,
    combine_at,
    finite_abs,
    host_targets,
    in_range,
    index_columns,
    max_of,
    nd_targets,
)

Array = Any
Operands = Sequence[np.ndarray]
_INT64 = frozenset({DType.int64})
_SORT = frozenset({"nan-last-sort"})


# -- shared type rules ---------------------------------------------------------------------------
def _same_device(op: OpDef, types: Sequence[ValueType]) -> None:
    if len({t.device for t in types}) > 1:
        op.fail(types, "DEV-1", "operands must be on the same device; transfer first")


def _index_operand(op: OpDef, types: Sequence[ValueType], i: int, rule: str) -> TensorType:
    t = op.check_tensor(types, i)
    if t.dtype not in INDEX:
        op.fail(types, rule, f"indices dtype {t.dtype.value} must be int32 or int64",
                GraphTypeError)
    return t


def _static_range(op: OpDef, types: Sequence[ValueType], rule: str, n_vectors: int,
                  dims: Sequence[int]) -> None:
    """Indices into an empty axis are all out of range: an error when there are any."""
    if n_vectors and 0 in dims:
        op.fail(types, rule, f"indices has {n_vectors} index vector(s) into axes of sizes "
                f"{list(dims)}: an empty axis has no valid index", GraphIndexError)


def _scatter_operands(op: OpDef, types: Sequence[ValueType]
                      ) -> tuple[TensorType, TensorType, TensorType]:
    x, upd = op.check_tensor(types, 0), op.check_tensor(types, 1)
    if upd.dtype != x.dtype:
        op.fail(types, f"{op.name}.C1", "updates must have the dtype of x; cast first",
                GraphTypeError)
    idx = _index_operand(op, types, 2, f"{op.name}.C2")
    _same_device(op, types)
    return x, upd, idx


def _scatter_axis_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                        ) -> tuple[ValueType, ...]:
    x, upd, idx = _scatter_operands(op, types)
    axis = op.check_axis(types, attrs.get("axis"), x.rank)
    if idx.shape != upd.shape:
        op.fail(types, f"{op.name}.C3", "indices and updates must have the same shape")
    if idx.rank != x.rank or any(a != b for k, (a, b) in enumerate(
            zip(idx.shape, x.shape, strict=True)) if k != axis):
        op.fail(types, f"{op.name}.C3", f"indices must have rank {x.rank} and the dims of x "
                f"except on axis {axis}")
    _static_range(op, types, f"{op.name}.C4", idx.num_elements, (x.shape[axis],))
    return (x,)


def _scatter_nd_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                      ) -> tuple[ValueType, ...]:
    x, upd, idx = _scatter_operands(op, types)
    if idx.rank < 1 or idx.shape[-1] > x.rank:
        op.fail(types, f"{op.name}.C3", f"indices must have rank >= 1 and a last dimension "
                f"k <= {x.rank} (the rank of x)")
    k = idx.shape[-1]
    want = idx.shape[:-1] + x.shape[k:]
    if upd.shape != want:
        op.fail(types, f"{op.name}.C3", f"updates must have shape indices.shape[:-1] + "
                f"x.shape[{k}:] = {list(want)}")
    _static_range(op, types, f"{op.name}.C4", math.prod(idx.shape[:-1]), x.shape[:k])
    return (x,)


# -- shared samplers -----------------------------------------------------------------------------
def _indices(src: ArgSource, dtype: DType, shape: tuple[int, ...], n: int) -> np.ndarray:
    """Indices into an axis of ``n``: in ``[-m, m)`` with ``m`` one of 1, 2, ``n``, so most
    draws repeat targets and hit both ends of the axis (negative ones from the end)."""
    m = src.choice(sorted({min(n, 1), min(n, 2), n}))
    return src.values(dtype, shape, f"index:{max(m, 1)}")


def _index_vectors(src: ArgSource, dtype: DType, lead: tuple[int, ...],
                   dims: Sequence[int]) -> np.ndarray:
    """Index vectors of shape ``lead + (len(dims),)``, component j into an axis of dims[j]."""
    cols = [_indices(src, dtype, lead, d) for d in dims]
    return np.stack(cols, axis=-1) if cols else np.zeros((*lead, 0), dtype.to_numpy())


def scatter_axis_sample(dtypes: frozenset[DType], kind: str) -> Callable[[ArgSource], OpCall]:
    """Samples of an axis-form scatter (``scatter`` and the reductions): indices with
    duplicates, both ends of the axis and negatives (``_indices``), empty index sets."""

    def sample(src: ArgSource) -> OpCall:
        dtype, shape = src.dtype(dtypes, data=True), src.shape(min_rank=1, max_rank=3)
        axis = src.integer(-len(shape), len(shape) - 1)
        n = shape[axis]
        ishape = list(shape)
        ishape[axis] = src.axis_size(0, 4, rest=math.prod(shape) // n) if n else 0
        idtype = src.dtype(INDEX)
        return OpCall([src.values(dtype, shape, kind), src.values(dtype, tuple(ishape), kind),
                       _indices(src, idtype, tuple(ishape), n)], {"axis": axis})

    return sample


def _scatter_nd_sample(dtypes: frozenset[DType], kind: str) -> Callable[[ArgSource], OpCall]:
    def sample(src: ArgSource) -> OpCall:
        dtype, shape = src.dtype(dtypes, data=True), src.shape(max_rank=3)
        k = src.integer(0, len(shape))
        inner = math.prod(shape[k:])
        lead = src.shape(max_rank=2, max_side=4, rest=max(inner, 1))
        if 0 in shape[:k]:  # only an empty index set is valid (C4)
            lead = (0,)
        idtype = src.dtype(INDEX)
        return OpCall([src.values(dtype, shape, kind),
                       src.values(dtype, lead + shape[k:], kind),
                       _index_vectors(src, idtype, lead, shape[:k])])

    return sample


# -- unspecified masks of the scatters (host, numpy) -------------------------------------------
def _out_of_range(x: np.ndarray, indices: np.ndarray, attrs: Attrs) -> np.ndarray:
    """Axis form: a line along ``axis`` that receives an out-of-range index (C7); nd form:
    the whole result once any index vector is out of range (it could land anywhere)."""
    if "axis" in attrs:
        axis = attrs["axis"] % x.ndim
        _, valid = index_columns(indices[..., None], (x.shape[axis],))
        return np.broadcast_to(np.any(~valid, axis=axis, keepdims=True), x.shape)
    _, valid = index_columns(indices, x.shape[:indices.shape[-1]])
    return np.full(x.shape, not bool(np.all(valid)))


def _hits(x: np.ndarray, targets: np.ndarray) -> np.ndarray:
    return np.bincount(targets, minlength=x.size)[: x.size].reshape(x.shape)


def _order_open(kind: str, x: np.ndarray, targets: np.ndarray, upd: np.ndarray
                ) -> np.ndarray:
    """Float elements whose value depends on the order the duplicates combine in: a sum
    whose |terms| pass the dtype's max, a product whose factors may leave the normal range
    on the way (REDUCE-5), an extreme zero met with both signs (REDUCE-4)."""
    none = np.zeros(x.shape, bool)
    if np.dtype(x.dtype).kind in "biu" or not targets.size:
        return none
    hit = _hits(x, targets) > 0
    a, u = finite_abs(x).reshape(-1), finite_abs(upd)
    info = float_info(x.dtype)
    with np.errstate(all="ignore"):
        if kind == "sum":
            total = a.copy()
            np.add.at(total, targets, u)
            return hit & (total.reshape(x.shape) > max_of(x.dtype))
        if kind == "prod":
            big, small = np.where(a > 1, a, 1.0), np.where((a < 1) & (a > 0), a, 1.0)
            np.multiply.at(big, targets, np.where(u > 1, u, 1.0))
            np.multiply.at(small, targets, np.where((u < 1) & (u > 0), u, 1.0))
            return hit & ((big > max_of(x.dtype)) | (small < float(info.smallest_normal))
                          ).reshape(x.shape)
        v, w = np.asarray(x, np.float64).reshape(-1), np.asarray(upd, np.float64)
        pick = np.maximum if kind == "maximum" else np.minimum
        best, neg, pos = v.copy(), (v == 0) & np.signbit(v), (v == 0) & ~np.signbit(v)
        pick.at(best, targets, w)
        np.logical_or.at(neg, targets, (w == 0) & np.signbit(w))
        np.logical_or.at(pos, targets, (w == 0) & ~np.signbit(w))
        return hit & ((best == 0) & neg & pos).reshape(x.shape)


def _scatter_unspecified(kind: str) -> Callable[..., np.ndarray]:
    def unspecified(x: np.ndarray, updates: np.ndarray, indices: np.ndarray,
                    **attrs: Any) -> np.ndarray:
        targets, upd = host_targets([x, updates, indices], attrs)
        if kind == "overwrite":  # duplicate writes of different bits (scatter_nd.C6)
            if not targets.size:
                return _out_of_range(x, indices, attrs)
            bits = upd.view(f"u{upd.dtype.itemsize}").astype(np.uint64)
            pairs = np.unique(np.stack([targets.astype(np.uint64), bits]), axis=1)
            dup = np.bincount(pairs[0].astype(np.int64), minlength=x.size)[: x.size] > 1
            return _out_of_range(x, indices, attrs) | dup.reshape(x.shape)
        return _out_of_range(x, indices, attrs) | _order_open(kind, x, targets, upd)

    return unspecified


# -- REDUCE-6 pieces of scatter_add and scatter_mul (docstrings: the spec's formulas) ---------
def _hit_count(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """number of updates combined into the element"""
    targets, _ = host_targets(ops, attrs)
    return _hits(np.asarray(ops[0]), targets)


def _abs_total(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """|x| + sum of the |updates| combined into the element"""
    targets, upd = host_targets(ops, attrs)
    x = np.asarray(ops[0])
    total = finite_abs(x).reshape(-1)
    np.add.at(total, targets, finite_abs(upd))
    return total.reshape(x.shape)


def _abs_product(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """|x| * product of the |updates| combined into the element"""
    targets, upd = host_targets(ops, attrs)
    x = np.asarray(ops[0])
    total = finite_abs(x).reshape(-1)
    with np.errstate(all="ignore"):
        np.multiply.at(total, targets, finite_abs(upd))
    return total.reshape(x.shape)


_SCATTER_TOLERANCE = {"sum": Tolerance("reduction", 2, _hit_count, _abs_total),
                      "prod": Tolerance("reduction", 2, _hit_count, _abs_product)}


# -- gather_nd -----------------------------------------------------------------------------------
def _gather_nd_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                     ) -> tuple[ValueType, ...]:
    x = op.check_tensor(types, 0)
    idx = _index_operand(op, types, 1, "gather_nd.C1")
    raw = attrs.get("batch_dims")
    b = raw if isinstance(raw, int) and is_int(raw) else -1
    if idx.rank < 1 or not 0 <= b <= idx.rank - 1 or b + idx.shape[-1] > x.rank:
        op.fail(types, "gather_nd.C2", f"batch_dims={raw!r} must be an int in [0, rank(indices) "
                f"- 1] with batch_dims + indices.shape[-1] <= rank(x) = {x.rank}")
    if x.shape[:b] != idx.shape[:b]:
        op.fail(types, "gather_nd.C3", f"the first {b} (batch) dims of x and indices must "
                "be equal")
    k = idx.shape[-1]
    _static_range(op, types, "gather_nd.C4", math.prod(idx.shape[:-1]), x.shape[b:b + k])
    _same_device(op, types)
    return (x.with_(shape=x.shape[:b] + idx.shape[b:-1] + x.shape[b + k:]),)


def _gather_nd(x: Array, indices: Array, *, batch_dims: int) -> Array:
    """``result[B, Q, F] = x[B, indices[B, Q, :], F]`` for the batch dims ``B``, the index
    dims ``Q`` and the trailing (sliced) dims ``F``; out-of-range components are clipped
    (the result there is unspecified, C5)."""
    xp, b, k = arrays.namespace(x), batch_dims, indices.shape[-1]
    batch, lead = math.prod(x.shape[:b]), math.prod(indices.shape[b:-1])
    dims = x.shape[b:b + k]
    cols, _ = index_columns(indices.reshape(batch, lead, k), dims)
    rows = xp.broadcast_to(xp.arange(batch)[:, None], (batch, lead))
    picked = x.reshape((batch, *x.shape[b:]))[(rows, *in_range(cols, dims))]
    return picked.reshape(x.shape[:b] + indices.shape[b:-1] + x.shape[b + k:])


def _gather_nd_unspecified(x: np.ndarray, indices: np.ndarray, *, batch_dims: int
                           ) -> np.ndarray:
    """Result elements read through an index vector with an out-of-range component (C5)."""
    b, k = batch_dims, indices.shape[-1]
    _, valid = index_columns(indices, x.shape[b:b + k])
    trail = x.shape[b + k:]
    shape = indices.shape[:-1] + trail
    return np.broadcast_to((~valid).reshape(indices.shape[:-1] + (1,) * len(trail)), shape)


def _gather_nd_sample(src: ArgSource) -> OpCall:
    dtype, shape = src.dtype(ALL, data=True), src.shape(min_rank=1, max_rank=4)
    b = src.integer(0, min(len(shape) - 1, 2))
    k = src.integer(0, len(shape) - b)
    lead = src.shape(max_rank=2, max_side=4, rest=max(math.prod(shape[b + k:]), 1))
    if 0 in shape[b:b + k]:
        lead = (0,)
    idx = _index_vectors(src, src.dtype(INDEX), shape[:b] + lead, shape[b:b + k])
    return OpCall([src.values(dtype, shape), idx], {"batch_dims": b})


register(OpDef("gather_nd",
               summary="Pick slices of x by index vectors along its leading dims, after "
                       "batch_dims shared batch dims.",
               category="indexing", operands=("x", "indices"), attrs=("batch_dims",),
               infer=_gather_nd_infer, kernel=_gather_nd, dtypes=ALL, tolerance=EXACT,
               operand_dtypes=(ALL, INDEX), unspecified=_gather_nd_unspecified,
               sample=_gather_nd_sample, traits=frozenset({"byte-copy"})))


# -- gather_sum ----------------------------------------------------------------------------------
def _gather_sum_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                      ) -> tuple[ValueType, ...]:
    x = op.check_tensor(types, 0)
    idx = _index_operand(op, types, 1, "gather_sum.C2")
    if x.rank != 2 or idx.rank != 2:
        op.fail(types, "gather_sum.C1", "x and indices must both have rank 2")
    _static_range(op, types, "gather_sum.C3", idx.num_elements, x.shape[:1])
    _same_device(op, types)
    return (x.with_(shape=(idx.shape[0], 1, x.shape[1])),)


def _gather_rows(x: Array, indices: Array) -> Array:
    """``x[indices[i, j], :]`` as an array of shape (B, J, D), indices clipped into range."""
    xp = arrays.namespace(x)
    (col,), _ = index_columns(indices[..., None], x.shape[:1])
    return xp.take(x, in_range([col], x.shape[:1])[0], axis=0)


def _gather_sum(x: Array, indices: Array) -> Array:
    """``result[i, 0, :] = sum_j x[indices[i, j], :]`` (MAX's mo.gather_sum); integers
    wrap, 16-bit floats are summed in float32 and rounded once (REDUCE-2)."""
    xp, rows = arrays.namespace(x), _gather_rows(widen(x), indices)
    if np.dtype(rows.dtype).kind in "biu":
        return xp.sum(rows, axis=1, keepdims=True, dtype=x.dtype)
    return xp.sum(rows, axis=1, keepdims=True).astype(x.dtype)


def _gather_sum_unspecified(x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Rows read through an out-of-range index (C4); sums whose |terms| pass the dtype's
    max (REDUCE-5)."""
    _, valid = index_columns(indices[..., None], x.shape[:1])
    bad = np.broadcast_to(np.any(~valid, axis=1)[:, None, None], (indices.shape[0], 1,
                                                                 x.shape[1]))
    if np.dtype(x.dtype).kind in "biu":
        return bad
    return bad | (_gather_abs_sum([x, indices], {}, x) > max_of(x.dtype))


def _gather_count(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """indices.shape[1] - 1 (the additions; 0 for at most one row)"""
    return max(ops[1].shape[1] - 1, 0)


def _gather_abs_sum(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """sum of the |gathered terms|"""
    return np.sum(_gather_rows(finite_abs(ops[0]), np.asarray(ops[1])), axis=1,
                  keepdims=True)


def _gather_sum_sample(src: ArgSource) -> OpCall:
    dtype, shape = src.dtype(NUMERIC, data=True), src.shape(min_rank=2, max_rank=2)
    ishape = src.shape(min_rank=2, max_rank=2, rest=max(shape[1], 1))
    if shape[0] == 0:
        ishape = (ishape[0], 0)
    return OpCall([src.values(dtype, shape), _indices(src, src.dtype(INDEX), ishape,
                                                      shape[0])])


register(OpDef("gather_sum",
               summary="Sum of the rows of a matrix picked by each row of indices "
                       "(multi-hot embedding bags); the summed axis kept with size 1.",
               category="indexing", operands=("x", "indices"), attrs=(),
               infer=_gather_sum_infer, kernel=_gather_sum, dtypes=NUMERIC,
               tolerance=Tolerance("reduction", 2, _gather_count, _gather_abs_sum),
               operand_dtypes=(NUMERIC, INDEX), unspecified=_gather_sum_unspecified,
               sample=_gather_sum_sample, variants={"int-saturation": saturating(_gather_sum)}))


# -- scatter_nd ----------------------------------------------------------------------------------
def _scatter_nd(x: Array, updates: Array, indices: Array) -> Array:
    """Copy of ``x`` with each index vector's slice overwritten by its updates; where two
    vectors write one element with different bits the result is unspecified (C6): the
    reference keeps the last in row-major order. Out-of-range vectors are dropped."""
    xp, out = arrays.namespace(x), x.copy()
    targets, values = nd_targets(x.shape, updates, indices)
    if targets.size:
        _, first_in_reversed = xp.unique(targets[::-1], return_index=True)
        last = targets.size - 1 - first_in_reversed
        out.reshape(-1)[targets[last]] = values[last]
    return out


register(OpDef("scatter_nd",
               summary="Copy of x with slices overwritten at index vectors (duplicates "
                       "writing different values: unspecified).",
               category="indexing", operands=("x", "updates", "indices"), attrs=(),
               infer=_scatter_nd_infer, kernel=_scatter_nd, dtypes=ALL, tolerance=EXACT,
               operand_dtypes=(ALL, ALL, INDEX), unspecified=_scatter_unspecified("overwrite"),
               sample=_scatter_nd_sample(ALL, "any"), traits=frozenset({"byte-copy"})))


# -- scatter reductions: add, max, min, mul; axis and nd forms -------------------------------------
def _axis_kernel(kind: str) -> Callable[..., Array]:
    def kernel(x: Array, updates: Array, indices: Array, *, axis: int) -> Array:
        targets, values = axis_targets(x.shape, updates, indices, axis)
        return combine_at(x, targets, values, COMBINE[kind])

    kernel.__doc__ = f"x with every update combined into its target by {kind} (axis form)."
    return kernel


def _nd_kernel(kind: str) -> Callable[..., Array]:
    def kernel(x: Array, updates: Array, indices: Array) -> Array:
        targets, values = nd_targets(x.shape, updates, indices)
        return combine_at(x, targets, values, COMBINE[kind])

    kernel.__doc__ = f"x with every update combined into its target by {kind} (nd form)."
    return kernel


def _nan_dropped(kind: str) -> Callable[..., Array]:
    """The ``nan-dropped`` variant of the max/min scatters, axis and nd forms (NUM-8): a
    target's value and its updates combined with every NaN losing to a number (NaN only
    where all of them are NaN); where none is NaN, as the kernel's ``kind`` combines."""
    pick = COMBINE[kind]

    def combine(xp: Any, a: Array, b: Array) -> Array:
        return xp.where(xp.isnan(a), b, xp.where(xp.isnan(b), a, pick(xp, a, b)))

    def variant(x: Array, updates: Array, indices: Array, **attrs: Any) -> Array:
        targets, values = host_targets([x, updates, indices], attrs)
        return combine_at(np.asarray(x), targets, values, combine)

    return variant


for _axis_name, _nd_name, _kind, _how, _values in (
        ("scatter_add", "scatter_nd_add", "sum", "added", "any"),
        ("scatter_mul", "scatter_nd_mul", "prod", "multiplied", "small"),
        ("scatter_max", "scatter_nd_max", "maximum", "the largest kept (NaN propagates)", "any"),
        ("scatter_min", "scatter_nd_min", "minimum", "the smallest kept (NaN propagates)", "any")):
    _tolerance = _SCATTER_TOLERANCE.get(_kind, EXACT)
    _variants = {"nan-dropped": _nan_dropped(_kind)} if _kind in ("maximum", "minimum") else {}
    register(OpDef(_axis_name,
                   summary=f"Copy of x with updates at indices along an axis {_how}; "
                           "duplicates combine.",
                   category="indexing", operands=("x", "updates", "indices"), attrs=("axis",),
                   infer=_scatter_axis_infer, kernel=_axis_kernel(_kind), dtypes=NUMERIC,
                   tolerance=_tolerance, operand_dtypes=(NUMERIC, NUMERIC, INDEX),
                   unspecified=_scatter_unspecified(_kind),
                   sample=scatter_axis_sample(NUMERIC, _values), variants=_variants))
    register(OpDef(_nd_name,
                   summary=f"Copy of x with slices at index vectors {_how}; duplicates "
                           "combine.",
                   category="indexing", operands=("x", "updates", "indices"), attrs=(),
                   infer=_scatter_nd_infer, kernel=_nd_kernel(_kind), dtypes=NUMERIC,
                   tolerance=_tolerance, operand_dtypes=(NUMERIC, NUMERIC, INDEX),
                   unspecified=_scatter_unspecified(_kind),
                   sample=_scatter_nd_sample(NUMERIC, _values), variants=_variants))


# -- argsort -------------------------------------------------------------------------------------
def _argsort_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                   ) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    if t.rank != 1:
        op.fail(types, "argsort.C1", f"x must have rank 1, got rank {t.rank}")
    if not isinstance(attrs.get("ascending"), bool):
        op.fail(types, "argsort.C2", f"attribute ascending={attrs.get('ascending')!r} must "
                "be a bool")
    return (t.with_(dtype=DType.int64),)


def _argsort(x: Array, *, ascending: bool) -> Array:
    """Stable sort, NaN the largest (numpy's order, C3); descending is the stable ascending
    sort of the reversed vector, reversed back, so equal values keep index order too."""
    xp, n = arrays.namespace(x), x.shape[0]
    if ascending:
        return xp.argsort(widen(x), kind="stable").astype(np.int64)
    order = xp.argsort(xp.flip(widen(x), 0), kind="stable")
    return xp.flip(n - 1 - order, 0).astype(np.int64)


def _argsort_sample(src: ArgSource) -> OpCall:
    dtype = src.dtype(NUMERIC, data=True)
    n = math.prod(src.shape(min_rank=1, max_rank=2))  # longer vectors; the sweep's 56 x 4
    x = src.values(dtype, (n,))
    if n and not src.boolean():  # ties: a few of the elements, repeated (C3)
        x = x[src.values(DType.int64, (n,), f"uindex:{src.integer(1, n)}")]
    return OpCall([x], {"ascending": src.boolean()})


register(OpDef("argsort",
               summary="int64 indices that sort a vector (stable: ties in index order; NaN "
                       "largest), ascending or descending.",
               category="indexing", operands=("x",), attrs=("ascending",),
               infer=_argsort_infer, kernel=_argsort, dtypes=NUMERIC, tolerance=EXACT,
               result_dtypes=_INT64, sample=_argsort_sample, traits=_SORT))

__all__ = ["scatter_axis_sample"]
