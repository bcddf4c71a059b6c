"""Convolutions: ``conv2d``, ``conv3d`` and ``conv2d_transpose`` (spec/ops/conv2d.md, ...).

Layouts are MAX's: the input is channels-last ``[N, *spatial, C]`` (NHWC, NDHWC), a filter
``[*kernel, C / groups, F]`` (RSCF, QRSCF); the transposed convolution's filter is
``[*kernel, F, C]``. Attributes hold one entry per spatial axis: ``stride`` and ``dilation``
ints >= 1, ``paddings`` one ``(before, after)`` pair of ints >= 0. The window helpers here
(``padded``, ``windows``, ``out_sizes``) are shared with the pooling ops. 16-bit floats are
computed in float32 and rounded once; integers keep their dtype and wrap (REDUCE-2).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import arrays
from ..dtype import DType
from ..types import TensorType, ValueType
from ..validators import is_int
from .core import ArgSource, Attrs, InferFn, OpCall, OpDef, SampleFn, Tolerance, register
from .dtypesets import FLOATS
from .linalg import tensor_pair
from .reduction import float_info, widen

Array = Any
Pairs = tuple[tuple[int, int], ...]

#: MAX 26.7 convolves floats, and int32/int64 on the CPU (integers wrap)
CONV_DTYPES = FLOATS | frozenset({DType.int32, DType.int64})
#: a spatial size past which the samplers keep batch and channels at 1 (reach, CONF-86)
LONG_SPATIAL = 125


# -- window geometry (shared with registry/pooling.py) ---------------------------------------
def out_sizes(spatial: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
              dilation: Sequence[int], paddings: Pairs, ceil_mode: bool = False
              ) -> tuple[int, ...]:
    """Windows per spatial axis: ``floor(span / stride) + 1`` (``ceil`` in ceil mode) with
    ``span = size + before + after - dilation * (kernel - 1) - 1``; <= 0 where the dilated
    kernel does not fit the padded axis (``span < 0``)."""
    out = []
    for n, k, s, d, (lo, hi) in zip(spatial, kernel, stride, dilation, paddings, strict=True):
        span = n + lo + hi - d * (k - 1) - 1
        out.append(0 if span < 0 else (-(-span // s) if ceil_mode else span // s) + 1)
    return tuple(out)


def padded(x: Array, paddings: Pairs, fill: bool | int | float,
           ends: Sequence[int] | None = None) -> Array:
    """``x`` ``[N, *spatial, C]`` with ``fill`` before and after each spatial axis; ``ends``:
    the padded length per axis when the windows reach past ``after`` (ceil mode)."""
    xp = arrays.namespace(x)
    spatial = x.shape[1:-1]
    lengths = [max(n + lo + hi, e) for n, (lo, hi), e in
               zip(spatial, paddings, ends or [0] * len(spatial), strict=True)]
    out = xp.full((x.shape[0], *lengths, x.shape[-1]), arrays.fill_value(fill, x.dtype),
                  dtype=x.dtype)
    out[(slice(None), *(slice(lo, lo + n) for n, (lo, _) in zip(spatial, paddings, strict=True)),
         slice(None))] = x
    return out


def windows(x: Array, kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
            outs: Sequence[int]) -> Array:
    """Every window of a padded ``x`` ``[N, *spatial, C]``: ``[N, *outs, *kernel, C]`` with
    element ``[n, o..., k..., c] = x[n, o * stride + k * dilation ..., c]``."""
    xp, rank = arrays.namespace(x), len(kernel)
    index = []
    for i, (k, s, d, o) in enumerate(zip(kernel, stride, dilation, outs, strict=True)):
        at = [1] * (2 * rank)
        at[i], at[rank + i] = o, k
        index.append((xp.arange(o)[:, None] * s + xp.arange(k)[None, :] * d).reshape(at))
    return x[(slice(None), *index, slice(None))]


def finite_abs(x: Array) -> np.ndarray:
    """|x| in float64 with non-finite elements as 0 (REDUCE-6's M, REDUCE-5's masks)."""
    a = np.asarray(x, np.float64)
    return np.where(np.isfinite(a), np.abs(a), 0.0)


def spatial_rank(w: Array) -> int:
    return len(w.shape) - 2


# -- type rules ----------------------------------------------------------------------------
def _check_operands(op: OpDef, types: Sequence[ValueType], rank: int
                    ) -> tuple[TensorType, TensorType]:
    x, w = tensor_pair(op, types)
    if x.rank != rank + 2 or w.rank != rank + 2:
        op.fail(types, f"{op.name}.C1", f"input and filter must have rank {rank + 2}, got "
                f"{x.rank} and {w.rank}")
    return x, w


def window_problem(attrs: Attrs, names: Sequence[str], rank: int) -> str | None:
    """``names`` (of ``stride``, ``dilation``, ``kernel_size``) must be ``rank`` ints >= 1,
    ``paddings`` ``rank`` pairs of ints >= 0."""
    for name in names:
        v = attrs.get(name)
        if not (isinstance(v, tuple) and len(v) == rank and all(is_int(s) and s >= 1
                                                                for s in v)):
            return f"attribute {name} must be a tuple of {rank} ints >= 1, got {v!r}"
    p = attrs.get("paddings")
    if not (isinstance(p, tuple) and len(p) == rank and all(
            isinstance(q, tuple) and len(q) == 2 and all(is_int(v) and v >= 0 for v in q)
            for q in p)):
        return f"attribute paddings must be {rank} (before, after) pairs of ints >= 0, got {p!r}"
    return None


def check_outs(op: OpDef, types: Sequence[ValueType], rule: str, spatial: Sequence[int],
               outs: Sequence[int]) -> None:
    if min(outs, default=1) < 1:
        op.fail(types, rule, f"output spatial dims {list(outs)} must be positive: the "
                f"(dilated) window does not fit the padded input {list(spatial)}")


def _conv_infer(rank: int) -> InferFn:
    return lambda op, types, attrs: _conv_type(op, types, attrs, rank)


def _conv_type(op: OpDef, types: Sequence[ValueType], attrs: Attrs, rank: int
               ) -> tuple[ValueType, ...]:
    x, w = _check_operands(op, types, rank)
    problem = window_problem(attrs, ("stride", "dilation"), rank)
    groups: Any = attrs.get("groups")
    if problem is None and not (is_int(groups) and groups >= 1):
        problem = f"attribute groups must be an int >= 1, got {groups!r}"
    if problem is not None:
        op.fail(types, f"{op.name}.C2", problem)
    kernel, (cg, f) = w.shape[:rank], w.shape[rank:]
    if x.shape[-1] != groups * cg or f % groups or min(kernel) < 1:
        op.fail(types, f"{op.name}.C3", f"input channels {x.shape[-1]} must be groups "
                f"({groups}) * filter in-channels ({cg}), filter out-channels {f} divisible "
                f"by groups, kernel dims {list(kernel)} >= 1")
    outs = out_sizes(x.shape[1:-1], kernel, attrs["stride"], attrs["dilation"],
                     attrs["paddings"])
    check_outs(op, types, f"{op.name}.C4", x.shape[1:-1], outs)
    return (x.with_(shape=(x.shape[0], *outs, f)),)


def _transpose_sizes(x: Array | TensorType, w: Array | TensorType, attrs: Attrs
                     ) -> tuple[int, ...]:
    """The full output per spatial axis before cropping: ``(size - 1) * stride +
    dilation * (kernel - 1) + 1 + output_padding``."""
    return tuple((n - 1) * s + d * (k - 1) + 1 + e for n, k, s, d, e in zip(
        x.shape[1:-1], w.shape[:-2], attrs["stride"], attrs["dilation"],
        attrs["output_paddings"], strict=True))


def _transpose_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                     ) -> tuple[ValueType, ...]:
    rank = 2
    x, w = _check_operands(op, types, rank)
    problem = window_problem(attrs, ("stride", "dilation"), rank)
    extra = attrs.get("output_paddings")
    if problem is None and not (isinstance(extra, tuple) and len(extra) == rank and all(
            is_int(e) and 0 <= e < s for e, s in zip(extra, attrs["stride"], strict=True))):
        problem = (f"attribute output_paddings must be {rank} ints in [0, stride), got "
                   f"{extra!r}")
    if problem is not None:
        op.fail(types, f"{op.name}.C2", problem)
    if w.shape[-1] != x.shape[-1] or min(w.shape[:-2]) < 1 or min(x.shape[1:-1]) < 1:
        op.fail(types, f"{op.name}.C3", f"filter in-channels {w.shape[-1]} must equal input "
                f"channels {x.shape[-1]}; kernel and input spatial dims must be >= 1")
    outs = tuple(n - lo - hi for n, (lo, hi) in zip(_transpose_sizes(x, w, attrs),
                                                     attrs["paddings"], strict=True))
    check_outs(op, types, f"{op.name}.C4", x.shape[1:-1], outs)
    return (x.with_(shape=(x.shape[0], *outs, w.shape[-2])),)


# -- kernels -------------------------------------------------------------------------------
def _conv(x: Array, w: Array, *, stride: tuple[int, ...], dilation: tuple[int, ...],
          paddings: Pairs, groups: int) -> Array:
    """``out[n, o..., f] = sum over k..., c in f's group of
    xpad[n, o * stride + k * dilation ..., c] * w[k..., c, f]`` (zero padding): per group,
    the matrix product of the windows ``[N * outs, kernel * Cg]`` and the filter
    ``[kernel * Cg, F / groups]``."""
    xp, a, b, rank = arrays.namespace(x), widen(x), widen(w), spatial_rank(w)
    kernel, (cg, f) = w.shape[:rank], w.shape[rank:]
    outs = out_sizes(x.shape[1:-1], kernel, stride, dilation, paddings)
    cols = windows(padded(a, paddings, 0), kernel, stride, dilation, outs)
    m, kk = x.shape[0] * math.prod(outs), math.prod(kernel)
    lhs = cols.reshape(m, kk, groups, cg).transpose(2, 0, 1, 3).reshape(groups, m, kk * cg)
    rhs = b.reshape(kk, cg, groups, f // groups).transpose(2, 0, 1, 3).reshape(
        groups, kk * cg, f // groups)
    out = xp.matmul(lhs, rhs)  # [groups, N * outs, F / groups]
    return out.transpose(1, 0, 2).reshape(x.shape[0], *outs, f).astype(x.dtype)


def _conv_transpose(x: Array, w: Array, *, stride: tuple[int, ...],
                    dilation: tuple[int, ...], paddings: Pairs,
                    output_paddings: tuple[int, ...]) -> Array:
    """Each input element scatters ``x[n, i..., c] * w[k..., f, c]`` to
    ``full[n, i * stride + k * dilation ..., f]``; ``paddings`` crop ``full``."""
    xp, a, b = arrays.namespace(x), widen(x), widen(w)
    rank, attrs = spatial_rank(w), {"stride": stride, "dilation": dilation,
                                    "output_paddings": output_paddings}
    full = _transpose_sizes(x, w, attrs)
    out = xp.zeros((x.shape[0], *full, w.shape[-2]), dtype=a.dtype)
    for k in itertools.product(*(range(n) for n in w.shape[:rank])):  # kernel offsets
        at = tuple(slice(j * d, j * d + (n - 1) * s + 1, s) for j, d, n, s in zip(
            k, dilation, x.shape[1:-1], stride, strict=True))
        out[(slice(None), *at, slice(None))] += xp.matmul(a, b[k].T)
    crop = tuple(slice(lo, n - hi) for n, (lo, hi) in zip(full, paddings, strict=True))
    return out[(slice(None), *crop, slice(None))].astype(x.dtype)


# -- unspecified elements (TOL-2) ----------------------------------------------------------
def _overflow(total: np.ndarray, dtype: Any) -> np.ndarray:
    """REDUCE-5: where the finite |products| add up past the dtype's max."""
    return np.asarray(total > float(float_info(dtype).max))


def _nonfinite_weights(w: Array, in_axis: int) -> np.ndarray:
    """``[kernel positions, F]`` as float64: 1 where a weight feeding output channel f at
    that kernel position is non-finite (``in_axis``: the filter's in-channel axis)."""
    bad = np.any(~np.isfinite(np.asarray(w, np.float64)), axis=in_axis)
    return bad.reshape(math.prod(w.shape[:-2]), -1).astype(np.float64)


def _conv_unspecified(x: Array, w: Array, **attrs: Any) -> np.ndarray:
    """REDUCE-5 overflow, and the elements whose windows meet a non-finite weight with a
    padding zero: a kernel may skip padding (no term) or multiply it (0 * inf = NaN)."""
    if np.dtype(x.dtype).kind in "iu":
        return np.zeros(_conv(x, w, **attrs).shape, bool)
    over = _overflow(_conv(finite_abs(x), finite_abs(w), **attrs), x.dtype)
    rank = spatial_rank(w)
    hit = np.zeros((1, *x.shape[1:-1], 1))  # 1 where padding: the windows of one channel
    pads = windows(padded(hit, attrs["paddings"], 1.0), w.shape[:rank], attrs["stride"],
                   attrs["dilation"], over.shape[1:-1])
    meets = pads.reshape(math.prod(over.shape[1:-1]), -1) @ _nonfinite_weights(w, -2) > 0
    return over | meets.reshape(1, *over.shape[1:])


def _transpose_unspecified(x: Array, w: Array, **attrs: Any) -> np.ndarray:
    """REDUCE-5 overflow, and the elements a non-finite weight would meet an input position
    that does not exist (between strided inputs, outside the input): a kernel that inserts
    zeros there gives 0 * inf = NaN, one that scatters gives no term."""
    if np.dtype(x.dtype).kind in "iu":
        return np.zeros(_conv_transpose(x, w, **attrs).shape, bool)
    over = _overflow(_conv_transpose(finite_abs(x), finite_abs(w), **attrs), x.dtype)
    shape = over.shape
    rank, real = spatial_rank(w), np.ones((1, 1), bool)
    for n, k, s, d, (lo, _), o in zip(x.shape[1:-1], w.shape[:rank], attrs["stride"],
                                      attrs["dilation"], attrs["paddings"], shape[1:-1],
                                      strict=True):
        src = np.arange(o)[:, None] + lo - np.arange(k)[None, :] * d  # [o, k]
        ok = (src >= 0) & (src % s == 0) & (src // s < n)
        real = (real[:, None, :, None] & ok[None, :, None, :]).reshape(
            real.shape[0] * o, real.shape[1] * k)
    meets = (~real).astype(np.float64) @ _nonfinite_weights(w, -1) > 0
    return over | meets.reshape(1, *shape[1:])


# -- REDUCE-6: n and M ---------------------------------------------------------------------
def _conv_terms(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
    """C_in / groups * prod(kernel dims)"""
    w = ops[1]
    return w.shape[-2] * math.prod(w.shape[:-2])


def _conv_abs(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
    """sum over the receptive field of |x * w|"""
    return _conv(finite_abs(ops[0]), finite_abs(ops[1]), **attrs)


def _transpose_terms(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
    """C_in * prod(kernel dims)"""
    w = ops[1]
    return w.shape[-1] * math.prod(w.shape[:-2])


def _transpose_abs(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
    """sum of |x * w| over the terms scattered to the element"""
    return _conv_transpose(finite_abs(ops[0]), finite_abs(ops[1]), **attrs)


#: the matmul bound (REDUCE-6, u = 2) over each element's receptive field
CONV_TOLERANCE = Tolerance("reduction", 2, _conv_terms, _conv_abs)
TRANSPOSE_TOLERANCE = Tolerance("reduction", 2, _transpose_terms, _transpose_abs)


# -- samplers ------------------------------------------------------------------------------
def sample_spatial(src: ArgSource, rank: int, min_side: int = 0) -> tuple[tuple[int, ...], bool]:
    """The spatial dims (the shape the cell's shape class steers; a reach source makes one
    long, CONF-86) and whether they are long (then batch and channels stay 1)."""
    spatial = src.shape(min_rank=rank, max_rank=rank, min_side=min_side, rest=1)
    return spatial, math.prod(spatial) > LONG_SPATIAL


def sample_window(src: ArgSource, size: int, whole: bool = False
                  ) -> tuple[int, int, int, tuple[int, int]]:
    """(kernel, stride, dilation, (before, after)) for one axis of ``size`` such that the
    dilated kernel fits the padded axis; ``whole``: the kernel is the unpadded axis."""
    stride, dilation = src.integer(1, 3), src.integer(1, 2)
    if whole and size >= 1:
        return size, stride, 1, (0, 0)
    lo, hi = src.integer(0, 2), src.integer(0, 2)
    if size + lo + hi == 0:
        hi = 1  # an empty axis: the padding makes the window
    kernel = src.integer(1, min(3, (size + lo + hi - 1) // dilation + 1))
    return kernel, stride, dilation, (lo, hi)


def _sample_conv(rank: int) -> SampleFn:
    def sample(src: ArgSource) -> OpCall:
        dtype = src.dtype(CONV_DTYPES, data=True)
        spatial, long = sample_spatial(src, rank)
        groups = 1 if long else src.choice((1, 2, 3))
        cg = 1 if long else src.integer(1, 2)  # cg == 1 < groups: depthwise
        n = 1 if long else src.integer(1, 2)
        f = groups * src.integer(1, 2)
        whole = src.integer(0, 5) == 0 and max(spatial) <= 5  # the kernel is the input
        axes = [sample_window(src, s, whole) for s in spatial]
        x = src.values(dtype, (n, *spatial, groups * cg))
        w = src.values(dtype, (*(a[0] for a in axes), cg, f))
        return OpCall([x, w], {"stride": tuple(a[1] for a in axes),
                               "dilation": tuple(a[2] for a in axes),
                               "paddings": tuple(a[3] for a in axes), "groups": groups})

    return sample


def _sample_transpose(src: ArgSource) -> OpCall:
    dtype = src.dtype(CONV_DTYPES, data=True)
    spatial, long = sample_spatial(src, 2, min_side=1)
    n, c, f = (1, 1, 1) if long else (src.integer(1, 2), src.integer(1, 3), src.integer(1, 3))
    kernel = tuple(src.integer(1, 3) for _ in spatial)
    stride = tuple(src.integer(1, 3) for _ in spatial)
    dilation = tuple(src.integer(1, 2) for _ in spatial)
    extra = tuple(src.integer(0, s - 1) for s in stride)
    paddings = []
    for size, k, s, d, e in zip(spatial, kernel, stride, dilation, extra, strict=True):
        full = (size - 1) * s + d * (k - 1) + 1 + e
        lo = min(src.integer(0, 2), full - 1)
        paddings.append((lo, min(src.integer(0, 2), full - 1 - lo)))
    x = src.values(dtype, (n, *spatial, c))
    w = src.values(dtype, (*kernel, f, c))
    return OpCall([x, w], {"stride": stride, "dilation": dilation, "paddings": tuple(paddings),
                           "output_paddings": extra})


def _register(name: str, summary: str, attrs: tuple[str, ...], infer: InferFn,
              kernel: Callable[..., Any], tolerance: Tolerance,
              unspecified: Callable[..., np.ndarray], sample: SampleFn) -> None:
    register(OpDef(name, summary=summary, category="convolution", operands=("x", "filter"),
                   attrs=attrs, infer=infer, kernel=kernel, dtypes=CONV_DTYPES,
                   tolerance=tolerance, promote=(0, 1), unspecified=unspecified,
                   sample=sample))


_CONV_ATTRS = ("stride", "dilation", "paddings", "groups")
_register("conv2d", "2-D convolution (cross-correlation) of an NHWC input with an RSCF filter: "
          "stride, dilation, zero padding per side, groups; integers wrap.", _CONV_ATTRS,
          _conv_infer(2), _conv, CONV_TOLERANCE, _conv_unspecified, _sample_conv(2))
_register("conv3d", "3-D convolution (cross-correlation) of an NDHWC input with a QRSCF "
          "filter: stride, dilation, zero padding per side, groups; integers wrap.",
          _CONV_ATTRS, _conv_infer(3), _conv, CONV_TOLERANCE, _conv_unspecified, _sample_conv(3))
_register("conv2d_transpose", "2-D transposed convolution (the gradient of conv2d by its "
          "input) of an NHWC input with a [kh, kw, F, C] filter; paddings crop the output.",
          ("stride", "dilation", "paddings", "output_paddings"), _transpose_infer,
          _conv_transpose, TRANSPOSE_TOLERANCE, _transpose_unspecified, _sample_transpose)

__all__ = ["CONV_DTYPES", "LONG_SPATIAL", "check_outs", "finite_abs", "out_sizes", "padded",
           "sample_spatial", "sample_window", "window_problem", "windows"]
