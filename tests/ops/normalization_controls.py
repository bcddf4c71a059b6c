"""Legal-but-different normalization kernels (REDUCE-8): what a vendor may compute instead
of the reference's two-pass numpy sums, each within the REDUCE-6 bound.

``HOWS``: ``two-pass`` (the mean, then the squared deviations, each summed sequentially,
left to right: the order with the largest worst-case error), ``welford`` (one pass,
Welford's update), ``float64`` (the statistics in float64), ``rsqrt-2ulp`` (two-pass with a
reciprocal square root 2 ulp above the correctly rounded one, as an approximate hardware
rsqrt). ``acc`` is the accumulator dtype: the operand's (REDUCE-2 allows it for 16-bit
floats too) or a wider one. Rows are vectorized; the loop runs over the group axis.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["HOWS", "group_norm", "layer_norm", "rms_norm", "standardize"]

HOWS = ("two-pass", "welford", "float64", "rsqrt-2ulp")


def _seq_sum(a: np.ndarray) -> np.ndarray:
    """Sum along the last axis, left to right, rounding to ``a.dtype`` after every add."""
    s = np.zeros(a.shape[:-1], a.dtype)
    for j in range(a.shape[-1]):
        s = (s + a[..., j]).astype(a.dtype)
    return s[..., None]


def _rsqrt(v: np.ndarray, how: str) -> np.ndarray:
    r = (1 / np.sqrt(v)).astype(v.dtype)
    if how == "rsqrt-2ulp":  # off where the result is not exact: rsqrt(inf) is still 0
        off = np.nextafter(np.nextafter(r, np.inf), np.inf).astype(v.dtype)
        r = np.where(np.isfinite(r) & (r != 0), off, r).astype(v.dtype)
    return r


def standardize(x: np.ndarray, eps: float, how: str, acc: Any) -> np.ndarray:
    """``(x - mean) * rsqrt(var + eps)`` along the last axis (``acc`` arithmetic)."""
    acc = np.dtype(np.float64 if how == "float64" else acc)
    a = np.asarray(x).astype(acc)
    n = a.shape[-1]
    e = acc.type(np.float32(eps))
    with np.errstate(all="ignore"):
        if how == "welford":
            mean = np.zeros(a.shape[:-1], acc)
            m2 = np.zeros(a.shape[:-1], acc)
            for k in range(n):
                delta = (a[..., k] - mean).astype(acc)
                mean = (mean + (delta / acc.type(k + 1)).astype(acc)).astype(acc)
                m2 = (m2 + (delta * (a[..., k] - mean)).astype(acc)).astype(acc)
            mean, var = mean[..., None], (m2 / acc.type(n)).astype(acc)[..., None]
        else:
            mean = (_seq_sum(a) / acc.type(n)).astype(acc)
            d = (a - mean).astype(acc)
            var = (_seq_sum((d * d).astype(acc)) / acc.type(n)).astype(acc)
        return ((a - mean).astype(acc) * _rsqrt((var + e).astype(acc), how)).astype(acc)


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, *, epsilon: float,
               how: str = "two-pass", acc: Any = None) -> np.ndarray:
    if x.size == 0:
        return x.copy()
    acc = x.dtype if acc is None else acc
    z = standardize(x, epsilon, how, acc)
    with np.errstate(all="ignore"):
        return (z * gamma.astype(z.dtype) + beta.astype(z.dtype)).astype(x.dtype)


def group_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, *, num_groups: int,
               epsilon: float, how: str = "two-pass", acc: Any = None) -> np.ndarray:
    if x.size == 0:
        return x.copy()
    acc = x.dtype if acc is None else acc
    n, c = x.shape[:2]
    z = standardize(x.reshape(n, num_groups, (c // num_groups) * math.prod(x.shape[2:])),
                    epsilon, how, acc).reshape(x.shape)
    per_channel = (c, *([1] * (x.ndim - 2)))
    with np.errstate(all="ignore"):
        return (z * gamma.astype(z.dtype).reshape(per_channel)
                + beta.astype(z.dtype).reshape(per_channel)).astype(x.dtype)


def rms_norm(x: np.ndarray, weight: np.ndarray, *, epsilon: float, weight_offset: float,
             multiply_before_cast: bool, how: str = "two-pass", acc: Any = None
             ) -> np.ndarray:
    """Sequential sum of squares in ``acc`` (``welford`` has no meaning here: two-pass);
    the weight product in ``acc`` and rounded once, whatever ``multiply_before_cast`` (a
    legal difference of at most an ULP for 16-bit floats)."""
    if x.size == 0:
        return x.copy()
    acc = np.dtype(np.float64 if how == "float64" else (x.dtype if acc is None else acc))
    a = x.astype(acc)
    with np.errstate(all="ignore"):
        ms = (_seq_sum((a * a).astype(acc)) / acc.type(x.shape[-1])).astype(acc)
        t = (a * _rsqrt((ms + acc.type(np.float32(epsilon))).astype(acc), how)).astype(acc)
        w = (weight.astype(acc) + acc.type(np.float32(weight_offset))).astype(acc)
        return (t * w).astype(x.dtype)
