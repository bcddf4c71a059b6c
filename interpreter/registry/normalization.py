"""Normalizations: layer_norm, rms_norm, group_norm (spec/ops/, spec/reductions.md).

Each normalizes groups of elements by statistics of the group: the last axis (layer_norm,
rms_norm) or ``num_groups`` groups of channels of each sample, axis 1 (group_norm). The mean
and the variance are the population (biased) ones, in two passes: the mean, then the mean of
the squared deviations. 16-bit floats are computed in float32 and rounded once (REDUCE-2);
float32 and float64 in their own dtype. ``epsilon`` (and rms_norm's ``weight_offset``) are
float32 values, as MAX passes them. Kernels compute in their operand's namespace (``xp``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from .. import arrays
from ..errors import GraphTypeError
from ..types import TensorType, ValueType
from .core import ArgSource, Attrs, OpCall, OpDef, Tolerance, register
from .dtypesets import FLOATS
from .reduction import widen

__all__: list[str] = []  # importing the module registers its ops

Array = Any
Operands = Sequence[np.ndarray]
_KINDS = ["any", "finite", "small", "small"]


# -- shared checks -------------------------------------------------------------------------
def _check_params(op: OpDef, types: Sequence[ValueType], x: TensorType, names: Sequence[str],
                  size: int, what: str, rule: str) -> None:
    """Operands 1.. (``names``) are 1-D tensors of ``x``'s dtype and device, of ``size``."""
    for i, name in enumerate(names, 1):
        t = op.check_tensor(types, i)
        if t.dtype != x.dtype:
            op.fail(types, rule, f"{name} dtype {t.dtype.value} differs from the input's "
                    f"{x.dtype.value}", GraphTypeError)
        if t.device != x.device:
            op.fail(types, "DEV-1", "operands must be on the same device; transfer first")
        if t.shape != (size,):
            op.fail(types, rule, f"{name} shape {list(t.shape)} does not match {what} "
                    f"[{size}]")


def _last_axis_input(op: OpDef, types: Sequence[ValueType], names: Sequence[str],
                     rules: tuple[str, str], what: str) -> TensorType:
    """Operand 0 (rank >= 1, rule ``rules[0]``) and its parameters ``names`` of the last
    axis' size (``rules[1]``)."""
    x = op.check_tensor(types, 0)
    if x.rank < 1:
        op.fail(types, rules[0], "the input must have rank >= 1 (it normalizes the last axis)")
    _check_params(op, types, x, names, x.shape[-1], what, rules[1])
    return x


def _check_epsilon(op: OpDef, types: Sequence[ValueType], eps: Any, rule: str,
                   positive: bool) -> None:
    ok = type(eps) is float and math.isfinite(eps) and (eps > 0 if positive else eps >= 0)
    if not ok:
        op.fail(types, rule, f"epsilon={eps!r} must be a finite float "
                f"{'> 0 (MAX: epsilon must be positive)' if positive else '>= 0'}")


def _f32(value: float, like: Array) -> Any:
    """``value`` rounded to float32 (as MAX passes it), in ``like``'s dtype."""
    return np.dtype(like.dtype).type(np.float32(value))


def _standardize(a: Array, eps: Any) -> Array:
    """``(a - mean) / sqrt(var + eps)`` along the last axis: population variance, two
    passes (the mean, then the mean of the squared deviations)."""
    xp = arrays.namespace(a)
    d = a - xp.mean(a, axis=-1, keepdims=True)
    return d / xp.sqrt(xp.mean(d * d, axis=-1, keepdims=True) + eps)


# -- REDUCE-6 n and M, unspecified elements (float64 on the operands) ----------------------
#: n of REDUCE-6 is the group size (rms_norm: half of it) plus this: the rounding of the
#: subtraction, the (reciprocal) square root, the division, the scale, the shift and the
#: result, which do not grow with n, and the reference's own
EXTRA_TERMS = 8


def _finite64(a: Array) -> np.ndarray:
    f = np.asarray(a, np.float64)
    return np.where(np.isfinite(f), f, 0.0)


def _groups(x: np.ndarray, attrs: Attrs) -> np.ndarray:
    """The normalized groups of ``x`` as the last axis (float64, non-finite terms 0)."""
    f = _finite64(x)
    if "num_groups" not in attrs:
        return f
    n, c = x.shape[:2]
    g = attrs["num_groups"]
    return f.reshape(n, g, (c // g) * math.prod(x.shape[2:]))


def _per_element(stat: np.ndarray, groups: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A per-group statistic (keepdims) spread over the group's elements, in ``shape``."""
    return np.broadcast_to(stat, groups.shape).reshape(shape)


def _channel(p: Array, x: np.ndarray, attrs: Attrs) -> np.ndarray:
    """A 1-D parameter (float64, non-finite as 0) broadcast against ``x``'s elements."""
    f = _finite64(p)
    return f.reshape(-1, *([1] * (x.ndim - 2))) if "num_groups" in attrs else f


def _stats(ops: Operands, attrs: Attrs) -> dict[str, np.ndarray]:
    """Per element of the result: the group's mean, mean |x|, variance, sum of |x| and sum
    of squared deviations (float64, non-finite terms 0)."""
    x = ops[0]
    g = _groups(x, attrs)
    n = max(1, g.shape[-1])  # an empty group has no elements to spread over
    with np.errstate(all="ignore"):
        total = np.sum(np.abs(g), axis=-1, keepdims=True)
        mean = np.sum(g, axis=-1, keepdims=True) / n
        sq = np.sum((g - mean) ** 2, axis=-1, keepdims=True)
        out = {"mean": mean, "mean_abs": total / n, "sum_abs": total, "sum_sq": sq,
               "var": sq / n}
    return {k: _per_element(v, g, x.shape) for k, v in out.items()}


def _group_size(ops: Operands, attrs: Attrs) -> int:
    x = ops[0]
    if "num_groups" in attrs:
        return (x.shape[1] // attrs["num_groups"]) * math.prod(x.shape[2:])
    return x.shape[-1] if x.ndim else 1


def _count(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """group size + 8"""
    return _group_size(ops, attrs) + EXTRA_TERMS


def _half_count(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """group size / 2 + 8"""
    return _group_size(ops, attrs) / 2 + EXTRA_TERMS


def _standardized_scale(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """max(mean |x|, |x - mean|, tiny) * |gamma| / sqrt(var + epsilon) + |beta| (the
    group's population statistics; tiny the smallest normal)"""
    x, gamma, beta = ops
    s = _stats(ops, attrs)
    tiny = float(ml_dtypes.finfo(np.asarray(expected).dtype).smallest_normal)
    with np.errstate(all="ignore"):
        sd = np.sqrt(s["var"] + float(np.float32(attrs["epsilon"])))
        lead = np.maximum(np.maximum(s["mean_abs"], tiny), np.abs(_finite64(x) - s["mean"]))
        return (lead * np.abs(_channel(gamma, x, attrs)) / sd
                + np.abs(_channel(beta, x, attrs)))


def _may_overflow(m: Any, count: Any, dtype: Any) -> Any:
    """Where a result within the bound of a reference of magnitude up to ``m`` may round
    past the dtype's largest finite value: ``(1 + n * eps) * M > max``."""
    info = ml_dtypes.finfo(dtype)
    return m * (1 + count * float(info.eps)) > float(info.max)


def _standardized_unspecified(x: Array, gamma: Array, beta: Array, **attrs: Any
                              ) -> np.ndarray:
    """Order-dependent overflow of the statistics' sums or of the result, squares that
    underflow (var + epsilon below the smallest normal) and an infinite gamma (inf * 0
    where the computed deviation is exactly 0)."""
    info = ml_dtypes.finfo(x.dtype)
    s = _stats([x], attrs)
    big, tiny = float(info.max), float(info.smallest_normal)
    with np.errstate(all="ignore"):
        m = _standardized_scale([x, gamma, beta], attrs, np.zeros((), x.dtype))
        inf_gamma = np.isinf(np.asarray(gamma, np.float64))
        overflow = _may_overflow(m, _count([x], attrs, m), x.dtype)
        out = ((s["sum_abs"] > big) | (s["sum_sq"] > big) | overflow
               | (s["var"] + float(np.float32(attrs["epsilon"])) < tiny)
               | _channel(inf_gamma, x, attrs).astype(bool))
    return np.asarray(np.broadcast_to(out, x.shape))


STANDARDIZED_TOLERANCE = Tolerance("reduction", 1, _count, _standardized_scale)


# -- layer_norm ----------------------------------------------------------------------------
def _layer_norm_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                      ) -> tuple[ValueType, ...]:
    x = _last_axis_input(op, types, ("gamma", "beta"), ("layer_norm.C1", "layer_norm.C2"),
                         "dimension of reduction")
    _check_epsilon(op, types, attrs.get("epsilon"), "layer_norm.C3", positive=True)
    return (x,)


def _layer_norm(x: Array, gamma: Array, beta: Array, *, epsilon: float) -> Array:
    if x.size == 0:
        return x.copy()
    a = widen(x)
    return (_standardize(a, _f32(epsilon, a)) * widen(gamma) + widen(beta)).astype(x.dtype)


def _sample_layer_norm(src: ArgSource) -> OpCall:
    dtype = src.dtype(FLOATS, data=True)
    shape = src.shape(min_rank=1)
    x = src.values(dtype, shape, src.choice(_KINDS))
    params = [src.values(dtype, shape[-1:], "any") for _ in range(2)]
    return OpCall([x, *params], {"epsilon": src.choice([1e-30, 1e-12, 0.5, 1e-5])})


register(OpDef("layer_norm",
               summary="(x - mean) / sqrt(var + epsilon) * gamma + beta over the last axis "
                       "(population variance).",
               category="normalization", operands=("x", "gamma", "beta"), attrs=("epsilon",),
               infer=_layer_norm_infer, kernel=_layer_norm, dtypes=FLOATS,
               tolerance=STANDARDIZED_TOLERANCE, unspecified=_standardized_unspecified,
               sample=_sample_layer_norm))


# -- rms_norm ------------------------------------------------------------------------------
def _rms_norm_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                    ) -> tuple[ValueType, ...]:
    x = _last_axis_input(op, types, ("weight",), ("rms_norm.C1", "rms_norm.C2"),
                         "the final input dimension")
    _check_epsilon(op, types, attrs.get("epsilon"), "rms_norm.C3", positive=False)
    offset = attrs.get("weight_offset")
    if type(offset) is not float or not math.isfinite(offset):
        op.fail(types, "rms_norm.C3", f"weight_offset={offset!r} must be a finite float")
    if type(attrs.get("multiply_before_cast")) is not bool:
        op.fail(types, "rms_norm.C3", "multiply_before_cast="
                f"{attrs.get('multiply_before_cast')!r} must be a bool")
    return (x,)


def _rms_norm(x: Array, weight: Array, *, epsilon: float, weight_offset: float,
              multiply_before_cast: bool) -> Array:
    """``x / sqrt(mean(x**2) + epsilon) * (weight + weight_offset)``; unless
    ``multiply_before_cast``, the normalized value and the offset weight are rounded to the
    dtype before their product (Llama style)."""
    if x.size == 0:
        return x.copy()
    xp, a = arrays.namespace(x), widen(x)
    t = a / xp.sqrt(xp.mean(a * a, axis=-1, keepdims=True) + _f32(epsilon, a))
    w = widen(weight) + _f32(weight_offset, a)
    if not multiply_before_cast:
        t, w = widen(t.astype(x.dtype)), widen(w.astype(x.dtype))
    return (t * w).astype(x.dtype)


def _rms_scale(ops: Operands, attrs: Attrs, expected: Array) -> Any:
    """|x| * |weight + weight_offset| / sqrt(mean(x**2) + epsilon) (the exact |result|)"""
    x, weight = (_finite64(a) for a in ops)
    with np.errstate(all="ignore"):
        ms = np.sum(x * x, axis=-1, keepdims=True) / max(1, x.shape[-1])
        w = np.abs(weight + float(np.float32(attrs["weight_offset"])))
        return np.abs(x) * w / np.sqrt(ms + float(np.float32(attrs["epsilon"])))


def _rms_unspecified(x: Array, weight: Array, **attrs: Any) -> np.ndarray:
    """Order-dependent overflow of the sum of squares or of the result, squares that
    underflow (mean(x**2) + epsilon below the smallest normal), an infinite weight
    (inf * 0 where the normalized value underflows to 0, which depends on the order) and
    a subnormal normalized value times a weight above n (its rounding in the dtype, up to
    half the smallest subnormal, grows past the bound's n * tiny)."""
    info = ml_dtypes.finfo(x.dtype)
    f = _finite64(x)
    with np.errstate(all="ignore"):
        sq = np.sum(f * f, axis=-1, keepdims=True)
        eps = float(np.float32(attrs["epsilon"]))
        m = _rms_scale([x, weight], attrs, np.zeros((), x.dtype))
        n = _half_count([x], attrs, m)
        t = np.abs(f) / np.sqrt(sq / max(1, x.shape[-1]) + eps)
        w = np.abs(np.asarray(weight, np.float64) + float(np.float32(attrs["weight_offset"])))
        out = ((sq > float(info.max)) | _may_overflow(m, n, x.dtype)
               | (sq / max(1, x.shape[-1]) + eps < float(info.smallest_normal))
               | np.isinf(np.asarray(weight, np.float64))
               | ((t < float(info.smallest_normal)) & (w > n)))
    return np.asarray(np.broadcast_to(out, x.shape))


def _sample_rms_norm(src: ArgSource) -> OpCall:
    dtype = src.dtype(FLOATS, data=True)
    shape = src.shape(min_rank=1)
    x = src.values(dtype, shape, src.choice(_KINDS))
    weight = src.values(dtype, shape[-1:], "any")
    return OpCall([x, weight], {"epsilon": src.choice([0.0, 1e-12, 0.5, 1e-6]),
                                "weight_offset": src.choice([1.0, 0.0]),
                                "multiply_before_cast": src.boolean()})


register(OpDef("rms_norm",
               summary="x / sqrt(mean(x**2) + epsilon) * (weight + weight_offset) over the "
                       "last axis.",
               category="normalization", operands=("x", "weight"),
               attrs=("epsilon", "weight_offset", "multiply_before_cast"),
               infer=_rms_norm_infer, kernel=_rms_norm, dtypes=FLOATS,
               tolerance=Tolerance("reduction", 1, _half_count, _rms_scale),
               unspecified=_rms_unspecified, sample=_sample_rms_norm))


# -- group_norm ----------------------------------------------------------------------------
def _group_norm_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                      ) -> tuple[ValueType, ...]:
    x = op.check_tensor(types, 0)
    if x.rank < 2:
        op.fail(types, "group_norm.C1", f"expected input tensor with >=2 dimensions, got "
                f"shape {list(x.shape)} (batch, channels, ...)")
    channels = x.shape[1]
    _check_params(op, types, x, ("gamma", "beta"), channels, "the channel axis (axis 1)",
                  "group_norm.C2")
    g = attrs.get("num_groups")
    if type(g) is not int or g < 1 or channels % g:
        op.fail(types, "group_norm.C3", f"num_groups={g!r} must be an int >= 1 that divides "
                f"the {channels} channels")
    _check_epsilon(op, types, attrs.get("epsilon"), "group_norm.C4", positive=False)
    return (x,)


def _group_norm(x: Array, gamma: Array, beta: Array, *, num_groups: int, epsilon: float
                ) -> Array:
    if x.size == 0:
        return x.copy()
    a = widen(x)
    n, c = x.shape[:2]
    z = _standardize(a.reshape(n, num_groups, -1), _f32(epsilon, a)).reshape(a.shape)
    per_channel = (c, *([1] * (x.ndim - 2)))
    return (z * widen(gamma).reshape(per_channel)
            + widen(beta).reshape(per_channel)).astype(x.dtype)


def _sample_group_norm(src: ArgSource) -> OpCall:
    dtype = src.dtype(FLOATS, data=True)
    shape = src.shape(min_rank=2)
    c = shape[1]
    divisors = [d for d in range(max(c, 1), 0, -1) if c % d == 0]  # the sweep takes 1 group
    x = src.values(dtype, shape, src.choice(_KINDS))
    params = [src.values(dtype, (c,), "any") for _ in range(2)]
    return OpCall([x, *params], {"num_groups": src.choice(divisors),
                                 "epsilon": src.choice([0.0, 1e-12, 0.5, 1e-5])})


register(OpDef("group_norm",
               summary="Per sample, channels (axis 1) in num_groups groups: (x - mean) / "
                       "sqrt(var + epsilon) per group, then per-channel gamma and beta.",
               category="normalization", operands=("x", "gamma", "beta"),
               attrs=("num_groups", "epsilon"), infer=_group_norm_infer, kernel=_group_norm,
               dtypes=FLOATS, tolerance=STANDARDIZED_TOLERANCE,
               unspecified=_standardized_unspecified, sample=_sample_group_norm))
