"""Reductions along one axis, scans, softmax and top_k (spec/reductions.md, spec/ops/).

Every reduction keeps the reduced axis with size 1 (REDUCE-1). 16-bit floats are computed in
float32 and rounded once to the input dtype (REDUCE-2); integers keep their dtype and wrap.
Kernels compute in the namespace of their operand (``xp``: numpy, or CuPy on a GPU,
``interpreter/arrays.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from .. import arrays
from ..dtype import DType
from ..types import TensorType, ValueType
from .core import EXACT, ArgSource, Attrs, OpCall, OpDef, Tolerance, register
from .dtypesets import BOOL, FLOATS, NUMERIC

Array = Any
Operands = Sequence[np.ndarray]


# -- helpers ------------------------------------------------------------------------------
def is_low_float(dtype: np.dtype[Any]) -> bool:
    """float16 and the ml_dtypes floats (bfloat16): computed in float32 (REDUCE-2)."""
    return (dtype.kind == "f" and dtype.itemsize < 4) or dtype.kind == "V"


def widen(x: Array) -> Array:
    """``x`` as float32 if it is a 16-bit float (exact), else unchanged."""
    return x.astype(np.float32) if is_low_float(np.dtype(x.dtype)) else x


def float_info(dtype: np.dtype[Any]) -> Any:
    return ml_dtypes.finfo(dtype)


def _kept(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return (*shape[:axis], 1, *shape[axis + 1:])


def _axis_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[TensorType, int]:
    t = op.check_tensor(types, 0)
    return t, op.check_axis(types, attrs.get("axis"), t.rank)


def _reduce_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                  ) -> tuple[ValueType, ...]:
    """Same dtype, reduced axis kept with size 1 (REDUCE-1)."""
    t, axis = _axis_infer(op, types, attrs)
    return (t.with_(shape=_kept(t.shape, axis)),)


def _nonempty_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                    ) -> tuple[ValueType, ...]:
    """As ``_reduce_infer``, but an empty reduced axis is an error (REDUCE-3)."""
    t, axis = _axis_infer(op, types, attrs)
    if t.shape[axis] == 0:
        op.fail(types, "REDUCE-3", f"axis {attrs.get('axis')} has size 0; {op.name} of an "
                "empty axis is undefined")
    return (t.with_(shape=_kept(t.shape, axis)),)


def _arg_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    (t,) = _nonempty_infer(op, types, attrs)
    return (t.with_(dtype=DType.int64),)  # type: ignore[union-attr]


def _same_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    t, _ = _axis_infer(op, types, attrs)
    return (t,)


def _no_mask(x: Array, **attrs: Any) -> np.ndarray:
    return np.zeros(np.shape(x), bool)


def _finite_abs(x: Array) -> np.ndarray:
    """|x| in float64 with the non-finite elements (which propagate deterministically) as 0."""
    a = np.asarray(x, dtype=np.float64)
    return np.where(np.isfinite(a), np.abs(a), 0.0)


# -- samplers -----------------------------------------------------------------------------
def _axis_sampler(dtypes: frozenset[DType], kind: str = "any", nonempty: bool = False
                  ) -> Callable[[ArgSource], OpCall]:
    def sample(src: ArgSource) -> OpCall:
        dtype = src.dtype(dtypes, data=True)
        shape = list(src.shape(min_rank=1))
        axis = src.integer(-len(shape), len(shape) - 1)
        if nonempty and shape[axis] == 0:
            shape[axis] = src.integer(1, 5)
        return OpCall([src.values(dtype, tuple(shape), kind)], {"axis": axis})

    return sample


# -- sum, prod, mean ----------------------------------------------------------------------
def _sum(x: Array, *, axis: int) -> Array:
    xp = arrays.namespace(x)
    if is_low_float(np.dtype(x.dtype)):
        return xp.sum(widen(x), axis=axis, keepdims=True).astype(x.dtype)
    return xp.sum(x, axis=axis, keepdims=True, dtype=x.dtype)


def _prod(x: Array, *, axis: int) -> Array:
    xp = arrays.namespace(x)
    if is_low_float(np.dtype(x.dtype)):
        return xp.prod(widen(x), axis=axis, keepdims=True).astype(x.dtype)
    return xp.prod(x, axis=axis, keepdims=True, dtype=x.dtype)


def _mean(x: Array, *, axis: int) -> Array:
    xp, w = arrays.namespace(x), widen(x)
    with arrays.errstate(xp, invalid="ignore"):  # an empty axis: 0/0 = NaN (REDUCE-3)
        return (xp.sum(w, axis=axis, keepdims=True) / x.shape[axis]).astype(x.dtype)


def _sum_overflow(x: Array, *, axis: int) -> np.ndarray:
    """Sums whose finite |terms| add up past the dtype's max: the result depends on the order
    of accumulation (inf or finite), so it is unspecified (REDUCE-5)."""
    if np.dtype(x.dtype).kind in "biu":
        return _no_mask(np.sum(x, axis=axis, keepdims=True))
    total = np.sum(_finite_abs(x), axis=axis, keepdims=True)
    return np.asarray(total > float(float_info(x.dtype).max))


def _prod_out_of_range(x: Array, *, axis: int) -> np.ndarray:
    """Products where some partial product may overflow or leave the normal range (REDUCE-5)."""
    if np.dtype(x.dtype).kind in "biu" or x.shape[axis] < 2:
        return _no_mask(np.sum(x, axis=axis, keepdims=True))
    a = _finite_abs(x)
    info = float_info(x.dtype)
    with np.errstate(all="ignore"):
        big = np.prod(np.where(a > 1, a, 1.0), axis=axis, keepdims=True)
        small = np.prod(np.where((a < 1) & (a > 0), a, 1.0), axis=axis, keepdims=True)
    return np.asarray((big > float(info.max)) | (small < float(info.smallest_normal)))


# -- REDUCE-6: n and M per op (docstrings are the formulas of the spec table) --------------
def _axis_size(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """axis size"""
    return ops[0].shape[attrs["axis"]]


def _axis_size_plus_1(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """axis size + 1"""
    return ops[0].shape[attrs["axis"]] + 1


def _sum_abs(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """sum of |terms|"""
    return np.sum(_finite_abs(ops[0]), axis=attrs["axis"], keepdims=True)


def _mean_abs(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """(sum of |terms|) / axis size"""
    return _sum_abs(ops, attrs, expected) / max(1, ops[0].shape[attrs["axis"]])


def _abs_prod(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """|exact product|"""
    return np.prod(_finite_abs(ops[0]), axis=attrs["axis"], keepdims=True)


def _prefix_size(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """number of terms in that prefix"""
    return _cumsum(np.ones(ops[0].shape), **attrs)


def _prefix_abs(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """sum of their |terms|"""
    return _cumsum(_finite_abs(ops[0]), **attrs)


def _one(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """1"""
    return 1.0


def _one_plus_result(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """1 + |result|"""
    return 1.0 + np.abs(np.asarray(expected, np.float64))


def _nan_ignoring(reduce: Callable[..., Array]) -> Callable[..., Array]:
    """The reduction with NaN elements left out (``np.nanmax``...: the ``nan-dropped``
    variant, NUM-8, REDUCE-4), computed in float64 and rounded to the dtype."""

    def kernel(x: Array, *, axis: int) -> Array:
        x = np.asarray(x)
        return np.asarray(reduce(x.astype(np.float64), axis=axis, keepdims=True)
                          ).astype(x.dtype)

    return kernel


def saturating(kernel: Callable[..., Array]) -> Callable[..., Array]:
    """An integer reduction's ``int-saturation`` variant (NUM-2): ``kernel`` on its data
    operand ``x`` as exact Python ints, each result clamped to the dtype's range instead of
    wrapped around (a backend accumulating wide and saturating the result)."""

    def variant(x: Array, *rest: Array, **attrs: Any) -> Array:
        x = np.asarray(x)
        if x.dtype.kind not in "iu":
            return kernel(x, *rest, **attrs)
        info = np.iinfo(x.dtype)
        exact = kernel(x.astype(object), *rest, **attrs)
        return np.clip(exact, int(info.min), int(info.max)).astype(x.dtype)

    return variant


SUM_TOLERANCE = Tolerance("reduction", 2, _axis_size, _sum_abs)
PROD_TOLERANCE = Tolerance("reduction", 2, _axis_size, _abs_prod)
MEAN_TOLERANCE = Tolerance("reduction", 2, _axis_size_plus_1, _mean_abs)
#: softmax/logsoftmax: exp (<= 2 ulp), a sum, a division or log and a subtraction (REDUCE-6)
SOFTMAX_TOLERANCE = Tolerance("reduction", 4, _axis_size, _one)
LOGSOFTMAX_TOLERANCE = Tolerance("reduction", 4, _axis_size, _one_plus_result)


register(OpDef("reduce_sum", summary="Sum along one axis, kept with size 1; integers wrap.",
               category="reduction", operands=("x",), attrs=("axis",), infer=_reduce_infer,
               kernel=_sum, dtypes=NUMERIC, tolerance=SUM_TOLERANCE, unspecified=_sum_overflow,
               sample=_axis_sampler(NUMERIC),
               variants={"nan-dropped": _nan_ignoring(np.nansum),
                         "int-saturation": saturating(_sum)}))
register(OpDef("reduce_prod", summary="Product along one axis, kept with size 1; integers wrap.",
               category="reduction", operands=("x",), attrs=("axis",), infer=_reduce_infer,
               kernel=_prod, dtypes=NUMERIC, tolerance=PROD_TOLERANCE,
               unspecified=_prod_out_of_range, sample=_axis_sampler(NUMERIC, "small"),
               variants={"nan-dropped": _nan_ignoring(np.nanprod),
                         "int-saturation": saturating(_prod)}))
register(OpDef("reduce_mean", summary="Arithmetic mean along one axis, kept with size 1 (floats).",
               category="reduction", operands=("x",), attrs=("axis",), infer=_reduce_infer,
               kernel=_mean, dtypes=FLOATS, tolerance=MEAN_TOLERANCE, unspecified=_sum_overflow,
               sample=_axis_sampler(FLOATS), variants={"nan-dropped": _nan_ignoring(np.nanmean)}))


# -- max, min -----------------------------------------------------------------------------
def _max(x: Array, *, axis: int) -> Array:
    xp = arrays.namespace(x)
    return xp.max(widen(x), axis=axis, keepdims=True).astype(x.dtype)


def _min(x: Array, *, axis: int) -> Array:
    xp = arrays.namespace(x)
    return xp.min(widen(x), axis=axis, keepdims=True).astype(x.dtype)


def _mixed_zeros(pick: Callable[..., Array]) -> Callable[..., np.ndarray]:
    """Where the extreme is a zero and the slice holds both -0.0 and +0.0, the sign of the
    result is unspecified (REDUCE-4)."""

    def mask(x: Array, *, axis: int) -> np.ndarray:
        if np.dtype(x.dtype).kind in "biu":
            return _no_mask(np.sum(x, axis=axis, keepdims=True))
        a = np.asarray(x, dtype=np.float64)
        zero = a == 0
        neg = np.any(zero & np.signbit(a), axis=axis, keepdims=True)
        pos = np.any(zero & ~np.signbit(a), axis=axis, keepdims=True)
        return np.asarray((pick(a, axis=axis, keepdims=True) == 0) & neg & pos)

    return mask


def _nan_dropped(kernel: Callable[..., Array], fill: float) -> Callable[..., Array]:
    """``kernel`` with NaN elements left out (the ``nan-dropped`` variant, NUM-8,
    REDUCE-4): a slice holding a number gets the kernel of its NaNs replaced by ``fill``
    (-inf for max, +inf for min: no number loses to it); a slice without NaN, or of NaNs
    only (NaN, as ``np.nanmax``), gets the kernel's own result."""

    def variant(x: Array, *, axis: int) -> Array:
        x = np.asarray(x)
        if x.dtype.kind not in "fV":
            return kernel(x, axis=axis)
        nan = np.isnan(x)
        dropped = kernel(np.where(nan, fill, x).astype(x.dtype), axis=axis)
        return np.where(np.any(~nan, axis=axis, keepdims=True), dropped, kernel(x, axis=axis))

    return variant


_ORDERED = NUMERIC | BOOL
_INDICES = frozenset({DType.int64})
register(OpDef("reduce_max",
               summary="Largest element along one axis, kept with size 1; NaN "
                       "propagates.",
               category="reduction", operands=("x",), attrs=("axis",), infer=_nonempty_infer,
               kernel=_max, dtypes=_ORDERED, tolerance=EXACT, unspecified=_mixed_zeros(np.max),
               sample=_axis_sampler(_ORDERED, nonempty=True),
               variants={"nan-dropped": _nan_dropped(_max, -np.inf)}))
register(OpDef("reduce_min",
               summary="Smallest element along one axis, kept with size 1; NaN "
                       "propagates.",
               category="reduction", operands=("x",), attrs=("axis",), infer=_nonempty_infer,
               kernel=_min, dtypes=_ORDERED, tolerance=EXACT, unspecified=_mixed_zeros(np.min),
               sample=_axis_sampler(_ORDERED, nonempty=True),
               variants={"nan-dropped": _nan_dropped(_min, np.inf)}))


# -- argmax, argmin -----------------------------------------------------------------------
def _argmax(x: Array, *, axis: int) -> Array:
    xp = arrays.namespace(x)
    return xp.argmax(widen(x), axis=axis, keepdims=True).astype(np.int64)


def _argmin(x: Array, *, axis: int) -> Array:
    xp = arrays.namespace(x)
    return xp.argmin(widen(x), axis=axis, keepdims=True).astype(np.int64)


def _arg_nan_dropped(kernel: Callable[..., Array], pick: np.ufunc) -> Callable[..., Array]:
    """The ``nan-dropped`` variant of argmax/argmin (NUM-8): the first index of the slice's
    extreme number, ``pick`` (``np.fmax``/``np.fmin``) letting every NaN lose. A slice of
    NaNs only gives 0, the index of its first NaN, as the kernel (REDUCE-4; ``np.nanargmax``
    raises there); a slice without NaN, the kernel's index."""

    def variant(x: Array, *, axis: int) -> Array:
        x = np.asarray(x)
        if x.dtype.kind not in "fV":
            return kernel(x, axis=axis)
        w = widen(x)
        best = pick.reduce(w, axis=axis, keepdims=True)
        return np.argmax(w == best, axis=axis, keepdims=True).astype(np.int64)

    return variant


register(OpDef("argmax",
               summary="int64 index of the largest element along one axis (first on ties, "
                       "first NaN wins), kept with size 1.",
               category="reduction", operands=("x",), attrs=("axis",), infer=_arg_infer,
               kernel=_argmax, dtypes=_ORDERED, tolerance=EXACT,
               sample=_axis_sampler(_ORDERED, nonempty=True), result_dtypes=_INDICES,
               variants={"nan-dropped": _arg_nan_dropped(_argmax, np.fmax)}))
register(OpDef("argmin",
               summary="int64 index of the smallest element along one axis (first on ties, "
                       "first NaN wins), kept with size 1.",
               category="reduction", operands=("x",), attrs=("axis",), infer=_arg_infer,
               kernel=_argmin, dtypes=_ORDERED, tolerance=EXACT,
               sample=_axis_sampler(_ORDERED, nonempty=True), result_dtypes=_INDICES,
               variants={"nan-dropped": _arg_nan_dropped(_argmin, np.fmin)}))


# -- cumsum -------------------------------------------------------------------------------
def _cumsum_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                  ) -> tuple[ValueType, ...]:
    for name in ("exclusive", "reverse"):
        if not isinstance(attrs.get(name), bool):
            op.fail(types, "cumsum.C1", f"attribute {name}={attrs.get(name)!r} must be a bool")
    return _same_infer(op, types, attrs)


def _shift(c: Array, axis: int) -> Array:
    """``c`` moved one step along ``axis``; position 0 becomes the identity 0."""
    xp = arrays.namespace(c)
    out = xp.zeros_like(c)
    dst = [slice(None)] * c.ndim
    src = [slice(None)] * c.ndim
    dst[axis], src[axis] = slice(1, None), slice(None, -1)
    out[tuple(dst)] = c[tuple(src)]
    return out


def _cumsum(x: Array, *, axis: int, exclusive: bool, reverse: bool) -> Array:
    xp, a = arrays.namespace(x), widen(x)
    a = xp.flip(a, axis) if reverse else a
    c = xp.cumsum(a, axis=axis, dtype=a.dtype)
    c = _shift(c, axis) if exclusive else c
    c = xp.flip(c, axis) if reverse else c
    return c.astype(x.dtype)


def _cumsum_overflow(x: Array, *, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    """As for sums (REDUCE-5), per prefix."""
    if np.dtype(x.dtype).kind in "biu":
        return _no_mask(x)
    totals = _cumsum(_finite_abs(x), axis=axis, exclusive=exclusive, reverse=reverse)
    return np.asarray(totals > float(float_info(x.dtype).max))


def _sample_cumsum(src: ArgSource) -> OpCall:
    call = _axis_sampler(NUMERIC)(src)
    call.attrs.update(exclusive=src.boolean(), reverse=src.boolean())
    return call


CUMSUM_TOLERANCE = Tolerance("reduction", 2, _prefix_size, _prefix_abs)
register(OpDef("cumsum",
               summary="Running sum along one axis (optionally exclusive and/or from the "
                       "end); integers wrap.",
               category="reduction", operands=("x",), attrs=("axis", "exclusive", "reverse"),
               infer=_cumsum_infer, kernel=_cumsum, dtypes=NUMERIC, tolerance=CUMSUM_TOLERANCE,
               unspecified=_cumsum_overflow, sample=_sample_cumsum,
               variants={"int-saturation": saturating(_cumsum)}))


# -- softmax, logsoftmax ------------------------------------------------------------------
def _softmax(x: Array, *, axis: int) -> Array:
    if x.shape[axis] == 0:
        return x.copy()
    xp, a = arrays.namespace(x), widen(x)
    e = xp.exp(a - xp.max(a, axis=axis, keepdims=True))
    return (e / xp.sum(e, axis=axis, keepdims=True)).astype(x.dtype)


def _logsoftmax(x: Array, *, axis: int) -> Array:
    if x.shape[axis] == 0:
        return x.copy()
    xp, a = arrays.namespace(x), widen(x)
    s = a - xp.max(a, axis=axis, keepdims=True)
    return (s - xp.log(xp.sum(xp.exp(s), axis=axis, keepdims=True))).astype(x.dtype)


register(OpDef("softmax", summary="exp(x - max) / sum(exp(x - max)) along one axis (floats).",
               category="reduction", operands=("x",), attrs=("axis",), infer=_same_infer,
               kernel=_softmax, dtypes=FLOATS, tolerance=SOFTMAX_TOLERANCE,
               sample=_axis_sampler(FLOATS), traits=frozenset({"normalization"})))
register(OpDef("logsoftmax", summary="(x - max) - log(sum(exp(x - max))) along one axis (floats).",
               category="reduction", operands=("x",), attrs=("axis",), infer=_same_infer,
               kernel=_logsoftmax, dtypes=FLOATS, tolerance=LOGSOFTMAX_TOLERANCE,
               sample=_axis_sampler(FLOATS), traits=frozenset({"normalization"})))


# -- top_k --------------------------------------------------------------------------------
def _top_k_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                 ) -> tuple[ValueType, ...]:
    t, axis = _axis_infer(op, types, attrs)
    k = attrs.get("k")
    if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= t.shape[axis]:
        op.fail(types, f"{op.name}.C1", f"k={k!r} must be an int in [0, {t.shape[axis]}] "
                f"(the size of axis {attrs.get('axis')})")
    shape = (*t.shape[:axis], k, *t.shape[axis + 1:])
    return (t.with_(shape=shape), t.with_(shape=shape, dtype=DType.int64))


def _top_k(x: Array, *, k: int, axis: int) -> tuple[Array, Array]:
    """Stable ascending sort of the flipped axis, flipped back: descending, and equal values
    keep their original order; numpy sorts NaN last, i.e. as the largest (top_k.C2)."""
    xp, n = arrays.namespace(x), x.shape[axis]
    order = xp.argsort(xp.flip(widen(x), axis), axis=axis, kind="stable")
    order = xp.flip(n - 1 - order, axis)
    idx = xp.take(order, xp.arange(k), axis=axis).astype(np.int64)
    return xp.take_along_axis(x, idx, axis=axis), idx


def _top_k_nan_dropped(x: Array, *, k: int, axis: int) -> tuple[Array, Array]:
    """The ``nan-dropped`` variant of top_k (NUM-8): a NaN loses to every number, so NaNs
    come after all numbers (in index order); otherwise the kernel's order. A stable
    ascending sort of ``-x``: numpy sorts NaN last."""
    x = np.asarray(x)
    if x.dtype.kind not in "fV":
        return _top_k(x, k=k, axis=axis)
    order = np.argsort(-widen(x), axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis).astype(np.int64)
    return np.take_along_axis(x, idx, axis=axis), idx


def _sample_top_k(src: ArgSource) -> OpCall:
    call = _axis_sampler(NUMERIC)(src)
    x, axis = call.operands[0], call.attrs["axis"]
    call.attrs["k"] = src.integer(0, x.shape[axis])
    return call


def _register_select_k(name: str, summary: str, kernel: Callable[..., Any],
                       sample: Callable[[ArgSource], OpCall],
                       variants: dict[str, Callable[..., Any]] | None = None) -> None:
    """``top_k`` and its mirror ``bottom_k``: values and int64 indices of k elements."""
    register(OpDef(name, summary=summary, category="reduction", operands=("x",),
                   attrs=("k", "axis"), infer=_top_k_infer, kernel=kernel, dtypes=NUMERIC,
                   tolerance=EXACT, sample=sample, result_dtypes=NUMERIC | _INDICES,
                   traits=frozenset({"nan-last-sort"}), variants=variants or {}))


_register_select_k("top_k", "The k largest elements along one axis, descending (ties: lower "
                   "index first; NaN largest), and their int64 indices.", _top_k, _sample_top_k,
                   {"nan-dropped": _top_k_nan_dropped})


# -- bottom_k -----------------------------------------------------------------------------
# No ``nan-dropped`` variant: NaN already loses to every number here (taken last, C2).
def _bottom_k(x: Array, *, k: int, axis: int) -> tuple[Array, Array]:
    """Stable ascending sort: equal values keep their original order; numpy sorts NaN last,
    i.e. as the largest (bottom_k.C2), so NaN is taken only once every number is."""
    xp = arrays.namespace(x)
    order = xp.argsort(widen(x), axis=axis, kind="stable")
    idx = xp.take(order, xp.arange(k), axis=axis).astype(np.int64)
    return xp.take_along_axis(x, idx, axis=axis), idx


def _sample_bottom_k(src: ArgSource) -> OpCall:
    """``top_k``'s sampler; half of the time the slices are a few elements repeated
    (ties, bottom_k.C2)."""
    call = _sample_top_k(src)
    x, axis = call.operands[0], call.attrs["axis"]
    if x.shape[axis] and not src.boolean():
        n = x.shape[axis]
        pick = src.values(DType.int64, (n,), f"uindex:{src.integer(1, n)}")
        call.operands[0] = np.take(x, pick, axis=axis)
    return call


_register_select_k("bottom_k", "The k smallest elements along one axis, ascending (ties: "
                   "lower index first; NaN largest, so last), and their int64 indices.",
                   _bottom_k, _sample_bottom_k)

__all__ = ["LOGSOFTMAX_TOLERANCE", "SOFTMAX_TOLERANCE", "float_info", "is_low_float",
           "saturating", "widen"]
