"""float64 kernels for sigmoid, silu and gelu that stay within their budget everywhere (NUM-7).

float64 has no wider type, so where a formula loses accuracy the lost part is carried
explicitly: double-double products (Dekker's exact ``two_prod``) for arguments whose rounding
error a steep exp or erfc would amplify, and ``exp(t) = h * h`` with ``h = exp(t / 2)`` where
``exp(t)`` itself would be subnormal (few bits) while the result is not. Measured against
mpmath by tests/ops/test_oracle.py (NUM-14); spec/numerics.md NUM-16 explains each region.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["gelu_erfc", "gelu_quick", "gelu_tanh", "sigmoid", "silu", "two_prod", "two_sum",
           "x_sigmoid"]

Array = Any

_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's splitter for 53-bit significands
# double-double constants (hi, lo): hi + lo equals the constant to about 2**-106
_INV_SQRT2 = (0.7071067811865476, -4.833646656726457e-17)
_C1 = (1.5957691216057308, -9.96930880911092e-17)  # 2 * sqrt(2 / pi)
_C3 = (0.07135481627260025, -6.175149918155315e-19)  # 2 * sqrt(2 / pi) * 0.044715
_QUICK = (1.702, 4.263256414560601e-17)  # the decimal 1.702
_QUICK_FAR = 1000.0  # beyond: x (x > 0) or -0.0 (exp(-1702) is 0): clipping t is exact
_INV_SQRT_2PI = (0.3989422804014327, -2.49232720227773e-17)
_TWO_OVER_SQRT_PI = 1.1283791670955126
_SUBNORMAL_EXP = -708.0  # exp(t) is normal above (2.2e-308 = exp(-708.4))
_FAR = 64.0  # beyond |x| = 64 gelu is x or -0.0 in float64: clipping there is exact
_erfc = np.frompyfunc(math.erfc, 1, 1)


def two_prod(a: Array, b: Array) -> tuple[Array, Array]:
    """``a * b = p + e`` exactly (|a|, |b| < 2**996; no fma needed)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def two_sum(a: Array, b: Array) -> tuple[Array, Array]:
    """``a + b = s + e`` exactly (Knuth; any order of magnitude)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: Array) -> tuple[Array, Array]:
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def x_sigmoid(x: Array, t: Array, t_lo: Array = 0.0) -> Array:
    """``x * sigmoid(t + t_lo)`` with ``t_lo`` a tiny correction to ``t``. For t < 0 as
    ``x e / (1 + e)``, ``e = exp(t)`` (exp(-t) would overflow), and where e is subnormal
    (few bits) while the result may not be, as ``(x * h) * h``, ``h = exp(t / 2)``."""
    with np.errstate(all="ignore"):
        xl = x * (1 + t_lo)  # exp(t + t_lo) = exp(t) * (1 + t_lo)
        e = np.exp(t)
        h = np.exp(t / 2)
        neg = np.where(t < _SUBNORMAL_EXP, (xl * h) * h, (xl * e) / (1 + e))
        return np.where(t >= 0, x / (1 + np.exp(-t) * (1 - t_lo)), neg)


def sigmoid(x: Array) -> Array:
    """``1 / (1 + exp(-x))``; for x < 0 ``e / (1 + e)``, ``e = exp(x)`` (no overflow)."""
    with np.errstate(all="ignore"):
        e = np.exp(x)
        return np.where(x >= 0, 1 / (1 + np.exp(-x)), e / (1 + e))


def silu(x: Array) -> Array:
    """``x * sigmoid(x)``; the limit -0.0 at -inf."""
    return np.where(x == -np.inf, -0.0, x_sigmoid(x, x))


def gelu_tanh(x: Array) -> Array:
    """``x * sigmoid(t)``, ``t = 2u = c1 x + c3 x**3`` in double-double: an error of
    ``d`` in t is a relative error of ``d`` in the result for t << 0."""
    xc = np.clip(x, -_FAR, _FAR)
    with np.errstate(all="ignore"):
        p, e = two_prod(xc, xc)
        q, f = two_prod(xc, p)
        cube_lo = f + xc * e  # x**3 = q + cube_lo
        a, a_lo = two_prod(_C3[0], q)
        a_lo = a_lo + _C3[0] * cube_lo + _C3[1] * q
        b, b_lo = two_prod(_C1[0], xc)
        b_lo = b_lo + _C1[1] * xc
        t, t_lo = two_sum(a, b)
        t_lo = t_lo + a_lo + b_lo
    return np.where(x == -np.inf, -0.0, x_sigmoid(x, t, t_lo))


def gelu_quick(x: Array) -> Array:
    """``x * sigmoid(1.702 x)`` with ``1.702 x`` in double-double (the decimal constant:
    its rounding error would be a relative error of ``1.702 x * 2**-53`` in the result)."""
    xc = np.clip(x, -_QUICK_FAR, _QUICK_FAR)
    with np.errstate(all="ignore"):
        t, t_lo = two_prod(_QUICK[0], xc)
        t_lo = t_lo + _QUICK[1] * xc
    return np.where(x == -np.inf, -0.0, x_sigmoid(x, t, t_lo))


def gelu_erfc(x: Array) -> Array:
    """``0.5 x erfc(z)``, ``z = -x / sqrt(2)`` in double-double (erfc's relative slope is
    ``2z``, so a rounded z costs ``2 z**2`` ulp); below -14 the Mills-ratio series
    ``-phi(x) * sum_n (-1)**n (2n-1)!! / x**(2n)``, ``phi(x) = exp(-x**2 / 2) / sqrt(2 pi)``
    (16 terms: the series' error is below 2**-62 there; the result is below exp(-x**2 / 2),
    so where that is subnormal the result is too and loses no more)."""
    xc = np.clip(x, -_FAR, _FAR)
    with np.errstate(all="ignore"):
        z, z_lo = two_prod(-xc, _INV_SQRT2[0])
        z_lo = z_lo - xc * _INV_SQRT2[1]
        erfc = np.asarray(_erfc(z), np.float64) - z_lo * _TWO_OVER_SQRT_PI * np.exp(-z * z)
        near = 0.5 * x * erfc
        sq, sq_lo = two_prod(xc, xc)  # x**2 = sq + sq_lo
        r = 1 / sq
        term, tail = np.ones_like(r), np.zeros_like(r)
        for n in range(1, 16):  # sum - 1, so that its rounding errors are relative to ~r
            term = -term * (2 * n - 1) * r
            tail = tail + term
        tail = tail - sq_lo / 2  # exp(-x**2/2) = exp(-sq/2) (1 - sq_lo/2)
        c = _INV_SQRT_2PI[0] + (_INV_SQRT_2PI[0] * tail + _INV_SQRT_2PI[1])
        far = -c * np.exp(-sq / 2)
    return np.where(x == -np.inf, -0.0, np.where(x < -14, far, near))
