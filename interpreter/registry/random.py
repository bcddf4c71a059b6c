"""Counter-based random ops: random_uniform, random_normal (spec/random.md, RNG-1..8).

Philox4x32-10 keyed by the 64-bit seed; element ``i`` (row-major) uses counter ``(i, 0)``.
Everything is vectorised uint64 numpy arithmetic (32x32-bit products fit in 64 bits).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..dtype import DType
from ..errors import GraphTypeError
from ..rounding import round_f64
from ..types import TensorType, ValueType
from .core import EXACT, ArgSource, Attrs, OpCall, OpDef, register, ulp
from .dtypesets import FLOATS

__all__ = ["philox4x32_10", "random_bits", "uniform_bits_to_unit"]

M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = np.uint64(0xFFFFFFFF)
SEED = frozenset({DType.uint64})


def philox4x32_10(counter: Sequence[np.ndarray], key: tuple[int, int]
                  ) -> tuple[np.ndarray, ...]:
    """Philox4x32-10 (RNG-1): four uint64 arrays holding 32-bit counter words -> four words."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) for c in counter)
    k0, k1 = key[0] & 0xFFFFFFFF, key[1] & 0xFFFFFFFF
    for r in range(10):
        if r:  # bump the key between rounds
            k0, k1 = (k0 + W0) & 0xFFFFFFFF, (k1 + W1) & 0xFFFFFFFF
        p0, p1 = M0 * c0, M1 * c2  # exact 64-bit products
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & MASK32,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & MASK32)
    return c0, c1, c2, c3


def random_bits(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Words x0, x1 of Philox for elements 0..n-1 under ``seed`` (RNG-2)."""
    i = np.arange(n, dtype=np.uint64)
    zero = np.zeros(n, np.uint64)
    x0, x1, _, _ = philox4x32_10((i & MASK32, i >> np.uint64(32), zero, zero),
                                 (seed & 0xFFFFFFFF, seed >> 32))
    return x0, x1


def uniform_bits_to_unit(x0: np.ndarray, x1: np.ndarray, dtype: DType) -> np.ndarray:
    """The float64 value u in [0, 1) of RNG-3 (exact: at most 53 significant bits)."""
    if dtype is DType.float64:
        return ((x0 >> np.uint64(5)) * np.uint64(1 << 26) + (x1 >> np.uint64(6))
                ).astype(np.float64) * 2.0**-53
    return (x0 >> np.uint64(8)).astype(np.float64) * 2.0**-24


def largest_below(high: float, dtype: DType) -> float:
    """The largest value of ``dtype`` strictly below ``high`` (RNG-4)."""
    np_dtype = dtype.to_numpy()
    h = round_f64(np.array([high]), dtype)
    if float(h[0]) < high:
        return float(h[0])
    bits = h.view(f"u{np_dtype.itemsize}").copy()
    sign = np.array([1 << (8 * np_dtype.itemsize - 1)], bits.dtype)
    if float(h[0]) == 0.0:
        bits = sign | np.array([1], bits.dtype)  # -smallest subnormal
    elif float(h[0]) > 0:
        bits -= np.array([1], bits.dtype)
    else:
        bits += np.array([1], bits.dtype)
    return float(bits.view(np_dtype)[0])


# -- type rules -----------------------------------------------------------------------------
def _check_common(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> TensorType:
    seed = op.check_tensor(types, 0)
    if seed.shape != (1,):
        op.fail(types, f"{op.name}.C1", f"seed must be a uint64 tensor of shape [1], got "
                f"shape {list(seed.shape)}")
    dtype, shape = attrs.get("dtype"), attrs.get("shape")
    if not isinstance(dtype, DType):
        op.fail(types, f"{op.name}.C2", f"attribute dtype must be a DType, got {dtype!r}",
                GraphTypeError)
    op.check_dtype(types, dtype, FLOATS, what="result")
    if not isinstance(shape, tuple) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        op.fail(types, f"{op.name}.C2", f"attribute shape must be a tuple of ints >= 0, got "
                f"{shape!r}")
    return TensorType(dtype, shape, seed.device)


def _finite_float(op: OpDef, types: Sequence[ValueType], attrs: Attrs, name: str) -> float:
    v = attrs.get(name)
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
        op.fail(types, f"{op.name}.C3", f"attribute {name}={v!r} must be a finite number")
    return float(v)


def _uniform_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                   ) -> tuple[ValueType, ...]:
    result = _check_common(op, types, attrs)
    low, high = (_finite_float(op, types, attrs, n) for n in ("low", "high"))
    if not low < high:
        op.fail(types, "random_uniform.C3", f"need low < high, got low={low!r}, high={high!r}")
    for name, v in (("low", low), ("high", high)):
        if float(round_f64(np.array(v), result.dtype)) != v:
            op.fail(types, "random_uniform.C3", f"attribute {name}={v!r} is not exactly "
                    f"representable in {result.dtype.value}; round it first")
    return (result,)


def _normal_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                  ) -> tuple[ValueType, ...]:
    result = _check_common(op, types, attrs)
    _finite_float(op, types, attrs, "mean")
    if _finite_float(op, types, attrs, "std") < 0:
        op.fail(types, "random_normal.C3", f"attribute std={attrs['std']!r} must be >= 0")
    return (result,)


# -- kernels ----------------------------------------------------------------------------------
def _uniform(seed: np.ndarray, *, shape: tuple[int, ...], dtype: DType, low: float,
             high: float) -> np.ndarray:
    n = math.prod(shape)
    u = uniform_bits_to_unit(*random_bits(int(seed[0]), n), dtype)
    r = round_f64(low + (high - low) * u, dtype)  # separate roundings (numpy has no FMA)
    r[r.astype(np.float64) >= high] = largest_below(high, dtype)
    return r.reshape(shape)


TWO_PI = 2.0 * math.pi  # 6.283185307179586, the float64 nearest 2*pi


def _normal_z(seed: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The float64 standard normal ``z`` of RNG-5, one per element."""
    x0, x1 = random_bits(int(seed[0]), math.prod(shape))
    u1 = ((x0 >> np.uint64(8)) + np.uint64(1)).astype(np.float64) * 2.0**-24
    u2 = (x1 >> np.uint64(8)).astype(np.float64) * 2.0**-24
    return (np.sqrt(-2.0 * np.log(u1)) * np.cos(TWO_PI * u2)).reshape(shape)


def _normal(seed: np.ndarray, *, shape: tuple[int, ...], dtype: DType, mean: float,
            std: float) -> np.ndarray:
    return round_f64(mean + std * _normal_z(seed, shape), dtype).reshape(shape)


def _std_z(ops: Sequence[np.ndarray], attrs: Attrs, expected: np.ndarray) -> np.ndarray:
    """|std * z|"""
    return np.abs(attrs["std"] * _normal_z(ops[0], attrs["shape"]))


# -- sampling ---------------------------------------------------------------------------------
def _sample_seed(src: ArgSource) -> np.ndarray:
    return np.array([src.choice([0, 1, 42, 2**32, 2**64 - 1, src.integer(0, 2**63 - 1)])],
                    np.uint64)


#: One-ULP ranges ``[largest_below(high), high)``: about half the elements round to
#: ``high`` and take RNG-4's clamp (its three branches: high > 0, < 0, == 0). The sampler's
#: (-3.5, 2.0), (-1.5, 4.0) and (-6.0, -0.75) scale inexactly in float32, so a float32
#: evaluation of RNG-4 (instead of float64) changes about a third of the elements.
ONE_ULP_HIGHS = (1.0, -1.0, 0.0)


def _sample_uniform(src: ArgSource) -> OpCall:
    dtype = src.dtype(FLOATS, data=True)
    low, high = src.choice([(0.0, 1.0), (-1.0, 1.0), (-3.5, 2.0), (10.0, 12.0), (-0.0, 0.5),
                            (-1.5, 4.0), (-6.0, -0.75),
                            *((None, h) for h in ONE_ULP_HIGHS)])
    if low is None:
        low = largest_below(high, dtype)
    return OpCall([_sample_seed(src)], {"shape": src.shape(max_side=4), "dtype": dtype,
                                        "low": low, "high": high})


def _sample_normal(src: ArgSource) -> OpCall:
    mean, std = src.choice([(0.0, 1.0), (1.5, 0.25), (-2.0, 3.0), (0.0, 0.0)])
    return OpCall([_sample_seed(src)], {"shape": src.shape(max_side=4),
                                        "dtype": src.dtype(FLOATS, data=True), "mean": mean,
                                        "std": std})


register(OpDef("random_uniform",
               summary="Philox4x32-10 uniform floats in [low, high) (RNG-3, RNG-4).",
               category="random", operands=("seed",), attrs=("shape", "dtype", "low", "high"),
               infer=_uniform_infer, kernel=_uniform, dtypes=SEED, tolerance=EXACT,
               sample=_sample_uniform, result_dtypes=FLOATS, data_operand=None))
register(OpDef("random_normal", summary="Box-Muller normal floats from Philox4x32-10 (RNG-5).",
               category="random", operands=("seed",), attrs=("shape", "dtype", "mean", "std"),
               infer=_normal_infer, kernel=_normal, dtypes=SEED, tolerance=ulp(4, _std_z),
               sample=_sample_normal, result_dtypes=FLOATS, data_operand=None))

