"""A seeded numpy implementation of ``ArgSource`` (for unit tests and quick fuzzing).

The conformance suite implements the same protocol on top of hypothesis (shrinking).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import numpy as np

from ..dtype import DType

T = TypeVar("T")

__all__ = ["HALFWAY_RATE", "RandomArgSource", "halfway_values", "special_values"]


def special_values(dtype: DType) -> np.ndarray:
    """Values every test should meet: NaN, +-inf, +-0, subnormals, extremes, integer min/max."""
    np_dtype = dtype.to_numpy()
    if dtype is DType.bool:
        return np.array([False, True])
    if dtype.is_integral():
        info = np.iinfo(np_dtype)
        return np.array([info.min, info.max, 0, 1, info.min + 1, info.max - 1], dtype=np_dtype)
    import ml_dtypes

    fi = ml_dtypes.finfo(np_dtype)
    vals = [0.0, -0.0, 1.0, -1.0, float(fi.max), -float(fi.max), float(fi.smallest_normal),
            float(fi.smallest_subnormal), -float(fi.smallest_subnormal), 0.5, float("nan")]
    if dtype is not DType.float8_e4m3fn:  # e4m3fn has no infinities
        vals += [float("inf"), float("-inf")]
    return np.array(vals, dtype=np.float64).astype(np_dtype)


#: Magnitudes of the exact ties ``halfway_values`` draws from (those a dtype holds exactly).
_HALFWAY = (0.5, 1.5, 2.5, 3.5, 4.5, 6.5, 10.5, 100.5, 1000.5, 2.0**20 + 0.5, 2.0**40 + 0.5)
#: Share of the elements of a ``"halfway"`` array that are exact ties.
HALFWAY_RATE = 0.75


def halfway_values(dtype: DType) -> np.ndarray:
    """Exact ties x.5 (rounding up and down equally far) of several magnitudes, both signs."""
    np_dtype = dtype.to_numpy()
    with np.errstate(over="ignore"):
        vals = [v for v in _HALFWAY if float(np.array(v).astype(np_dtype)) == v]
    return np.array(vals + [-v for v in vals], dtype=np.float64).astype(np_dtype)


class RandomArgSource:
    """``ArgSource`` over ``numpy.random.Generator`` (reproducible with a seed)."""

    def __init__(self, seed: int = 0, special_rate: float = 0.2) -> None:
        self.rng = np.random.default_rng(seed)
        self.special_rate = special_rate

    def dtype(self, allowed: Iterable[DType], data: bool = False) -> DType:
        options = sorted(allowed, key=lambda d: d.value)
        return options[int(self.rng.integers(len(options)))]

    def shape(self, min_rank: int = 0, max_rank: int = 4, min_side: int = 0,
              max_side: int = 5) -> tuple[int, ...]:
        rank = int(self.rng.integers(min_rank, max_rank + 1))
        return tuple(int(self.rng.integers(min_side, max_side + 1)) for _ in range(rank))

    def integer(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))

    def choice(self, options: Sequence[T]) -> T:
        return options[int(self.rng.integers(len(options)))]

    def boolean(self) -> bool:
        return bool(self.rng.integers(2))

    def values(self, dtype: DType, shape: tuple[int, ...], kind: str = "any") -> np.ndarray:
        if kind == "halfway":  # "any", most elements replaced by exact ties (floats only)
            out = self.values(dtype, shape, "any")
            if dtype.is_float() and out.size:
                mask = self.rng.random(out.shape) < HALFWAY_RATE
                out[mask] = self.rng.choice(halfway_values(dtype), size=int(mask.sum()))
            return out
        np_dtype = dtype.to_numpy()
        n = math.prod(shape)
        if kind.startswith(("index:", "uindex:")):
            bound = int(kind.split(":")[1])
            lo = -bound if kind.startswith("index:") else 0
            return self.rng.integers(lo, max(bound, lo + 1), size=shape).astype(np_dtype)
        if dtype is DType.bool:
            return self.rng.integers(0, 2, size=shape).astype(bool)
        if dtype.is_integral():
            info = np.iinfo(np_dtype)
            lo, hi = (1, 100) if kind == "positive" else (-100, 100)
            if kind == "small":
                lo, hi = -4, 4
            lo = max(lo, int(info.min))
            data: Any = self.rng.integers(lo, hi + 1, size=n)
            if kind == "nonzero":
                data[data == 0] = 1
            out = data.astype(np_dtype)
        else:
            scale = 4.0 if kind == "small" else 100.0
            data = self.rng.uniform(-scale, scale, size=n)
            if kind == "positive":
                data = np.abs(data) + 0.5
            out = data.astype(np_dtype)
            if kind == "nonzero":
                out[out == 0] = 1
        if kind == "any" and n:
            specials = special_values(dtype)
            mask = self.rng.random(n) < self.special_rate
            out[mask] = self.rng.choice(specials, size=int(mask.sum()))
        return out.reshape(shape)
