"""gather_nd and gather_sum against Python loops (spec/ops/gather_nd.md, gather_sum.md,
INDEX-6): elements copied bit for bit, sums in exact float64 (``math.fsum``) or Python ints
wrapped by hand."""

from __future__ import annotations

import math
import zlib
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import interpreter.experimental.functional as F
from interpreter.dtype import DType
from interpreter.errors import GraphIndexError, GraphShapeError, GraphTypeError
from interpreter.graph import ops
from interpreter.registry import get_op
from interpreter.testing import assert_same, build, run

from .test_reduction import FLOATS, INTS, wrap
from .test_shape import random_bits

ALL = list(DType)


# -- gather_nd -------------------------------------------------------------------------------------
def gather_nd_loops(x: np.ndarray, indices: np.ndarray, b: int) -> np.ndarray:
    """result[β, q, f] = x[β, v, f] element by element (negatives from the end)."""
    k = indices.shape[-1]
    trail = x.shape[b + k:]
    out = np.zeros(indices.shape[:-1] + trail, x.dtype)
    for pos in np.ndindex(indices.shape[:-1]):
        beta = pos[:b]
        v = [int(c) + (x.shape[b + j] if c < 0 else 0) for j, c in enumerate(indices[pos])]
        for f in np.ndindex(trail):
            out[(*pos, *f)] = x[(*beta, *v, *f)]
    return out


CASES = [  # x shape, batch_dims, index dims Q, k
    ((5,), 0, (3,), 1), ((3, 4), 0, (2, 2), 2), ((3, 4), 0, (4,), 1), ((2, 3, 4), 1, (2,), 1),
    ((2, 3, 4), 1, (3,), 2), ((2, 3, 2, 2), 2, (1,), 2), ((2, 3), 0, (2,), 0),
    ((2, 3), 1, (), 0), ((3, 2), 0, (0,), 1), ((2, 0, 3), 1, (2,), 0), ((1, 1), 0, (3,), 2)]


@pytest.mark.spec("gather_nd.C2", "gather_nd.C3", "INDEX-6")
@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.value)
def test_gather_nd_matches_loops_bit_for_bit(dtype: DType) -> None:
    rng = np.random.default_rng(zlib.crc32(dtype.value.encode()))
    for n, (shape, b, lead, k) in enumerate(CASES):
        x = random_bits(dtype, shape, seed=n)
        cols = [rng.integers(-d, d, size=shape[:b] + lead) if d else
                np.zeros(shape[:b] + lead, np.int64) for d in shape[b:b + k]]
        i = (np.stack(cols, -1) if cols else np.zeros((*shape[:b], *lead, 0))).astype(
            np.int32 if n % 2 else np.int64)
        got = run(lambda x, i, b=b: ops.gather_nd(x, i, batch_dims=b), x, i)
        assert got.shape == shape[:b] + lead + shape[b + k:]
        assert_same(got, gather_nd_loops(x, i, b))


@pytest.mark.spec("gather_nd.C5", "INDEX-6")
def test_gather_nd_out_of_range_vectors_read_unspecified_slices() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    i = np.array([[0, 1], [3, 0], [-4, 1], [2, -2]], np.int64)  # rows 1 and 2 leave axis 0
    mask = get_op("gather_nd").unspecified(x, i, batch_dims=0)
    assert mask.shape == (4, 2) and mask.tolist() == [[False] * 2, [True] * 2, [True] * 2,
                                                      [False] * 2]
    got = run(lambda x, i: ops.gather_nd(x, i), x, i)
    assert_same(got[[0, 3]], np.array([[2.0, 3.0], [8.0, 9.0]], np.float32))


@pytest.mark.spec("gather_nd.C1", "gather_nd.C2", "gather_nd.C3", "gather_nd.C4")
def test_gather_nd_errors() -> None:
    x = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(GraphTypeError, match=r"gather_nd\.C1"):
        build(lambda x, i: ops.gather_nd(x, i), x, np.zeros((2, 1), np.float32))
    for i, b in [(np.zeros((2, 4), np.int64), 0), (np.zeros((2, 2), np.int64), 2),
                 (np.zeros((2, 3), np.int64), 1), (np.zeros((2, 1), np.int64), -1),
                 (np.zeros((2, 1), np.int64), True)]:
        with pytest.raises(GraphShapeError, match=r"gather_nd\.C2"):
            build(lambda x, i, b=b: ops.gather_nd(x, i, batch_dims=b), x, i)
    with pytest.raises(GraphShapeError, match=r"gather_nd\.C2"):  # rank-0 indices
        build(lambda x, i: ops.gather_nd(x, i), x, np.zeros((), np.int64))
    with pytest.raises(GraphShapeError, match=r"gather_nd\.C3"):
        build(lambda x, i: ops.gather_nd(x, i, batch_dims=1), x, np.zeros((3, 1), np.int64))
    with pytest.raises(GraphIndexError, match=r"gather_nd\.C4"):
        build(lambda x, i: ops.gather_nd(x, i, batch_dims=1), np.zeros((2, 0, 4), np.float32),
              np.zeros((2, 5, 1), np.int64))
    # an empty index set into an empty axis is fine
    assert run(lambda x, i: ops.gather_nd(x, i), np.zeros((0, 4), np.float32),
               np.zeros((0, 1), np.int64)).shape == (0, 4)


# -- gather_sum ------------------------------------------------------------------------------------
def gather_sum_loops(x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """result[i, 0, d] = sum_j x[indices[i, j], d]: fsum in float64, or wrapped ints."""
    rows, cols = indices.shape[0], x.shape[1]
    out = np.zeros((rows, 1, cols), np.float64 if x.dtype.kind in "fV" else x.dtype)
    for i in range(rows):
        picks = [int(j) + (x.shape[0] if j < 0 else 0) for j in indices[i]]
        for d in range(cols):
            if x.dtype.kind in "iu":
                out[i, 0, d] = wrap(sum(int(x[r, d]) for r in picks), x.dtype)
            else:
                out[i, 0, d] = math.fsum(float(np.float64(x[r, d])) for r in picks)
    return out


@pytest.mark.spec("gather_sum.C1", "REDUCE-2", "REDUCE-6")
@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
def test_gather_sum_matches_loops(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(zlib.crc32(dtype.name.encode()))
    for n, m, rows, j in [(4, 3, 2, 2), (1, 2, 3, 5), (5, 1, 1, 7), (3, 2, 0, 2), (3, 2, 2, 0)]:
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            x = rng.integers(int(info.min), int(info.max), (n, m), endpoint=True, dtype=dtype)
        else:
            x = rng.uniform(-100, 100, (n, m)).astype(dtype)
        i = rng.integers(-n, n, (rows, j)).astype(np.int32)
        got = run(lambda x, i: ops.gather_sum(x, i), x, i)
        want = gather_sum_loops(x, i)
        assert got.dtype == dtype and got.shape == (rows, 1, m)
        if dtype.kind in "iu":
            np.testing.assert_array_equal(got, want)
            continue
        info = ml_dtypes.finfo(dtype)
        mag = gather_sum_loops(np.abs(x.astype(np.float64)), i)
        bound = 2 * j * float(info.eps) * mag + j * float(info.smallest_subnormal)
        assert np.all(np.abs(got.astype(np.float64) - want) <= bound)


@pytest.mark.spec("gather_sum.C4", "REDUCE-5")
def test_gather_sum_special_values_and_unspecified_rows() -> None:
    x = np.array([[np.nan, np.inf, -0.0], [1.0, -np.inf, -0.0]], np.float32)
    got = run(lambda x, i: ops.gather_sum(x, i), x, np.array([[0, 1], [1, -1], [-2, 0]],
                                                                np.int64))
    want = np.array([[[np.nan, np.nan, 0.0]], [[2.0, -np.inf, 0.0]],
                     [[np.nan, np.inf, 0.0]]], np.float32)
    np.testing.assert_array_equal(got, want)  # the sign of a zero sum is open (REDUCE-2)
    big = np.full((2, 2), np.finfo(np.float32).max, np.float32)
    big[1] = 1.0
    i = np.array([[0, 0], [1, 1], [2, 0]], np.int64)  # row 2 reads index 2 of 2 rows
    mask = get_op("gather_sum").unspecified(big, i)
    assert mask[:, 0].tolist() == [[True, True], [False, False], [True, True]]


@pytest.mark.spec("REDUCE-2")
def test_gather_sum_16_bit_floats_sum_in_float32() -> None:
    x = np.array([[2048.0], [1.0]], np.float16)
    got = run(lambda x, i: ops.gather_sum(x, i), x, np.array([[0] + [1] * 8], np.int64))
    assert_same(got, np.array([[[2056.0]]], np.float16))  # float16 steps would stall at 2048


@pytest.mark.spec("gather_sum.C1", "gather_sum.C2", "gather_sum.C3")
def test_gather_sum_errors() -> None:
    x = np.zeros((3, 2), np.float32)
    with pytest.raises(GraphShapeError, match=r"gather_sum\.C1"):
        build(lambda x, i: ops.gather_sum(x, i), x[0], np.zeros((1, 1), np.int64))
    with pytest.raises(GraphShapeError, match=r"gather_sum\.C1"):
        build(lambda x, i: ops.gather_sum(x, i), x, np.zeros((1, 1, 1), np.int64))
    with pytest.raises(GraphTypeError, match=r"gather_sum\.C2"):
        build(lambda x, i: ops.gather_sum(x, i), x, np.zeros((1, 1), np.float32))
    with pytest.raises(GraphIndexError, match=r"gather_sum\.C3"):
        build(lambda x, i: ops.gather_sum(x, i), x[:0], np.zeros((1, 1), np.int64))
    with pytest.raises(GraphTypeError, match="OPDT-1"):
        build(lambda x, i: ops.gather_sum(x, i), x.astype(bool), np.zeros((1, 1), np.int64))


# -- the front end ---------------------------------------------------------------------------------
@pytest.mark.spec("gather_nd.C2")
def test_functional_forms_mirror_max() -> None:
    x = F.constant(np.array([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]], np.float32))
    i = F.constant(np.array([[0, 1], [1, 0]], np.int64))
    assert F.gather_nd(x, i).to_numpy().tolist() == [[3.0, 4.0], [5.0, 6.0]]  # MAX's example
    j = F.constant(np.array([[1], [0]], np.int64))
    assert F.gather_nd(x, j, batch_dims=1).to_numpy().tolist() == [[3.0, 4.0], [5.0, 6.0]]
    e = F.constant(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    assert F.gather_sum(e, F.constant(np.array([[0, 1, 1]], np.int32))).to_numpy().tolist() \
        == [[[7.0, 10.0]]]
