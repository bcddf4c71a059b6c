"""Pooling: ``max_pool2d`` and ``avg_pool2d`` (spec/ops/max_pool2d.md, spec/ops/avg_pool2d.md).

NHWC input; ``kernel_size``, ``stride``, ``dilation`` one int >= 1 per spatial axis,
``paddings`` one ``(before, after)`` pair per axis. Window ``o`` of an axis covers the input
positions ``o * stride - before + k * dilation``; positions outside the input (padding, and
in ceil mode past it) hold no element: ``max_pool2d`` leaves them out, ``avg_pool2d`` counts
them as zeros. The window helpers are the convolutions' (``registry/convolution.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import arrays
from ..types import ValueType
from .convolution import (
    check_outs,
    finite_abs,
    out_sizes,
    padded,
    sample_spatial,
    sample_window,
    window_problem,
    windows,
)
from .core import ArgSource, Attrs, OpCall, OpDef, SampleFn, Tolerance, register
from .dtypesets import BOOL, FLOATS, NUMERIC
from .reduction import float_info, widen

Array = Any
Pairs = tuple[tuple[int, int], ...]
_SPATIAL = 2


# -- geometry ------------------------------------------------------------------------------
def _outs(x: Array, kernel_size: tuple[int, ...], stride: tuple[int, ...],
          dilation: tuple[int, ...], paddings: Pairs, ceil_mode: bool) -> tuple[int, ...]:
    return out_sizes(x.shape[1:-1], kernel_size, stride, dilation, paddings, ceil_mode)


def _windows(x: Array, fill: bool | int | float, *, kernel_size: tuple[int, ...],
             stride: tuple[int, ...], dilation: tuple[int, ...], paddings: Pairs,
             ceil_mode: bool) -> Array:
    """The windows ``[N, *outs, *kernel_size, C]``; positions without an input element
    hold ``fill``."""
    outs = _outs(x, kernel_size, stride, dilation, paddings, ceil_mode)
    ends = [(o - 1) * s + d * (k - 1) + 1 for o, k, s, d in
            zip(outs, kernel_size, stride, dilation, strict=True)]  # ceil mode: past padding
    return windows(padded(x, paddings, fill, ends), kernel_size, stride, dilation, outs)


def _window_axes(x: Array) -> tuple[int, ...]:
    rank = x.ndim - 2
    return tuple(range(1 + rank, 1 + 2 * rank))


def _input_counts(x: Array, *, kernel_size: tuple[int, ...], stride: tuple[int, ...],
                  dilation: tuple[int, ...], paddings: Pairs, ceil_mode: bool) -> Array:
    """``[1, *outs, 1]``: the number of input elements in each window (in ``x``'s
    namespace), the product over axes of those along each."""
    xp = arrays.namespace(x)
    outs = _outs(x, kernel_size, stride, dilation, paddings, ceil_mode)
    count = xp.full((1,) * (x.ndim - 1), 1, dtype=np.int64)
    for i, (n, k, s, d, (lo, _), o) in enumerate(zip(x.shape[1:-1], kernel_size, stride,
                                                   dilation, paddings, outs, strict=True)):
        at = xp.arange(o)[:, None] * s - lo + xp.arange(k)[None, :] * d  # [o, k]
        along = xp.sum((at >= 0) & (at < n), axis=1)
        shape = [1] * (x.ndim - 1)
        shape[i + 1] = o
        count = count * along.reshape(shape)
    return count.reshape(1, *outs, 1)


# -- type rule -----------------------------------------------------------------------------
def _pool_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    x = op.check_tensor(types, 0)
    if x.rank != _SPATIAL + 2:
        op.fail(types, f"{op.name}.C1", f"input must have rank {_SPATIAL + 2} (NHWC), got "
                f"{x.rank}")
    problem = window_problem(attrs, ("kernel_size", "stride", "dilation"), _SPATIAL)
    for name in ("ceil_mode", "count_boundary"):
        if problem is None and name in op.attrs and not isinstance(attrs.get(name), bool):
            problem = f"attribute {name} must be a bool, got {attrs.get(name)!r}"
    if problem is not None:
        op.fail(types, f"{op.name}.C2", problem)
    op.check_dtype(types, x)
    outs = out_sizes(x.shape[1:-1], attrs["kernel_size"], attrs["stride"], attrs["dilation"],
                     attrs["paddings"], attrs["ceil_mode"])
    check_outs(op, types, f"{op.name}.C3", x.shape[1:-1], outs)
    return (x.with_(shape=(x.shape[0], *outs, x.shape[-1])),)


# -- max_pool2d ----------------------------------------------------------------------------
def _lowest(dtype: Any) -> bool | int | float:
    """The identity of max: -inf, the integer minimum, False."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return False
    return int(np.iinfo(dt).min) if dt.kind in "iu" else -math.inf


def _max_pool(x: Array, **attrs: Any) -> Array:
    """The largest input element of each window (NaN propagates); -inf, the integer
    minimum or False for a window without input elements."""
    xp, a = arrays.namespace(x), widen(x)
    cols = _windows(a, _lowest(a.dtype), **attrs)
    return xp.max(cols, axis=_window_axes(x)).astype(x.dtype)


def _max_pool_nan_dropped(x: Array, **attrs: Any) -> Array:
    """The ``nan-dropped`` variant (NUM-8): a window holding a number gets the kernel with
    the NaNs read as -inf (no number loses to it); a window without NaN, of NaNs only (NaN,
    as ``np.nanmax``; MAX 26.7 gives -inf) or without input elements gets the kernel's."""
    x = np.asarray(x)
    if x.dtype.kind not in "fV":
        return _max_pool(x, **attrs)
    nan = np.isnan(x)
    numbers = _max_pool((~nan).astype(x.dtype), **attrs) == 1
    dropped = _max_pool(np.where(nan, -math.inf, x).astype(x.dtype), **attrs)
    return np.where(numbers, dropped, _max_pool(x, **attrs))


def _max_pool_mixed_zeros(x: Array, **attrs: Any) -> np.ndarray:
    """REDUCE-4: where the maximum is a zero and the window holds zeros of both signs."""
    cols = _windows(np.asarray(x, np.float64), -math.inf, **attrs)
    axes, zero = _window_axes(x), cols == 0
    neg, pos = (np.any(zero & s, axis=axes) for s in (np.signbit(cols), ~np.signbit(cols)))
    return np.asarray((np.max(cols, axis=axes) == 0) & neg & pos)


# -- avg_pool2d ----------------------------------------------------------------------------
def _avg_pool(x: Array, *, count_boundary: bool, **attrs: Any) -> Array:
    """The sum of each window's input elements divided by the window size
    (``count_boundary``) or by the number of its input elements (0 / 0 = NaN)."""
    xp, a = arrays.namespace(x), widen(x)
    count = math.prod(attrs["kernel_size"]) if count_boundary else _input_counts(x, **attrs)
    with arrays.errstate(xp, invalid="ignore", divide="ignore"):  # inf - inf, 0 / 0
        return (xp.sum(_windows(a, 0, **attrs), axis=_window_axes(x)) / count).astype(x.dtype)


def _avg_pool_overflow(x: Array, **attrs: Any) -> np.ndarray:
    """REDUCE-5: where a window's finite |terms| add up past the dtype's max."""
    attrs.pop("count_boundary")
    total = np.sum(_windows(finite_abs(x), 0, **attrs), axis=_window_axes(x))
    return np.asarray(total > float(float_info(x.dtype).max))


def _window_terms(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
    """input elements in the window + 1"""
    rest = {k: v for k, v in attrs.items() if k != "count_boundary"}
    return _input_counts(np.asarray(ops[0]), **rest) + 1


def _window_mean_abs(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
    """(sum of the window's |terms|) / the divisor (0 for a window without terms)"""
    return np.nan_to_num(_avg_pool(finite_abs(ops[0]), **attrs))


#: REDUCE-6 as reduce_mean's: a sum of the window's terms and one division
AVG_POOL_TOLERANCE = Tolerance("reduction", 2, _window_terms, _window_mean_abs)


# -- samplers and registration -------------------------------------------------------------
def _sample_pool(dtypes: frozenset[Any], average: bool) -> SampleFn:
    def sample(src: ArgSource) -> OpCall:
        dtype = src.dtype(dtypes, data=True)
        spatial, long = sample_spatial(src, _SPATIAL)
        n, c = (1, 1) if long else (src.integer(1, 2), src.integer(1, 3))
        axes = [sample_window(src, s) for s in spatial]
        attrs: dict[str, Any] = {"kernel_size": tuple(a[0] for a in axes),
                                 "stride": tuple(a[1] for a in axes),
                                 "dilation": tuple(a[2] for a in axes),
                                 "paddings": tuple(a[3] for a in axes),
                                 "ceil_mode": src.boolean()}
        if average:
            attrs["count_boundary"] = src.boolean()
        return OpCall([src.values(dtype, (n, *spatial, c))], attrs)

    return sample


_WINDOW = ("kernel_size", "stride", "dilation", "paddings", "ceil_mode")
_ORDERED = NUMERIC | BOOL
register(OpDef("max_pool2d",
               summary="Largest input element of each window of an NHWC input (padding left "
                       "out; NaN propagates).",
               category="pooling", operands=("x",), attrs=_WINDOW, infer=_pool_infer,
               kernel=_max_pool, dtypes=_ORDERED, unspecified=_max_pool_mixed_zeros,
               sample=_sample_pool(_ORDERED, False),
               variants={"nan-dropped": _max_pool_nan_dropped}))
register(OpDef("avg_pool2d",
               summary="Mean of each window of an NHWC input: padding counts as zeros; the "
                       "divisor is the window size or its number of input elements.",
               category="pooling", operands=("x",), attrs=(*_WINDOW, "count_boundary"),
               infer=_pool_infer, kernel=_avg_pool, dtypes=FLOATS,
               tolerance=AVG_POOL_TOLERANCE, unspecified=_avg_pool_overflow,
               sample=_sample_pool(FLOATS, True)))

__all__: list[str] = []
