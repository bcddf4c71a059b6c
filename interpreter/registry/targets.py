"""Index vectors, scatter targets and the combination of duplicate targets: the pieces the
gather and scatter ops of ``registry/indexing.py`` share (spec/ops/scatter_add.md ...).

Kernels compute in the namespace of their operands (``xp``: numpy, or CuPy on a GPU,
``interpreter/arrays.py``); the ``host_*`` functions feed the unspecified masks and the
REDUCE-6 bounds, which the suite evaluates on the host (numpy only).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import arrays
from .reduction import float_info, widen

__all__ = [
    "COMBINE",
    "axis_targets",
    "combine_at",
    "host_targets",
    "in_range",
    "index_columns",
    "nd_targets",
    "segment_totals",
]

Array = Any  # a numpy array, or a CuPy array on a GPU
Combine = Callable[[Any, Array, Array], Array]


def _add(xp: Any, a: Array, b: Array) -> Array:
    return a + b


def _mul(xp: Any, a: Array, b: Array) -> Array:
    return a * b


def _max(xp: Any, a: Array, b: Array) -> Array:
    return xp.maximum(a, b)  # NaN propagates (NUM-8)


def _min(xp: Any, a: Array, b: Array) -> Array:
    return xp.minimum(a, b)


#: The scatter reductions: how two values for one target combine, by reduction kind.
COMBINE: dict[str, Combine] = {"sum": _add, "prod": _mul, "maximum": _max, "minimum": _min}


# -- index vectors ---------------------------------------------------------------------------
def index_columns(indices: Array, dims: Sequence[int]) -> tuple[list[Array], Array]:
    """The last axis of ``indices`` as one int64 array per indexed axis of sizes ``dims``
    (negative components count from the end) and where a whole vector is in range."""
    xp = arrays.namespace(indices)
    cols: list[Array] = []
    valid = xp.full(indices.shape[:-1], True)
    for j, d in enumerate(dims):
        c = indices[..., j].astype(np.int64)
        c = xp.where(c < 0, c + d, c)
        valid = valid & (c >= 0) & (c < d)
        cols.append(c)
    return cols, valid


def in_range(cols: list[Array], dims: Sequence[int]) -> list[Array]:
    """Each column clipped into its axis: where the result is unspecified anyway, the
    reference reads an element of the axis (an empty axis is never read)."""
    xp = arrays.namespace(cols[0]) if cols else np
    return [xp.clip(c, 0, max(d - 1, 0)) for c, d in zip(cols, dims, strict=True)]


def _rows(cols: list[Array], dims: Sequence[int], shape: tuple[int, ...], xp: Any) -> Array:
    """The row-major offset of each index vector into an array of shape ``dims``."""
    rows = xp.zeros(shape, np.int64)
    for c, d in zip(cols, dims, strict=True):
        rows = rows * d + c
    return rows


# -- scatter targets: flat element offsets into x, and the update element for each ---------
def axis_targets(shape: tuple[int, ...], updates: Array, indices: Array, axis: int
                 ) -> tuple[Array, Array]:
    """``scatter``-style: position ``p`` of ``indices`` writes ``x[q]`` with ``q = p`` but
    ``q[axis] = indices[p]``. Returns the flat targets and updates of the in-range writes,
    in row-major order of ``p``."""
    xp = arrays.namespace(indices)
    axis %= len(shape)
    (col,), valid = index_columns(indices[..., None], (shape[axis],))
    coords: list[Any] = list(xp.indices(indices.shape))
    coords[axis] = col
    flat = xp.ravel_multi_index(tuple(c[valid] for c in coords), shape)
    return flat.astype(np.int64), updates[valid]


def nd_targets(shape: tuple[int, ...], updates: Array, indices: Array
               ) -> tuple[Array, Array]:
    """``scatter_nd``-style: vector ``indices[i, :]`` (length k) writes the slice
    ``x[v_0, ..., v_{k-1}, ...]`` with ``updates[i, ...]``. Returns the flat targets and
    updates of the in-range vectors, in row-major order of ``i`` then of the slice."""
    xp = arrays.namespace(indices)
    k = indices.shape[-1]
    count = math.prod(indices.shape[:-1])
    inner = math.prod(shape[k:])
    cols, valid = index_columns(indices, shape[:k])
    rows = _rows(cols, shape[:k], indices.shape[:-1], xp)[valid]
    flat = rows[:, None] * inner + xp.arange(inner)[None, :]
    return flat.reshape(-1), updates.reshape(count, inner)[valid.reshape(-1)].reshape(-1)


# -- combining duplicate targets ---------------------------------------------------------------
def segment_totals(keys: Array, values: Array, combine: Combine) -> tuple[Array, Array]:
    """Each distinct key once, with the combination of all its values: a stable sort by key,
    then a segmented inclusive scan in log2(n) vectorized steps (at step ``s`` a value
    takes in the one ``s`` places before it, when that one has the same key); the last value
    of each run of equal keys holds the run's combination."""
    xp = arrays.namespace(keys)
    order = xp.argsort(keys, kind="stable")
    k, v = keys[order], values[order]
    step = 1
    while step < k.size:
        same = k[step:] == k[:-step]
        v[step:] = xp.where(same, combine(xp, v[:-step], v[step:]), v[step:])
        step *= 2
    last = xp.concatenate([k[1:] != k[:-1], xp.full(min(k.size, 1), True)])
    return k[last], v[last]


def combine_at(x: Array, targets: Array, values: Array, combine: Combine) -> Array:
    """A copy of ``x`` whose element ``t`` (flat) is ``x[t]`` combined with every value
    aimed at it; 16-bit floats are combined in float32 and rounded once (REDUCE-2)."""
    xp = arrays.namespace(x)
    out = widen(x).copy()
    if targets.size:
        t, total = segment_totals(targets, widen(values), combine)
        flat = out.reshape(-1)
        flat[t] = combine(xp, flat[t], total)
    return out.astype(x.dtype)


# -- the host side: per-element aggregates for masks and bounds ----------------------------------
def host_targets(operands: Sequence[np.ndarray], attrs: Any) -> tuple[np.ndarray, np.ndarray]:
    """The (targets, updates) of a scatter call ``(x, updates, indices)`` on the host: the
    axis form when the call has an ``axis`` attribute, else the nd form."""
    x, updates, indices = (np.asarray(a) for a in operands[:3])
    if "axis" in attrs:
        return axis_targets(x.shape, updates, indices, attrs["axis"])
    return nd_targets(x.shape, updates, indices)


def finite_abs(x: Any) -> np.ndarray:
    """|x| in float64, non-finite elements as 0 (they propagate deterministically)."""
    a = np.asarray(x, dtype=np.float64)
    return np.where(np.isfinite(a), np.abs(a), 0.0)


def max_of(dtype: Any) -> float:
    return float(float_info(dtype).max)
