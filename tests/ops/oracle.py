"""Arbitrary-precision oracle for the float kernels (NUM-14): mpmath values rounded correctly.

``exact(op, xs, attrs)`` is the mathematical value of a float op at float64-exact operands
(mpmath at 256 bits, far beyond the 2p + 2 bits that make one rounding to any float dtype
correct); ``correctly_rounded(op, arrays, attrs)`` rounds it once, to nearest even, from the
mpf directly (no detour through float64, so no double rounding) to the operands' dtype.
Special operands (NaN, infinities, zeros, domain errors) follow the op pages' limits.
Values are cached per (op, attrs, operand bits): narrow dtypes reuse the float64 work.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import ml_dtypes
import mpmath
import numpy as np
from mpmath import mp, mpf

__all__ = ["ORACLE_OPS", "correctly_rounded", "exact", "round_mpf"]

mp.prec = 256

Value = Any  # mpf, or a float for special results (NaN, inf, signed zero)


#: beyond |x| = 64 both gelu forms differ from x (x > 0) or 0 (x < 0) by less than
#: 2**-1000 relative: a stand-in that close rounds like the exact value in every dtype
#: (mpmath's erfc and exp overflow on the exact expressions there).
_FAR, _TINY = 64, mpf(2) ** -2000


def _gelu_tanh(x: mpf) -> mpf:
    if abs(x) > _FAR:
        return -_TINY if x < 0 else x * (1 - _TINY)
    u = mpmath.sqrt(2 / mpmath.pi) * (x + mpf("0.044715") * x**3)
    return x / (1 + mpmath.exp(-2 * u))


def _gelu(x: mpf) -> mpf:
    if abs(x) > _FAR:
        return -_TINY if x < 0 else x * (1 - _TINY)
    return x * mpmath.erfc(-x / mpmath.sqrt(2)) / 2


def _gelu_quick(x: mpf) -> mpf:
    """``x * sigmoid(1.702 x)`` with the decimal constant (beyond |x| = 1000 as the others)."""
    if abs(x) > 1000:
        return -_TINY if x < 0 else x * (1 - _TINY)
    return x / (1 + mpmath.exp(-mpf("1.702") * x))


_GELU_FORMS = {"tanh": _gelu_tanh, "quick": _gelu_quick}

#: op name -> mpmath function of (operands..., attrs)
ORACLE_OPS: dict[str, Callable[..., mpf]] = {
    "exp": lambda x, a: mpmath.exp(x),
    "log": lambda x, a: mpmath.log(x),
    "log1p": lambda x, a: mpmath.log1p(x),
    "sqrt": lambda x, a: mpmath.sqrt(x),
    "rsqrt": lambda x, a: 1 / mpmath.sqrt(x),
    "tanh": lambda x, a: mpmath.tanh(x),
    "sin": lambda x, a: mpmath.sin(x),
    "cos": lambda x, a: mpmath.cos(x),
    "erf": lambda x, a: mpmath.erf(x),
    "sigmoid": lambda x, a: 1 / (1 + mpmath.exp(-x)),
    "silu": lambda x, a: x / (1 + mpmath.exp(-x)),
    "gelu": lambda x, a: _GELU_FORMS.get(a.get("approximate", "none"), _gelu)(x),
    "atanh": lambda x, a: mpmath.atanh(x),
    "div": lambda x, y, a: x / y,
    "pow": lambda x, y, a: mpmath.power(x, y),
}

_ODD = {"sin", "tanh", "erf", "log1p", "sqrt", "silu", "gelu", "atanh"}  # f(±0) = ±0
_INF = math.inf


def _special(name: str, xs: tuple[float, ...]) -> float | None:
    """The result where an operand is not finite, zero, or outside the domain; else None."""
    x = xs[0]
    if any(math.isnan(v) for v in xs):
        return math.nan
    if name == "div":
        y = xs[1]
        if (math.isinf(x) and math.isinf(y)) or (x == 0 and y == 0):
            return math.nan
        if y == 0 or math.isinf(x):
            return math.copysign(_INF, x) * math.copysign(1.0, y)
        if math.isinf(y) or x == 0:
            return math.copysign(0.0, x) * math.copysign(1.0, y)
        return None
    if name == "pow":  # finite operands, base > 0 or an integer exponent (C pow elsewhere)
        y = xs[1]
        if y == 0:
            return 1.0
        if x == 0:
            odd = y == int(y) and int(y) % 2 == 1
            return math.copysign(_INF if y < 0 else 0.0, x if odd else 1.0)
        return math.nan if x < 0 and y != int(y) else None
    limits = {  # (at -inf, at +inf)
        "exp": (0.0, _INF), "log": (math.nan, _INF), "log1p": (math.nan, _INF),
        "sqrt": (math.nan, _INF), "rsqrt": (math.nan, 0.0), "tanh": (-1.0, 1.0),
        "sin": (math.nan, math.nan), "cos": (math.nan, math.nan), "erf": (-1.0, 1.0),
        "sigmoid": (0.0, 1.0), "silu": (-0.0, _INF), "gelu": (-0.0, _INF),
        "atanh": (math.nan, math.nan),
    }
    if math.isinf(x):
        return limits[name][x > 0]
    if x == 0:
        if name in _ODD:
            return x
        if name == "log":
            return -_INF
        if name == "rsqrt":
            return math.copysign(_INF, x)
    if (name in ("log", "sqrt", "rsqrt") and x < 0) or (name == "log1p" and x < -1):
        return math.nan
    if name == "log1p" and x == -1:
        return -_INF
    if name == "atanh" and abs(x) >= 1:
        return math.copysign(_INF, x) if abs(x) == 1 else math.nan
    return None


@cache
def _exact_cached(name: str, attrs: tuple[tuple[str, Any], ...], key: tuple[str, ...]
                  ) -> Value:
    xs = tuple(float.fromhex(k) for k in key)  # keyed by hex: -0.0 and 0.0 are equal floats
    special = _special(name, xs)
    if special is not None:
        return special
    return ORACLE_OPS[name](*(mpf(v) for v in xs), dict(attrs))


def exact(name: str, xs: Sequence[float], attrs: dict[str, Any] | None = None) -> Value:
    """The exact value of op ``name`` at the float64-exact operands ``xs`` (mpf or float)."""
    key = tuple(float(v).hex() for v in xs)
    return _exact_cached(name, tuple(sorted((attrs or {}).items())), key)


@cache
def _format(dtype: np.dtype[Any]) -> tuple[int, int, float]:
    """(precision p with the implicit bit, smallest normal exponent, largest finite)."""
    info = ml_dtypes.finfo(dtype)
    return int(info.nmant) + 1, int(info.minexp), float(info.max)


def round_mpf(v: Value, dtype: np.dtype[Any]) -> float:
    """``v`` rounded once, to nearest even, to ``dtype``, as the float64 holding that value
    (exactly: every value of a float dtype up to 64 bits is a float64)."""
    if isinstance(v, float):
        return v
    p, emin, fmax = _format(np.dtype(dtype))
    if v == 0:
        return 0.0
    a = abs(v)
    _, e = mpmath.frexp(a)  # a = m * 2**e, 0.5 <= m < 1
    q = max(int(e) - p, emin - p + 1)  # exponent of the spacing at a (subnormals: fixed)
    n = mpmath.ldexp(a, -q)
    f = mpmath.floor(n)
    r = n - f
    if r > 0.5 or (r == 0.5 and int(f) % 2 == 1):
        f += 1
    out = float(mpmath.ldexp(f, q))
    out = _INF if out > fmax else out
    return -out if v < 0 else out


def correctly_rounded(name: str, operands: Sequence[np.ndarray], attrs: dict[str, Any]
                      ) -> np.ndarray:
    """The correctly rounded result of op ``name`` on (broadcast) ``operands``, in the
    dtype of operand 0."""
    arrays = np.broadcast_arrays(*(np.asarray(a) for a in operands))
    dtype = arrays[0].dtype
    with np.errstate(invalid="ignore"):  # NaN operands of narrow floats
        flat = [np.asarray(a, np.float64).reshape(-1) for a in arrays]
    out = np.array([round_mpf(exact(name, [f[i] for f in flat], attrs), dtype)
                    for i in range(flat[0].size)], np.float64)
    with np.errstate(all="ignore"):
        return np.asarray(out.reshape(arrays[0].shape).astype(dtype))
