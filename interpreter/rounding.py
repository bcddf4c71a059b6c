"""Correctly rounded conversions (NUM-4, RNG-4).

numpy rounds float64 to float32/float16 once, but ml_dtypes converts float64 and wide
integers to bfloat16/float8 through float32 (rounding twice: 1 + 2**-8 + 2**-30 becomes
bfloat16 1.0 instead of 1.0078125). ``round_to`` rounds once: it goes through float32
*rounded to odd*, which keeps a sticky bit so the final rounding is exact.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from .dtype import DType

__all__ = ["round_f64", "round_to"]

Array = Any

#: ml_dtypes targets: they round float64 and wide-integer sources twice (via float32).
_ML = frozenset(np.dtype(t) for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                      ml_dtypes.float8_e5m2))


def _f64_odd(x: Array) -> Array:
    """Integers -> float64, rounded to odd above 2**53 (a sticky bit keeps the lost bits)."""
    x = np.asarray(x)
    if x.dtype.itemsize < 8:
        return x.astype(np.float64)  # exact
    neg = x < 0
    u = x.astype(np.uint64)
    mag = np.where(neg, np.negative(u), u)  # |x| (also for the most negative int64)
    low = mag & np.uint64(0x7FF)
    odd = (mag & ~np.uint64(0x7FF)) | ((low != 0).astype(np.uint64) << np.uint64(11))
    f = np.where(mag >= np.uint64(2**53), odd, mag).astype(np.float64)  # exact
    return np.where(neg, -f, f)


def _f32_odd(x: Array) -> Array:
    """float64 -> float32 rounded to odd, so a second rounding to <= 22 bits is exact-once."""
    x = np.asarray(x, np.float64)
    f = np.asarray(x.astype(np.float32))
    bits = f.view(np.uint32).copy()
    back = f.astype(np.float64)
    finite = np.isfinite(f)
    bits[finite & (np.abs(back) > np.abs(x))] -= np.uint32(1)  # truncate toward zero
    bits[finite & (back != x)] |= np.uint32(1)  # then set the sticky (odd) bit
    return bits.view(np.float32)


def round_to(x: Array, target: np.dtype[Any]) -> Array:
    """``x`` converted to ``target`` with one round-to-nearest-even (NUM-4)."""
    x = np.asarray(x)
    src, target = x.dtype, np.dtype(target)
    if target.kind == "b":
        return np.not_equal(x, 0)
    if src in _ML:
        x = x.astype(np.float32)  # exact
    elif target in _ML and (src == np.float64 or (src.kind in "iu" and src.itemsize >= 4)):
        x = _f32_odd(_f64_odd(x) if src.kind in "iu" else x)
    elif target in _ML and src.kind in "biu":
        x = x.astype(np.float32)  # exact
    return x.astype(target)




def round_f64(x: Any, dtype: DType) -> np.ndarray:
    """float64 values rounded once, to nearest even, to a float ``dtype``."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(round_to(np.asarray(x, np.float64), dtype.to_numpy()))
