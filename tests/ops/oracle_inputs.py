"""Adversarial operands per float op × dtype for the accuracy oracle (NUM-14).

Each set is the union of: the dtype's special and extreme values (±0, ±inf, NaN, the
smallest subnormal and normal, the largest finite, 1 and its neighbours), a dense sweep of
random bit patterns over every binade plus a linear sweep of [-12, 12], and op-specific
regions: the x where the result crosses the overflow, underflow and subnormal boundaries
of the dtype (a few ULP either side of each), cancellation regions and every branch point
of the reference kernels (``interpreter/registry/elementwise.py``), each with neighbours.
Deterministic (seeded) and small enough for mpmath (about 1,000 values per cell).
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

from conformance.compare import from_ordered, to_ordered

__all__ = ["binary_inputs", "unary_inputs"]


def _neighbours(points: Any, dtype: np.dtype[Any], k: int = 3) -> np.ndarray:
    """Each point rounded to ``dtype`` and the ``k`` values of ``dtype`` either side."""
    with np.errstate(all="ignore"):
        p = np.asarray(points, np.float64).astype(dtype)
    p = p[np.isfinite(p.astype(np.float64))]
    o = to_ordered(p)
    return np.concatenate([from_ordered(o + d, dtype) for d in range(-k, k + 1)])


def _sweep(lo: float, hi: float, n: int, dtype: np.dtype[Any]) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.linspace(lo, hi, n).astype(dtype)


def _random_bits(dtype: np.dtype[Any], n: int, rng: np.random.Generator) -> np.ndarray:
    """Finite values with uniformly random bit patterns: every binade equally often."""
    width = 8 * dtype.itemsize
    bits = rng.integers(0, 2**width, size=4 * n, dtype=np.uint64).astype(f"u{dtype.itemsize}")
    v = bits.view(dtype)
    with np.errstate(invalid="ignore"):  # NaN bit patterns of narrow floats
        return v[np.isfinite(v.astype(np.float64))][:n]


def _common(dtype: np.dtype[Any], rng: np.random.Generator) -> list[np.ndarray]:
    info = ml_dtypes.finfo(dtype)
    tiny, sub, big = float(info.tiny), float(info.smallest_subnormal), float(info.max)
    specials = np.array([0.0, -0.0, math.inf, -math.inf, math.nan], np.float64)
    return [specials.astype(dtype), _neighbours([sub, -sub, tiny, -tiny, big, -big, 1, -1,
                                                 0.5, -0.5, 2, -2], dtype),
            _random_bits(dtype, 300, rng), _sweep(-12, 12, 241, dtype)]


def _boundaries(dtype: np.dtype[Any]) -> dict[str, float]:
    info = ml_dtypes.finfo(dtype)
    return {"lnmax": math.log(float(info.max)), "lntiny": math.log(float(info.tiny)),
            "lnsub": math.log(float(info.smallest_subnormal))}


def _regions(name: str, attrs: dict[str, Any], dtype: np.dtype[Any]
             ) -> tuple[list[float], list[tuple[float, float]]]:
    """(points to probe with neighbours, intervals to sweep) for op ``name``."""
    b = _boundaries(dtype)
    lnmax, lntiny, lnsub = b["lnmax"], b["lntiny"], b["lnsub"]
    halfpi = [k * math.pi / 2 for k in (1, 2, 3, 4, 5, 100, 1001, 10**5 + 1, 10**7)]
    if name == "exp":
        return [lnmax, lntiny, lnsub, lnsub - 0.7, 0.0], [(lnsub - 1, lntiny + 1),
                                                          (lnmax - 2, lnmax + 1)]
    if name in ("log", "log1p"):
        pts = [1.0, 2.0, 0.5, math.e, 1e-3, 1e-8, 1e-20, -1.0, -0.5, -1e-10, 3.0, 0.75]
        return pts, [(-0.999, 1.0), (0.5, 2.0)]
    if name in ("sin", "cos"):
        return [*halfpi, *(-h for h in halfpi), 1e22, 1e30, 2.0**60, math.pi / 4], [(-50, 50)]
    if name == "tanh":
        return [0.55, 0.625, 1.0, 22.0, 19.0, 1e-8, 9.0, -0.55, -22.0], [(-25, 25), (-1, 1)]
    if name == "erf":
        pts = [0.84375, 1.25, 2.857, 6.0, 1e-9, 5.9, 4.0]
        return [*pts, *(-p for p in pts)], [(-7, 7), (-0.1, 0.1)]
    if name in ("sqrt", "rsqrt"):
        return [1.0, 2.0, 4.0, 0.25, 3.0, 1e-300, 1e300], [(0.0, 8.0)]
    if name in ("sigmoid", "silu"):
        pts = [-lnsub, lnsub, lntiny, lnmax, -lnmax, -36.7, 36.7, -lntiny, 2 * lntiny,
               lnsub - math.log(-lnsub), 2 * lnsub, lntiny - math.log(-lntiny)]
        return pts, [(lnsub - 8, lntiny + 2), (-40, 40), (2 * lnsub, lnsub)]
    if name == "gelu" and attrs.get("approximate") == "tanh":
        # 2u = -ln(max) (overflow of exp(-2u)), -ln(tiny), -ln(subnormal); the branch at 0
        pts = [_tanh_form_x(-lnmax), _tanh_form_x(lntiny), _tanh_form_x(lnsub), -7.0, -3.0]
        return pts, [(_tanh_form_x(lnsub) - 0.5, -5.0), (-5.0, 5.0)]
    if name == "gelu":
        # x where exp(-x**2/2) reaches tiny / subnormal; the asymptotic branch at -14
        pts = [-math.sqrt(-2 * lntiny), -math.sqrt(-2 * lnsub), -14.0, -10.0, -2.5, -0.7,
               -1.0, -5.0, -math.sqrt(-2 * lnsub) - 1]
        return pts, [(-math.sqrt(-2 * lnsub) - 2, -5.0), (-5.0, 5.0)]
    if name == "gelu" and attrs.get("approximate") == "quick":
        # as sigmoid/silu with t = 1.702 x: overflow of exp(-t), tiny and subnormal exp(t)
        pts = [t / 1.702 for t in (-lnmax, lntiny, lnsub, lnsub - math.log(-lnsub),
                                   2 * lnsub, -36.7, 36.7, -708.0)] + [-1000.0, 1000.0]
        return pts, [((2 * lnsub) / 1.702, lntiny / 1.702), (-25.0, 25.0)]
    if name == "atanh":
        # the poles at +-1 (log of a small 1 - |x|), tiny x (odd, atanh x = x), 0.5
        pts = [1.0, -1.0, 0.5, -0.5, 1e-8, -1e-8, 0.99, 0.999, 1 - 1e-6, 0.25, 1e-20]
        return pts, [(-1.0, 1.0), (0.9, 1.0), (-0.01, 0.01)]
    raise KeyError(name)


def _tanh_form_x(t: float) -> float:
    """The x < 0 where 2 * sqrt(2/pi) * (x + 0.044715 x**3) = t (bisection)."""
    lo, hi = -1e3, 0.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 2 * math.sqrt(2 / math.pi) * (mid + 0.044715 * mid**3) < t:
            lo = mid
        else:
            hi = mid
    return lo


def unary_inputs(name: str, attrs: dict[str, Any], dtype: np.dtype[Any]) -> np.ndarray:
    """The adversarial operand set of unary op ``name`` in ``dtype`` (unique values)."""
    rng = np.random.default_rng(14)
    pts, spans = _regions(name, attrs, dtype)
    parts = [*_common(dtype, rng), _neighbours(pts, dtype, 4)]
    parts += [_sweep(lo, hi, 160, dtype) for lo, hi in spans]
    return _unique(np.concatenate([np.asarray(p, dtype) for p in parts]))


def _unique(v: np.ndarray) -> np.ndarray:
    bits = v.view(f"u{v.dtype.itemsize}")
    _, idx = np.unique(bits, return_index=True)
    return v[np.sort(idx)]


def binary_inputs(name: str, dtype: np.dtype[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Operand pairs for ``div`` and ``pow`` (pow: the domain of the C99 cases the oracle
    computes, positive bases and integer exponents of negative ones)."""
    rng = np.random.default_rng(15)
    info = ml_dtypes.finfo(dtype)
    lnmax, lnsub = math.log(float(info.max)), math.log(float(info.smallest_subnormal))
    if name == "div":
        a = np.concatenate([_random_bits(dtype, 400, rng), _common(dtype, rng)[1]])
        b = _random_bits(dtype, a.size, rng)
        return a, b
    with np.errstate(all="ignore"):
        rand = np.abs(_random_bits(dtype, 300, rng))  # any base, moderate exponents
        pairs = [(rand, _sweep(-30, 30, rand.size, dtype)[rng.permutation(rand.size)])]
        one = _neighbours([1.0], dtype, 6)  # bases near 1, large exponents (cancellation)
        pairs.append((one, (rng.integers(-2**20, 2**20, one.size) / 7).astype(dtype)))
        small = _sweep(0.01, 10, 100, dtype)
        pairs.append((small, _sweep(-5, 5, 100, dtype)[rng.permutation(100)]))
        edge = _neighbours([lnmax / math.log(2), lnsub / math.log(2)], dtype, 3)
        pairs.append((np.full(edge.size, 2.0, dtype), edge))  # overflow / subnormal edges
        neg = -_sweep(0.5, 3, 60, dtype)  # negative bases, integer exponents
        pairs.append((neg, rng.integers(-40, 40, neg.size).astype(dtype)))
    x = np.concatenate([p[0] for p in pairs])
    y = np.concatenate([p[1] for p in pairs])
    ok = np.isfinite(x.astype(np.float64)) & np.isfinite(y.astype(np.float64))
    return x[ok], y[ok]
