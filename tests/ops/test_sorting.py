"""argsort and bottom_k against Python's stable ``sorted`` (spec/ops/argsort.md,
bottom_k.md): ties in index order, NaN the largest, -0.0 equal to +0.0."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import interpreter.experimental.functional as F
from interpreter.errors import GraphShapeError, GraphTypeError
from interpreter.graph import ops
from interpreter.testing import assert_same, build, run

from .test_reduction import FLOATS, INTS

NUMERIC = FLOATS + INTS


def key(v: Any) -> tuple[int, float]:
    """Sort key: numbers by value (-0.0 == 0.0), NaN after every number."""
    f = float(np.float64(v))
    return (1, 0.0) if math.isnan(f) else (0, f)


def stable_order(xs: np.ndarray, ascending: bool) -> list[int]:
    """Python's stable sort; descending keeps equal keys in index order too."""
    keys = [key(v) for v in xs]
    if ascending:
        return sorted(range(len(xs)), key=lambda i: keys[i])
    return sorted(range(len(xs)), key=lambda i: (-keys[i][0], -keys[i][1], i))


def vector(rng: np.random.Generator, dtype: np.dtype[Any], n: int) -> np.ndarray:
    """Few distinct values (many ties); floats with NaN, +-inf and both zeros."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        pool = [int(info.min), int(info.max), 0, 1, 2] if dtype.kind == "i" else \
            [0, 1, 2, int(info.max)]
        if dtype.kind == "i":
            pool.append(-1)
        return np.array(pool, dtype)[rng.integers(len(pool), size=n)]
    pool = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -1.5, 2.0]
    return np.array(pool).astype(dtype)[rng.integers(len(pool), size=n)]


@pytest.mark.spec("argsort.C3")
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("ascending", [True, False])
def test_argsort_is_stable_with_nan_largest(dtype: np.dtype[Any], ascending: bool) -> None:
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 7, 40):
        x = vector(rng, dtype, n)
        got = run(lambda x: ops.argsort(x, ascending=ascending), x)
        assert_same(got, np.array(stable_order(x, ascending), np.int64))


@pytest.mark.spec("argsort.C1", "argsort.C2")
def test_argsort_errors() -> None:
    for shape in [(), (2, 2)]:
        with pytest.raises(GraphShapeError, match=r"argsort\.C1"):
            build(lambda x: ops.argsort(x), np.zeros(shape, np.float32))
    with pytest.raises(GraphShapeError, match=r"argsort\.C2"):
        build(lambda x: ops.argsort(x, ascending="yes"), np.zeros(3, np.float32))
    with pytest.raises(GraphTypeError, match="OPDT-1"):
        build(lambda x: ops.argsort(x), np.zeros(3, bool))


@pytest.mark.spec("bottom_k.C2")
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_bottom_k_takes_the_stable_ascending_prefix(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(4)
    x = np.stack([vector(rng, dtype, 6) for _ in range(5)])
    for axis, k in [(1, 0), (1, 3), (-1, 6), (0, 2), (0, 5)]:
        values, indices = run(lambda x, k=k, axis=axis: ops.bottom_k(x, k, axis), x)
        moved = np.moveaxis(x, axis, -1)
        want_i = np.array([stable_order(row, True)[:k] for row in moved], np.int64)
        want_v = np.take_along_axis(moved, want_i, axis=-1)
        assert_same(indices, np.moveaxis(want_i, -1, axis))
        assert_same(values, np.moveaxis(want_v, -1, axis))


@pytest.mark.spec("bottom_k.C2")
def test_bottom_k_mirrors_top_k_on_numbers() -> None:
    """Without NaN and ties, the k smallest of x are the k largest of -x, reversed order
    aside: values negated, same indices."""
    x = np.array([[3.0, -1.0, 7.5, 0.25, -8.0]], np.float64)
    v, i = run(lambda x: ops.bottom_k(x, 3), x)
    tv, ti = run(lambda x: ops.top_k(-x, 3), x)
    assert_same(v, -tv)
    assert_same(i, ti)


@pytest.mark.spec("bottom_k.C1", "bottom_k.C3")
def test_bottom_k_errors() -> None:
    x = np.zeros((2, 3), np.float32)
    for k in (-1, 4, 1.0, True):
        with pytest.raises(GraphShapeError, match=r"bottom_k\.C1"):
            build(lambda x, k=k: ops.bottom_k(x, k), x)
    with pytest.raises(GraphShapeError, match="AXIS-1"):
        build(lambda x: ops.bottom_k(x, 1, axis=2), x)


def test_functional_forms_mirror_max() -> None:
    x = F.constant(np.array([1.0, 3.0, 2.0, 5.0, 4.0], np.float32))
    values, indices = F.bottom_k(x, k=2, axis=-1)  # MAX's docstring example
    assert values.to_numpy().tolist() == [1.0, 2.0] and indices.to_numpy().tolist() == [0, 2]
    y = F.constant(np.array([3.0, 1.0, 2.0], np.float32))
    assert F.argsort(y, ascending=True).to_numpy().tolist() == [1, 2, 0]
    assert F.argsort(y, ascending=False).to_numpy().tolist() == [0, 2, 1]
