"""scatter_nd and the scatter reductions (axis and nd forms) against Python loops
(spec/ops/scatter_*.md, INDEX-6, INDEX-7).

The oracle walks the index positions in row-major order and combines Python numbers: exact
integers wrapped by hand, ``math.fsum`` for float sums, float64 products, NaN-propagating
max/min. Nothing here reads the registry kernels' helpers.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import interpreter.experimental.functional as F
from interpreter.errors import GraphIndexError, GraphShapeError, GraphTypeError
from interpreter.graph import ops
from interpreter.registry import get_op
from interpreter.testing import assert_same, build, run

from .test_reduction import FLOATS, INTS, wrap

KINDS = ("add", "mul", "max", "min")
NUMERIC = FLOATS + INTS
NAN, INF = float("nan"), float("inf")


# -- the oracle --------------------------------------------------------------------------------
def writes(shape: tuple[int, ...], indices: np.ndarray, axis: int | None
           ) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(target element of x, position in updates) of every in-range write, row-major."""
    if axis is not None:
        axis %= len(shape)
        for p in np.ndindex(indices.shape):
            i = int(indices[p])
            i += shape[axis] if i < 0 else 0
            if 0 <= i < shape[axis]:
                yield (*p[:axis], i, *p[axis + 1:]), p
        return
    k = indices.shape[-1]
    for q in np.ndindex(indices.shape[:-1]):
        v = [int(c) + (shape[j] if c < 0 else 0) for j, c in enumerate(indices[q])]
        if all(0 <= c < shape[j] for j, c in enumerate(v)):
            for f in np.ndindex(shape[k:]):
                yield (*v, *f), (*q, *f)


def combine(kind: str, values: list[Any]) -> Any:
    if kind == "add":
        return math.fsum(values) if isinstance(values[0], float) else sum(values)
    if kind == "mul":
        return math.prod(values)
    if any(isinstance(v, float) and math.isnan(v) for v in values):
        return NAN
    return max(values) if kind == "max" else min(values)


def oracle(kind: str, x: np.ndarray, updates: np.ndarray, indices: np.ndarray,
           axis: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(expected value as float64 or wrapped int, number of updates n, REDUCE-6 M)."""
    is_int = x.dtype.kind in "iu"
    py = (lambda a: int(a)) if is_int else (lambda a: float(np.float64(a)))
    terms: dict[tuple[int, ...], list[Any]] = {}
    for t, p in writes(x.shape, indices, axis):
        terms.setdefault(t, []).append(py(updates[p]))
    out = np.empty(x.shape, object)
    n, m = np.zeros(x.shape), np.zeros(x.shape)
    for t in np.ndindex(x.shape):
        vals = [py(x[t]), *terms.get(t, [])]
        value = combine(kind, vals)
        out[t] = wrap(value, x.dtype) if is_int else value
        n[t] = len(vals) - 1
        mags = [abs(v) for v in vals if not is_int and math.isfinite(v)]
        m[t] = (math.fsum(mags) if kind == "add" else math.prod(mags)) if mags else 0.0
    return out.astype(x.dtype if is_int else np.float64), n, m


def call(kind: str, x: np.ndarray, u: np.ndarray, i: np.ndarray, axis: int | None) -> Any:
    if axis is None:
        return run(lambda x, u, i: getattr(ops, f"scatter_nd_{kind}")(x, u, i), x, u, i)
    return run(lambda x, u, i: getattr(ops, f"scatter_{kind}")(x, u, i, axis), x, u, i)


def assert_matches(kind: str, got: np.ndarray, x: np.ndarray, u: np.ndarray, i: np.ndarray,
                   axis: int | None) -> None:
    """Integers and max/min exactly; float sums and products within REDUCE-6 (u = 2)."""
    want, n, m = oracle(kind, x, u, i, axis)
    assert got.dtype == x.dtype and got.shape == x.shape
    if x.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
        return
    g = got.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(want)), (g, want)
    if kind in ("max", "min"):
        np.testing.assert_array_equal(g, want)
        return
    info = ml_dtypes.finfo(x.dtype)
    bound = 2 * n * float(info.eps) * m + n * float(info.smallest_subnormal)
    exact = want.astype(x.dtype).astype(np.float64)  # n = 0: x itself, bit for bit
    finite = np.isfinite(want)
    assert np.all(np.abs(g - want)[finite] <= np.maximum(bound, np.abs(exact - want))[finite]
                  ), (kind, g, want, bound)


def indices_for(rng: np.random.Generator, n: int, shape: tuple[int, ...], dtype: Any
                ) -> np.ndarray:
    """Indices in [-m, m) for m = 1, 2 or n: duplicates, both ends, negatives."""
    m = int(rng.choice([1, 2, n])) if n else 1
    return rng.integers(-m, m, size=shape).astype(dtype)


def values(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype[Any],
           kind: str) -> np.ndarray:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = (max(int(info.min), -3), 4) if kind == "mul" else (int(info.min), int(info.max))
        return np.asarray(rng.integers(lo, hi, size=shape, endpoint=True, dtype=dtype))
    scale = 2.0 if kind == "mul" else 50.0
    return np.asarray(rng.uniform(-scale, scale, size=shape)).astype(dtype)


# -- every op x dtype against the oracle (INDEX-7) ----------------------------------------------
@pytest.mark.spec("INDEX-6", "INDEX-7", "scatter_add.C6", "scatter_mul.C6", "scatter_max.C6",
                  "scatter_min.C6")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_axis_form_combines_every_duplicate(kind: str, dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{kind}/{dtype.name}".encode()))
    for shape, axis in [((5,), 0), ((3, 4), 0), ((3, 4), -1), ((2, 3, 2), 1), ((1, 3), 0)]:
        ishape = list(shape)
        ishape[axis] = int(rng.integers(0, 6))
        x = values(rng, shape, dtype, kind)
        u = values(rng, tuple(ishape), dtype, kind)
        i = indices_for(rng, shape[axis], tuple(ishape), np.int32 if axis else np.int64)
        assert_matches(kind, call(kind, x, u, i, axis), x, u, i, axis)


@pytest.mark.spec("INDEX-6", "INDEX-7", "scatter_nd_add.C6", "scatter_nd_mul.C6",
                  "scatter_nd_max.C6", "scatter_nd_min.C6")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_nd_form_combines_every_duplicate(kind: str, dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(zlib.crc32(f"nd/{kind}/{dtype.name}".encode()))
    for shape, k, lead in [((4, 2), 1, (3,)), ((3, 3), 2, (2, 3)), ((2, 2, 3), 2, (5,)),
                           ((3,), 0, (2,)), ((), 0, (4,)), ((2, 3), 1, (0,))]:
        x = values(rng, shape, dtype, kind)
        u = values(rng, lead + shape[k:], dtype, kind)
        cols = [indices_for(rng, shape[j], lead, np.int64) for j in range(k)]
        i = np.stack(cols, axis=-1) if cols else np.zeros((*lead, 0), np.int64)
        assert_matches(kind, call(kind, x, u, i, None), x, u, i, None)


@pytest.mark.spec("scatter_add.C6", "scatter_nd_add.C6", "INDEX-7")
def test_a_thousand_duplicates_on_one_element_all_count() -> None:
    x = np.array([0.5, 7.0], np.float32)
    got = run(lambda x, u, i: ops.scatter_add(x, u, i, 0), x, np.ones(1000, np.float32),
              np.zeros(1000, np.int64))
    assert_same(got, np.array([1000.5, 7.0], np.float32))
    grid = run(lambda g, u, i: ops.scatter_nd_add(g, u, i), np.zeros((2, 2), np.int32),
               np.arange(6, dtype=np.int32), np.array([[1, -1]] * 6, np.int32))
    assert_same(grid, np.array([[0, 0], [0, 15]], np.int32))


@pytest.mark.spec("REDUCE-2", "scatter_add.C6")
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["float16", "bfloat16"])
def test_16_bit_floats_combine_in_float32_and_round_once(dtype: Any) -> None:
    """2048 + eight 1s: a float16 accumulator stalls at 2048 (2049 is a tie to even), the
    reference's float32 one gives 2056 exactly (bfloat16: 256 + eight 1s, the same)."""
    base = 2048.0 if dtype is np.float16 else 256.0
    x = np.array([base], dtype)
    got = run(lambda x, u, i: ops.scatter_add(x, u, i, 0), x, np.ones(8, dtype),
              np.zeros(8, np.int64))
    assert_same(got, np.array([base + 8], dtype))


# -- special values, signed zeros, wrap-around --------------------------------------------------
@pytest.mark.spec("scatter_add.C6", "scatter_mul.C6", "scatter_max.C6", "scatter_min.C6",
                  "NUM-8")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_special_values(dtype: np.dtype[Any]) -> None:
    def one(kind: str, target: float, ups: list[float]) -> float:
        x = np.array([target], dtype)
        u = np.array(ups, dtype)
        got = call(kind, x, u, np.zeros(len(ups), np.int64), 0)
        return float(got.astype(np.float64)[0])

    assert math.isnan(one("add", 1.0, [INF, -INF]))
    assert math.isnan(one("add", NAN, [1.0]))
    assert one("add", -INF, [5.0, -3.0]) == -INF
    assert math.isnan(one("mul", 0.0, [INF]))
    assert one("mul", -0.0, [2.0]) == 0.0 and math.copysign(1, one("mul", -0.0, [2.0])) < 0
    assert one("mul", INF, [-1.0, 2.0]) == -INF
    for kind in ("max", "min"):
        assert math.isnan(one(kind, NAN, [1.0, 2.0]))
        assert math.isnan(one(kind, 1.0, [2.0, NAN, -INF]))
        same = one(kind, -0.0, [-0.0])
        assert same == 0.0 and math.copysign(1, same) < 0  # one sign: exact
    assert one("max", -INF, [-5.0, -7.0]) == -5.0 and one("min", INF, [5.0, 7.0]) == 5.0


@pytest.mark.spec("scatter_max.C6", "scatter_min.C6", "scatter_add.C6", "scatter_mul.C6",
                  "REDUCE-4", "REDUCE-5")
def test_order_dependent_elements_are_unspecified() -> None:
    f32 = np.float32
    big = float(np.finfo(f32).max)
    i2 = np.array([0, 1], np.int64)
    for kind in ("max", "min"):
        mask = get_op(f"scatter_{kind}").unspecified(np.array([0.0, 0.0], f32),
                                                      np.array([-0.0, 0.0], f32), i2, axis=0)
        assert mask.tolist() == [True, False]  # +0 vs -0 at 0; +0 alone at 1
    mask = get_op("scatter_add").unspecified(np.array([big, big, 1.0], f32),
                                             np.array([big, -big], f32), i2, axis=0)
    assert mask.tolist() == [True, True, False]  # |terms| pass max whatever the signs
    mask = get_op("scatter_nd_mul").unspecified(np.array([1e30, 1.0], f32),
                                                np.array([1e30, 1e-30], f32),
                                                np.array([[0], [0]], np.int64))
    assert mask.tolist() == [True, False]  # 1e30 * 1e30 may overflow before * 1e-30
    ints = get_op("scatter_add").unspecified(np.array([127], np.int8),
                                             np.array([127], np.int8), i2[:1], axis=0)
    assert not ints.any()  # integer sums wrap: exact in any order


@pytest.mark.spec("INDEX-7", "scatter_add.C6", "scatter_mul.C6")
def test_integers_wrap_in_any_order() -> None:
    x = np.array([-128, 0], np.int8)
    got = run(lambda x, u, i: ops.scatter_add(x, u, i, 0), x, np.array([-1, 127, 127], np.int8),
              np.array([0, 1, 1], np.int64))
    assert_same(got, np.array([127, -2], np.int8))
    got = run(lambda x, u, i: ops.scatter_mul(x, u, i, 0), np.array([2**31 - 1], np.int32),
              np.array([2, 2], np.int32), np.array([0, -1], np.int32))
    assert_same(got, np.array([wrap(4 * (2**31 - 1), np.int32)], np.int32))
    got = run(lambda x, u, i: ops.scatter_nd_add(x, u, i), np.array([1], np.uint64),
              np.array([2**64 - 1], np.uint64), np.array([[0]], np.int64))
    assert_same(got, np.array([0], np.uint64))


# -- scatter_nd: overwrite, duplicates unspecified unless the bits agree ---------------------------
@pytest.mark.spec("scatter_nd.C6", "INDEX-7")
@pytest.mark.parametrize("dtype", [*NUMERIC, np.dtype(np.bool_)], ids=str)
def test_scatter_nd_writes_each_slice(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(5)
    x = (rng.integers(0, 2, (3, 2, 2)) if dtype == np.bool_ else
         rng.integers(-5, 5, (3, 2, 2))).astype(dtype)
    u = (rng.integers(0, 2, (2, 2)) if dtype == np.bool_ else
         rng.integers(-5, 5, (2, 2))).astype(dtype)
    i = np.array([[2, 0], [-3, -1]], np.int32)  # distinct targets x[2, 0, :], x[0, 1, :]
    want = x.copy()
    want[2, 0, :], want[0, 1, :] = u[0], u[1]
    assert_same(run(lambda x, u, i: ops.scatter_nd(x, u, i), x, u, i), want)


@pytest.mark.spec("scatter_nd.C6")
def test_scatter_nd_duplicates_of_other_bits_are_unspecified() -> None:
    x = np.zeros(3, np.float32)
    u = np.array([1.0, 2.0, np.nan, np.nan, 0.0, -0.0], np.float32)
    i = np.array([[0], [0], [1], [1], [2], [2]], np.int64)
    mask = get_op("scatter_nd").unspecified(x, u, i)
    assert mask.tolist() == [True, False, True]  # equal NaN bits agree; +0/-0 differ
    got = run(lambda x, u, i: ops.scatter_nd(x, u, i), x, u, i)
    assert float(got[0]) in (1.0, 2.0) and np.isnan(got[1])  # one of the writes


# -- index rules: negatives, empty index sets, out of range, errors (INDEX-6) ----------------------
@pytest.mark.spec("INDEX-6")
@pytest.mark.parametrize("kind", KINDS)
def test_negative_indices_count_from_the_end_and_empty_sets_change_nothing(kind: str) -> None:
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int64)
    u = np.array([[7, 8], [9, 10]], np.int64)
    left = call(kind, x, u, np.array([[-3, -1], [-1, -1]], np.int64), 1)
    right = call(kind, x, u, np.array([[0, 2], [2, 2]], np.int64), 1)
    assert_same(left, right)
    left = call(kind, x, u[0], np.array([[-2, -3], [-1, -1]], np.int32), None)
    right = call(kind, x, u[0], np.array([[0, 0], [1, 2]], np.int32), None)
    assert_same(left, right)
    empty = call(kind, x, np.zeros((2, 0), np.int64), np.zeros((2, 0), np.int64), 1)
    assert_same(empty, x)
    empty_nd = call(kind, x, np.zeros((0, 3), np.int64), np.zeros((0, 1), np.int32), None)
    assert_same(empty_nd, x)


@pytest.mark.spec("INDEX-6", "scatter_add.C7", "scatter_nd_add.C7", "scatter_nd.C5")
def test_out_of_range_indices_leave_their_reach_unspecified() -> None:
    x = np.zeros((2, 3), np.float32)
    u = np.ones((2, 3), np.float32)
    i = np.array([[0, 2, 0], [1, 0, 1]], np.int64)  # axis 0: column 1 gets index 2 (n = 2)
    mask = get_op("scatter_add").unspecified(x, u, i, axis=0)
    assert mask.tolist() == [[False, True, False]] * 2  # the column (line along axis 0)
    got = run(lambda x, u, i: ops.scatter_add(x, u, i, 0), x, u, i)
    assert got[:, [0, 2]].tolist() == [[1.0, 1.0], [1.0, 1.0]]  # the other lines exact
    for name in ("scatter_nd", "scatter_nd_add", "scatter_nd_max"):
        mask = get_op(name).unspecified(x, u[:, :3], np.array([[0], [-3]], np.int64))
        assert mask.all(), name  # a vector off the tensor: the whole result
        mask = get_op(name).unspecified(x, u[:, :3], np.array([[0], [-2]], np.int64))
        assert not mask.any(), name


ERRORS = [
    ("C1", TypeError, lambda x, u, i: (x, u.astype(np.float64), i)),
    ("C2", TypeError, lambda x, u, i: (x, u, i.astype(np.float32))),
    ("C3", ValueError, lambda x, u, i: (x, u[:, :2], i)),
]


@pytest.mark.spec(*(f"scatter_{k}.C{n}" for k in KINDS for n in (1, 2, 3, 4)))
@pytest.mark.parametrize("kind", KINDS)
def test_axis_form_errors(kind: str) -> None:
    name = f"scatter_{kind}"
    x, u, i = np.zeros((2, 3), np.float32), np.ones((1, 3), np.float32), np.zeros((1, 3), np.int64)
    for rule, exc, change in ERRORS:
        with pytest.raises(exc, match=rf"{name}\.{rule}"):
            build(lambda x, u, i: getattr(ops, name)(x, u, i, 0), *change(x, u, i))
    with pytest.raises(GraphShapeError, match=rf"{name}\.C3"):
        build(lambda x, u, i: getattr(ops, name)(x, u, i, 0), x, u[:, :2], i[:, :2])
    with pytest.raises(GraphIndexError, match=rf"{name}\.C4"):
        build(lambda x, u, i: getattr(ops, name)(x, u, i, 0), np.zeros((0, 3), np.float32),
              u, i)
    with pytest.raises(GraphTypeError, match="OPDT-1"):
        build(lambda x, u, i: getattr(ops, name)(x, u, i, 0), x.astype(bool), u.astype(bool), i)
    with pytest.raises(GraphShapeError, match="AXIS-1"):
        build(lambda x, u, i: getattr(ops, name)(x, u, i, 2), x, u, i)


@pytest.mark.spec(*(f"scatter_nd_{k}.C{n}" for k in KINDS for n in (1, 2, 3, 4)),
                  "scatter_nd.C1", "scatter_nd.C2", "scatter_nd.C3", "scatter_nd.C4")
@pytest.mark.parametrize("name", ["scatter_nd", *(f"scatter_nd_{k}" for k in KINDS)])
def test_nd_form_errors(name: str) -> None:
    x, u, i = np.zeros((2, 3), np.float32), np.ones((1, 3), np.float32), np.zeros((1, 1), np.int64)
    for rule, exc, change in ERRORS:
        with pytest.raises(exc, match=rf"{name}\.{rule}"):
            build(lambda x, u, i: getattr(ops, name)(x, u, i), *change(x, u, i))
    with pytest.raises(GraphShapeError, match=rf"{name}\.C3"):  # k = 3 > rank 2
        build(lambda x, u, i: getattr(ops, name)(x, u, i), x, u[0, 0], np.zeros(3, np.int64))
    with pytest.raises(GraphIndexError, match=rf"{name}\.C4"):
        build(lambda x, u, i: getattr(ops, name)(x, u, i), np.zeros((0, 3), np.float32), u, i)


# -- the front end --------------------------------------------------------------------------------
@pytest.mark.spec("INDEX-7")
def test_functional_forms_mirror_max() -> None:
    x = F.constant(np.array([1, 2, 3, 4, 5], np.int32))
    u = F.constant(np.array([10, 20], np.int32))
    i = F.constant(np.array([0, 0], np.int64))
    assert F.scatter_add(x, u, i).to_numpy().tolist() == [31, 2, 3, 4, 5]  # axis=-1
    assert F.scatter_mul(x, u, i, axis=0).to_numpy().tolist() == [200, 2, 3, 4, 5]
    assert F.scatter_max(x, u, i).to_numpy().tolist() == [20, 2, 3, 4, 5]
    assert F.scatter_min(x, u, i).to_numpy().tolist() == [1, 2, 3, 4, 5]
    v = F.constant(np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]], np.float32))
    w = F.constant(np.array([[10.0, 10.0], [20.0, 20.0], [100.0, 100.0]], np.float32))
    j = F.constant(np.array([[0], [2], [0]], np.int64))
    assert F.scatter_nd_add(v, w, j).to_numpy().tolist() == [[111, 111], [2, 2], [23, 23],
                                                              [4, 4]]
    assert F.scatter_nd_max(v, w, j).to_numpy()[0].tolist() == [100, 100]
    assert F.scatter_nd_min(v, w, j).to_numpy()[0].tolist() == [1, 1]
    assert F.scatter_nd_mul(v, w, j).to_numpy()[0].tolist() == [1000, 1000]
    assert F.scatter_nd(v, w[:2], j[:2]).to_numpy()[2].tolist() == [20, 20]
