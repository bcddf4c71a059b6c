"""Random graph-building functions: counter-based uniform and normal (spec/random.md)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...dtype import DType
from ...errors import GraphTypeError
from ...registry.dtypesets import FLOATS
from ...rounding import round_f64
from ..core import TensorValue
from .staging import stage1


def _seed(op: str, seed: TensorValue | int) -> TensorValue:
    """The seed operand; a Python int becomes a uint64 constant of shape [1] (RNG-6)."""
    if isinstance(seed, TensorValue):
        return seed
    if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2**64:
        from .creation import constant

        return constant(np.array([seed], np.uint64))
    raise GraphTypeError(f"{op}: seed must be a uint64 tensor of shape [1] or an int in "
                         f"[0, 2**64), got {seed!r} [{op}.C1]")


def _rounded(v: float, dtype: DType) -> float:
    """A finite bound rounded to nearest in ``dtype``; anything else is left to the type rule."""
    if (isinstance(v, int | float) and not isinstance(v, bool) and dtype in FLOATS
            and abs(v) < 1e308):
        return float(round_f64(np.array([float(v)]), dtype)[0])
    return v


def uniform(seed: TensorValue | int, shape: Sequence[int], low: float = 0.0,
            high: float = 1.0, dtype: DType = DType.float32) -> TensorValue:
    """Uniform values in ``[low, high)``; the bounds are first rounded to ``dtype`` (RNG-7)."""
    s = _seed("random_uniform", seed)
    lo, hi = _rounded(low, dtype), _rounded(high, dtype)
    return stage1("random_uniform", (s,), {"shape": tuple(shape), "dtype": dtype,
                                           "low": lo, "high": hi})


def normal(seed: TensorValue | int, shape: Sequence[int], mean: float = 0.0, std: float = 1.0,
           dtype: DType = DType.float32) -> TensorValue:
    """Normal values by Box-Muller from the same Philox stream (RNG-5)."""
    s = _seed("random_normal", seed)
    return stage1("random_normal", (s,), {"shape": tuple(shape), "dtype": dtype,
                                          "mean": mean, "std": std})


gaussian = normal

__all__ = [
    "gaussian",
    "normal",
    "uniform",
]
