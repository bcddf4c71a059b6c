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

__all__ = ["EDGE_RATE", "HALFWAY_RATE", "RandomArgSource", "cast_edge_values", "halfway_values",
           "nan_payloads",
           "special_values"]


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


def nan_payloads(dtype: DType) -> np.ndarray:
    """Quiet NaNs of a float ``dtype`` with other bytes than ``special_values``' NaN: the sign
    bit set, the lowest payload bit set, both (DT-6); the canonical NaN is not among them.
    Empty for non-floats; ``float8_e4m3fn`` has only the sign variant."""
    if not dtype.is_float():
        return np.array([], dtype.to_numpy())
    np_dtype = np.dtype(dtype.to_numpy())
    width = f"u{np_dtype.itemsize}"
    canon = int(np.array(float("nan"), np.float64).astype(np_dtype).view(width))
    sign = 1 << (8 * np_dtype.itemsize - 1)
    bits = sorted({b for b in (canon | 1, canon | sign, canon | sign | 1) if b != canon})
    out = np.array(bits, width).view(np_dtype)
    with np.errstate(all="ignore"):
        return out[np.isnan(out.astype(np.float32))]


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


#: Share of the elements of an ``"edges:<target>"`` array that are cast edge values.
EDGE_RATE = 0.75


def _near(source: DType, vals: Iterable[float]) -> list[float]:
    """``vals`` rounded into ``source`` (a float dtype) and their neighbours there: the
    values just inside and just outside each boundary in the source's precision."""
    np_dtype = source.to_numpy()
    out: list[float] = []
    with np.errstate(all="ignore"):
        for v in vals:
            x = np.array([v], np.float64).astype(np_dtype)
            if not np.isfinite(x.astype(np.float64)[0]):
                continue
            for to in (np.inf, -np.inf):
                out.append(float(np.nextafter(x, np.array([to], np_dtype)).astype(np.float64)[0]))
            out.append(float(x.astype(np.float64)[0]))
    return out


def cast_edge_values(source: DType, target: DType) -> np.ndarray:
    """The hard inputs of ``cast`` from ``source`` to ``target`` (NUM-20), in ``source``:
    the source's special values; exact ties x.5 (integer targets); the target's boundaries
    max, max+1, min, min-1 and, for unsigned targets, 2**(bits-1) - 1, 2**(bits-1),
    2**(bits-1) + 1 and 2**bits; for float targets their max, the overflow midpoint
    (max + ulp/2), the smallest normal and subnormal and half of it; each also just inside
    and just outside in the source's precision. Values the source cannot hold are left out."""
    src_np = source.to_numpy()
    base = [float(v) for v in special_values(source).astype(np.float64)] \
        if source is not DType.bool else [0.0, 1.0]
    edges: list[float] = []
    if target.is_integral():
        info = np.iinfo(target.to_numpy())
        lo, hi = int(info.min), int(info.max)
        edges = [hi, hi + 1, lo, lo - 1, hi - 1, lo + 1, hi + 0.5, lo - 0.5]
        if lo == 0:
            half = 2 ** (info.bits - 1)
            edges += [half - 1, half, half + 1, half + 0.5, 2.0 ** info.bits, half * 1.5]
    elif target.is_float():
        import ml_dtypes

        fi = ml_dtypes.finfo(target.to_numpy())
        mx = float(fi.max)
        spacing = math.ldexp(1.0, math.frexp(mx)[1] - 1 - int(fi.nmant))  # ulp at max
        edges = [mx, -mx, mx + spacing / 2, -(mx + spacing / 2), mx + spacing,
                 float(fi.smallest_normal), float(fi.smallest_subnormal),
                 float(fi.smallest_subnormal) / 2, 1.0 + float(fi.eps) / 2,
                 1.0 + float(fi.eps) * 1.5]
    if source.is_float():
        vals = base + _near(source, edges) + [float(v) for v in halfway_values(source)]
        return _distinct(vals, src_np)
    if source.is_integral():
        info = np.iinfo(src_np)
        ints = {int(v) for v in special_values(source)} | {
            int(e) for e in edges if float(e).is_integer() and info.min <= int(e) <= info.max}
        return np.array(sorted(ints), dtype=src_np)
    return np.array([False, True])


def _distinct(vals: list[float], np_dtype: Any) -> np.ndarray:
    """The distinct values of ``vals`` in ``np_dtype`` (one NaN, -0.0 kept beside 0.0)."""
    with np.errstate(all="ignore"):
        arr = np.array(vals, np.float64).astype(np_dtype)
    seen: dict[tuple[bool, bytes], Any] = {}
    for v in arr:
        key = (bool(np.isnan(v.astype(np.float64))), b"" if np.isnan(v.astype(np.float64))
               else v.tobytes())
        seen.setdefault(key, v)
    return np.array(list(seen.values()), dtype=np_dtype)


class RandomArgSource:
    """``ArgSource`` over ``numpy.random.Generator`` (reproducible with a seed)."""

    def __init__(self, seed: int = 0, special_rate: float = 0.2) -> None:
        self.rng = np.random.default_rng(seed)
        self.special_rate = special_rate

    def dtype(self, allowed: Iterable[DType], data: bool = False) -> DType:
        options = sorted(allowed, key=lambda d: d.value)
        return options[int(self.rng.integers(len(options)))]

    def shape(self, min_rank: int = 0, max_rank: int = 4, min_side: int = 0,
              max_side: int = 5, rest: int = 1) -> tuple[int, ...]:
        rank = int(self.rng.integers(min_rank, max_rank + 1))
        return tuple(int(self.rng.integers(min_side, max_side + 1)) for _ in range(rank))

    def axis_size(self, lo: int, hi: int, rest: int = 1) -> int:
        return self.integer(lo, hi)

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
        if kind.startswith("edges:"):  # "any", most elements cast edge values (NUM-20)
            out = self.values(dtype, shape, "any")
            edges = cast_edge_values(dtype, DType(kind.split(":", 1)[1]))
            if out.size and edges.size:
                mask = self.rng.random(out.shape) < EDGE_RATE
                out[mask] = self.rng.choice(edges, size=int(mask.sum()))
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
            _vary_nans(out, dtype)
        return out.reshape(shape)


def _vary_nans(out: np.ndarray, dtype: DType) -> None:
    """Give the NaNs of ``out`` (1-d) payload and sign variety in place: the k-th NaN gets
    ``nan_payloads(dtype)[(k + 1) % (n + 1) - 1]``, every (n + 1)-th stays canonical (so an
    array's first NaN has other bytes). Positional, so it draws nothing from the generator
    (the other values stay as they were)."""
    if not dtype.is_float():
        return
    variants = nan_payloads(dtype)
    with np.errstate(all="ignore"):
        where = np.flatnonzero(np.isnan(out.astype(np.float32)))
    if not variants.size or not where.size:
        return
    pick = (np.arange(where.size) + 1) % (variants.size + 1)
    keep = pick > 0
    out[where[keep]] = variants[pick[keep] - 1]
