"""Reductions, cumsum, softmax and top_k against independent formulas (spec/reductions.md).

Expected values come from python loops, ``math.fsum``/``math.prod`` in float64, python ints
(wrapped by hand) or hand-written literals, never from the interpreter's kernels. The helper
section at the top is shared with ``test_linalg.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import GraphShapeError, GraphTypeError
from interpreter.graph import Graph, TensorType, ops
from interpreter.graph.ops.staging import stage
from interpreter.registry import EXACT, get_op
from interpreter.testing import assert_same, build, run
from interpreter.testing.sampling import RandomArgSource

# -- independent helpers --------------------------------------------------------------------
FLOATS = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32),
          np.dtype(np.float64)]
INTS = [np.dtype(d) for d in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                              np.uint32, np.uint64)]
SHAPES_AXES = [((5,), 0), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((1, 6), 1),
               ((4, 1), 1)]


def reduce_slices(x: np.ndarray, axis: int, fn: Callable[[list[Any]], Any],
                  dtype: Any = np.float64) -> np.ndarray:
    """``fn`` over each slice along ``axis`` (python values; floats via float64), axis kept."""
    axis %= x.ndim
    shape = (*x.shape[:axis], 1, *x.shape[axis + 1:])
    out = np.empty(shape, dtype=object)
    xs = x.astype(np.float64) if x.dtype.kind in "fV" else x
    moved = np.moveaxis(xs, axis, -1)
    for idx in np.ndindex(moved.shape[:-1]):
        out[(*idx[:axis], 0, *idx[axis:])] = fn([v.item() for v in moved[idx]])
    return out.astype(dtype)


def wrap(value: int, dtype: Any) -> int:
    """``value`` modulo 2**bits, in the range of integer ``dtype`` (two's complement)."""
    info = np.iinfo(dtype)
    span = int(info.max) - int(info.min) + 1
    return (value - int(info.min)) % span + int(info.min)


def assert_within(got: np.ndarray, exact: np.ndarray, n: Any, mag: Any, dtype: Any,
                  ulps: int) -> None:
    """REDUCE-6: |got - exact| <= ulps * n * eps * M + n * tiny; non-finite must match."""
    info = ml_dtypes.finfo(dtype)
    assert np.asarray(got).dtype == np.dtype(dtype)
    g = np.asarray(got, dtype=np.float64)
    e = np.asarray(exact, dtype=np.float64)
    assert g.shape == e.shape, (g.shape, e.shape)
    nn = np.broadcast_to(np.maximum(np.asarray(n, dtype=np.float64), 1.0), e.shape)
    bound = (ulps * nn * float(info.eps) * np.asarray(mag, np.float64)
             + nn * float(info.smallest_subnormal))
    fin = np.isfinite(e)
    assert np.array_equal(np.isnan(g[~fin]), np.isnan(e[~fin])), f"got {g}, expected {e}"
    assert np.all((g[~fin] == e[~fin]) | np.isnan(e[~fin])), f"got {g}, expected {e}"
    err = np.abs(g[fin] - e[fin])
    assert np.all(err <= bound[fin]), f"over the REDUCE-6 bound: got {g}, expected {e}"


def random_floats(rng: np.random.Generator, dtype: Any, shape: tuple[int, ...],
                  scale: float = 100.0) -> np.ndarray:
    return rng.uniform(-scale, scale, size=shape).astype(dtype)


def random_ints(rng: np.random.Generator, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Integers over the whole range of ``dtype`` (sums and products overflow often)."""
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max), size=shape, dtype=dtype, endpoint=True)


def ids(dtypes: list[np.dtype[Any]]) -> list[str]:
    return [str(d) for d in dtypes]


NAN, INF = float("nan"), float("inf")


def unspecified(name: str) -> Callable[..., np.ndarray]:
    """The registry's mask of unspecified result elements of op ``name`` (TOL-2)."""
    fn = get_op(name).unspecified
    assert fn is not None, name
    return fn


# -- reduce_sum -----------------------------------------------------------------------------
@pytest.mark.spec("REDUCE-1", "REDUCE-2", "REDUCE-6", "reduce_sum.C1")
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_float_sum_matches_fsum(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(1)
    for shape, axis in SHAPES_AXES:
        x = random_floats(rng, dtype, shape)
        got = run(lambda x, a=axis: ops.sum(x, axis=a), x)
        exact = reduce_slices(x, axis, math.fsum)
        mag = reduce_slices(x, axis, lambda v: math.fsum(map(abs, v)))
        assert_within(got, exact, shape[axis], mag, dtype, 2)


@pytest.mark.spec("REDUCE-2", "reduce_sum.C1")
@pytest.mark.parametrize("dtype", INTS, ids=ids(INTS))
def test_int_sum_keeps_dtype_and_wraps(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(2)
    for shape, axis in SHAPES_AXES:
        x = random_ints(rng, dtype, shape)
        expected = reduce_slices(x, axis, lambda v: wrap(sum(v), dtype), dtype)
        assert_same(run(lambda x, a=axis: ops.sum(x, axis=a), x), expected)


@pytest.mark.spec("REDUCE-2")
def test_half_precision_sums_accumulate_in_float32() -> None:
    # sequential float16 would give 2048 (2048 + 1 rounds back to 2048 twice)
    assert_same(run(ops.sum, np.array([2048, 1, 1], np.float16)), np.array([2050], np.float16))
    bf = ml_dtypes.bfloat16
    assert_same(run(ops.sum, np.array([256, 1, 1], bf)), np.array([258], bf))


@pytest.mark.spec("REDUCE-3", "REDUCE-5")
def test_sum_special_values_and_empty_axis() -> None:
    x = np.array([[1.0, NAN, 2.0], [INF, 1.0, 2.0], [INF, -INF, 0.0], [-INF, -1.0, 0.0]],
                 np.float32)
    assert_same(run(ops.sum, x), np.array([[NAN], [INF], [NAN], [-INF]], np.float32))
    for dtype in (np.float16, np.int64, np.uint8):
        e = np.zeros((3, 0), dtype)
        assert_same(run(ops.sum, e), np.zeros((3, 1), dtype))
        assert_same(run(lambda e: ops.sum(e, axis=0), e), np.zeros((1, 0), dtype))


@pytest.mark.spec("REDUCE-5")
def test_sum_overflow_is_unspecified_only_when_order_matters() -> None:
    big = float(np.finfo(np.float32).max)
    x = np.array([[big, big, -big], [big, 1.0, -big], [INF, big, 1.0], [NAN, big, big]],
                 np.float32)
    mask = unspecified("reduce_sum")(x, axis=1)
    # finite |terms| above max: rows 0 and 3 (row 3 is NaN anyway, but masking is harmless)
    assert mask.tolist() == [[True], [True], [False], [True]]
    assert unspecified("reduce_mean")(x, axis=1).tolist()[1] == [True]
    assert not unspecified("reduce_sum")(np.array([127, 1], np.int8), axis=0).any()


@pytest.mark.spec("reduce_sum.C1", "reduce_sum.C2")
def test_sum_rejects_bool_rank0_and_bad_axis() -> None:
    with pytest.raises(GraphTypeError, match=r"reduce_sum.*OPDT-1"):
        build(ops.sum, np.array([True]))
    with pytest.raises(GraphShapeError, match=r"reduce_sum.*AXIS-1"):
        build(ops.sum, np.array(1.0, np.float32))
    with pytest.raises(GraphShapeError, match=r"AXIS-1.*f32\[2,3\]"):
        build(lambda x: ops.sum(x, axis=-3), np.zeros((2, 3), np.float32))


# -- reduce_prod ----------------------------------------------------------------------------
@pytest.mark.spec("REDUCE-2", "REDUCE-6", "reduce_prod.C1")
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_float_prod_matches_math_prod(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(3)
    for shape, axis in SHAPES_AXES:
        x = random_floats(rng, dtype, shape, scale=3.0)
        exact = reduce_slices(x, axis, math.prod)  # float64: relative error ~ n * 2**-53
        got = run(lambda x, a=axis: ops.prod(x, axis=a), x)
        assert_within(got, exact, shape[axis], np.abs(exact), dtype, 2)


@pytest.mark.spec("REDUCE-2", "reduce_prod.C1")
@pytest.mark.parametrize("dtype", INTS, ids=ids(INTS))
def test_int_prod_wraps(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(4)
    for shape, axis in SHAPES_AXES:
        x = random_ints(rng, dtype, shape)
        expected = reduce_slices(x, axis, lambda v: wrap(math.prod(v), dtype), dtype)
        assert_same(run(lambda x, a=axis: ops.prod(x, axis=a), x), expected)


@pytest.mark.spec("REDUCE-3", "REDUCE-5")
def test_prod_special_values_empty_and_unspecified() -> None:
    x = np.array([[0.0, INF, 1.0], [-2.0, INF, 0.5], [NAN, 0.0, 1.0], [-0.0, 3.0, 1.0]],
                 np.float64)
    assert_same(run(ops.prod, x), np.array([[NAN], [-INF], [NAN], [-0.0]]))
    assert_same(run(ops.prod, np.zeros((2, 0), np.int8)), np.ones((2, 1), np.int8))
    assert_same(run(ops.prod, np.zeros((1, 0), np.float32)), np.ones((1, 1), np.float32))
    mask = unspecified("reduce_prod")
    f = np.array([[1e30, 1e30, 1e-30], [1e-30, 1e-30, 1e30], [1e19, 1e19, 0.5],
                  [1e-20, 3.0, 1.0]], np.float32)
    assert mask(f, axis=1).tolist() == [[True], [True], [False], [False]]
    assert not mask(np.array([[1e-45]], np.float32), axis=1).any()  # one term: exact


# -- reduce_mean ----------------------------------------------------------------------------
@pytest.mark.spec("REDUCE-1", "REDUCE-2", "REDUCE-6", "reduce_mean.C1")
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_mean_matches_fsum_over_n(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(5)
    for shape, axis in SHAPES_AXES:
        x = random_floats(rng, dtype, shape)
        n = shape[axis]
        exact = reduce_slices(x, axis, math.fsum) / n
        mag = reduce_slices(x, axis, lambda v: math.fsum(map(abs, v))) / n
        got = run(lambda x, a=axis: ops.mean(x, axis=a), x)
        assert_within(got, exact, n + 1, mag, dtype, 2)


@pytest.mark.spec("REDUCE-3")
def test_mean_special_values_and_empty_axis() -> None:
    x = np.array([[1.0, 2.0], [INF, 1.0], [INF, -INF], [-0.0, -0.0]], np.float16)
    got = run(ops.mean, x)
    assert_same(got[:3], np.array([[1.5], [INF], [NAN]], np.float16))
    assert got[3, 0] == 0  # the sign of a zero sum is implementation-defined (REDUCE-2)
    assert_same(run(ops.mean, np.zeros((2, 0), np.float32)), np.full((2, 1), NAN, np.float32))


@pytest.mark.spec("reduce_mean.C1")
@pytest.mark.parametrize("dtype", [*INTS, np.dtype(bool)], ids=[*ids(INTS), "bool"])
def test_integer_mean_is_an_error_suggesting_a_cast(dtype: np.dtype[Any]) -> None:
    with pytest.raises(GraphTypeError, match=r"mean.*cast.*float.*reduce_mean.C1"):
        build(ops.mean, np.zeros(3, dtype))
    # the primitive op refuses integers too
    with pytest.raises(GraphTypeError, match=r"reduce_mean.*OPDT-1"):
        build(lambda x: stage("reduce_mean", (x,), {"axis": 0}), np.zeros(3, dtype))


# -- reduce_max / reduce_min ----------------------------------------------------------------
def _py_max(v: list[Any]) -> Any:
    return NAN if any(isinstance(e, float) and math.isnan(e) for e in v) else max(v)


def _py_min(v: list[Any]) -> Any:
    return NAN if any(isinstance(e, float) and math.isnan(e) for e in v) else min(v)


ORDERED = [*FLOATS, *INTS, np.dtype(bool)]


@pytest.mark.spec("REDUCE-1", "REDUCE-4", "reduce_max.C1", "reduce_min.C1")
@pytest.mark.parametrize("dtype", ORDERED, ids=ids(ORDERED))
def test_max_min_match_python(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(6)
    for shape, axis in SHAPES_AXES:
        if dtype.kind == "b":
            x = rng.integers(0, 2, size=shape).astype(bool)
        elif dtype.kind in "iu":
            x = random_ints(rng, dtype, shape)
        else:
            x = random_floats(rng, dtype, shape)
            x.ravel()[rng.random(x.size) < 0.1] = np.array(NAN, dtype)
            x.ravel()[rng.random(x.size) < 0.1] = np.array(-INF, dtype)
        assert_same(run(lambda x, a=axis: ops.max(x, axis=a), x),
                    reduce_slices(x, axis, _py_max, dtype))
        assert_same(run(lambda x, a=axis: ops.min(x, axis=a), x),
                    reduce_slices(x, axis, _py_min, dtype))


@pytest.mark.spec("REDUCE-4")
def test_max_min_nan_inf_and_signed_zero() -> None:
    x = np.array([[1.0, NAN, INF], [-INF, -INF, -INF], [-0.0, -0.0, -1.0], [0.0, -0.0, -1.0]],
                 np.float32)
    got_max, got_min = run(lambda x: (ops.max(x), ops.min(x)), x)
    expected_max = np.array([[NAN], [-INF], [-0.0], [0.0]], np.float32)
    mask = unspecified("reduce_max")(x, axis=1)
    assert mask.ravel().tolist() == [False, False, False, True]  # mixed zeros: sign open
    keep = ~mask.ravel()
    assert_same(got_max[keep], expected_max[keep])
    assert got_max[3, 0] == 0.0
    assert_same(got_min, np.array([[NAN], [-INF], [-1.0], [-1.0]], np.float32))
    assert not unspecified("reduce_min")(x, axis=1).any()


@pytest.mark.spec("REDUCE-3", "reduce_max.C2", "reduce_min.C2", "argmax.C2", "argmin.C2")
@pytest.mark.parametrize("builder", [ops.max, ops.min, ops.argmax, ops.argmin])
def test_empty_axis_has_no_extreme(builder: Callable[..., Any]) -> None:
    with pytest.raises(GraphShapeError, match=r"size 0.*REDUCE-3.*f32\[2,0\]"):
        build(builder, np.zeros((2, 0), np.float32))
    # an empty *other* axis is fine
    out = run(lambda x: builder(x, axis=1), np.zeros((0, 3), np.float32))
    assert out.shape == (0, 1)


@pytest.mark.spec("REDUCE-7")
def test_max_min_with_two_operands_are_elementwise() -> None:
    a = np.array([1.0, NAN, -2.0], np.float32)
    b = np.array([3.0, 0.0, -5.0], np.float32)
    assert_same(run(lambda a, b: ops.max(a, b), a, b), np.array([3.0, NAN, -2.0], np.float32))
    assert_same(run(lambda a, b: ops.min(a, b), a, b), np.array([1.0, NAN, -5.0], np.float32))
    assert_same(run(lambda a: ops.min(a, 0.0), a), np.array([0.0, NAN, -2.0], np.float32))
    for builder in (ops.max, ops.min):
        with pytest.raises(GraphShapeError, match=r"Axis not allowed.*REDUCE-7") as info:
            build(lambda a, b, f=builder: f(a, b, axis=0), a, b)
        assert isinstance(info.value, ValueError)
    # one operand: default axis -1
    m = np.array([[1, 5], [7, 2]], np.int16)
    assert_same(run(ops.max, m), np.array([[5], [7]], np.int16))
    assert_same(run(lambda m: ops.min(m, axis=0), m), np.array([[1, 2]], np.int16))


# -- argmax / argmin ------------------------------------------------------------------------
def _py_arg(v: list[Any], better: Callable[[Any, Any], bool]) -> int:
    for j, e in enumerate(v):
        if isinstance(e, float) and math.isnan(e):
            return j  # first NaN wins
    best = 0
    for j in range(1, len(v)):
        if better(v[j], v[best]):  # strict: ties keep the lowest index
            best = j
    return best


@pytest.mark.spec("REDUCE-1", "REDUCE-4", "argmax.C1", "argmin.C1")
@pytest.mark.parametrize("dtype", ORDERED, ids=ids(ORDERED))
def test_argmax_argmin_match_python(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(7)
    for shape, axis in SHAPES_AXES:
        x = rng.integers(0, 3, size=shape).astype(dtype)  # many ties
        if dtype.kind in "fV":
            x.ravel()[rng.random(x.size) < 0.15] = np.array(NAN, dtype)
        got = run(lambda x, a=axis: (ops.argmax(x, axis=a), ops.argmin(x, axis=a)), x)
        assert_same(got[0], reduce_slices(x, axis, lambda v: _py_arg(v, lambda a, b: a > b),
                                           np.int64))
        assert_same(got[1], reduce_slices(x, axis, lambda v: _py_arg(v, lambda a, b: a < b),
                                           np.int64))


@pytest.mark.spec("REDUCE-4")
def test_argmax_special_cases() -> None:
    x = np.array([[-0.0, 0.0, -1.0], [1.0, NAN, NAN], [-INF, -INF, -INF], [2.0, INF, INF]],
                 np.float64)
    assert_same(run(ops.argmax, x), np.array([[0], [1], [0], [1]], np.int64))
    assert_same(run(ops.argmin, x), np.array([[2], [1], [0], [0]], np.int64))
    # axis of size 1: zeros (spec-decisions 21)
    assert_same(run(lambda x: ops.argmax(x, axis=0), x[:1]), np.zeros((1, 3), np.int64))
    assert_same(run(ops.argmin, np.array([[5], [3]], np.uint64)), np.zeros((2, 1), np.int64))


# -- cumsum ---------------------------------------------------------------------------------
def _py_cumsum(v: list[Any], exclusive: bool, reverse: bool, total: Callable[..., Any]
               ) -> list[Any]:
    n = len(v)
    out = []
    for j in range(n):
        if reverse:
            terms = v[j + 1:] if exclusive else v[j:]
        else:
            terms = v[:j] if exclusive else v[:j + 1]
        out.append(total(terms))
    return out


def cumsum_expected(x: np.ndarray, axis: int, exclusive: bool, reverse: bool,
                    total: Callable[..., Any], dtype: Any) -> np.ndarray:
    xs = x.astype(np.float64) if x.dtype.kind in "fV" else x
    moved = np.moveaxis(xs, axis, -1)
    out = np.empty(moved.shape, dtype=object)
    for idx in np.ndindex(moved.shape[:-1]):
        out[idx] = _py_cumsum([e.item() for e in moved[idx]], exclusive, reverse, total)
    return np.moveaxis(out, -1, axis).astype(dtype)


FLAGS = [(False, False), (True, False), (False, True), (True, True)]


@pytest.mark.spec("REDUCE-2", "REDUCE-6", "cumsum.C2")
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
@pytest.mark.parametrize(("exclusive", "reverse"), FLAGS)
def test_float_cumsum_matches_fsum(dtype: np.dtype[Any], exclusive: bool, reverse: bool
                                   ) -> None:
    rng = np.random.default_rng(8)
    for shape, axis in SHAPES_AXES:
        x = random_floats(rng, dtype, shape)
        got = run(lambda x, a=axis: ops.cumsum(x, a, exclusive, reverse), x)
        exact = cumsum_expected(x, axis, exclusive, reverse, math.fsum, np.float64)
        mag = cumsum_expected(x, axis, exclusive, reverse,
                              lambda t: math.fsum(map(abs, t)), np.float64)
        n = cumsum_expected(x, axis, exclusive, reverse, len, np.float64)
        assert_within(got, exact, n, mag, dtype, 2)


@pytest.mark.spec("REDUCE-2", "cumsum.C2")
@pytest.mark.parametrize("dtype", INTS, ids=ids(INTS))
@pytest.mark.parametrize(("exclusive", "reverse"), FLAGS)
def test_int_cumsum_wraps(dtype: np.dtype[Any], exclusive: bool, reverse: bool) -> None:
    rng = np.random.default_rng(9)
    for shape, axis in SHAPES_AXES:
        x = random_ints(rng, dtype, shape)
        expected = cumsum_expected(x, axis, exclusive, reverse,
                                   lambda t: wrap(sum(t), dtype), dtype)
        assert_same(run(lambda x, a=axis: ops.cumsum(x, a, exclusive, reverse), x), expected)


@pytest.mark.spec("REDUCE-3", "REDUCE-5", "cumsum.C1")
def test_cumsum_special_values_empty_and_errors() -> None:
    x = np.array([1.0, NAN, 2.0, -0.0], np.float32)
    assert_same(run(lambda x: ops.cumsum(x, reverse=True), x),
                np.array([NAN, NAN, 2.0, -0.0], np.float32))
    assert_same(run(lambda x: ops.cumsum(x, exclusive=True), x),
                np.array([0.0, 1.0, NAN, NAN], np.float32))
    e = np.zeros((2, 0), np.float64)
    assert_same(run(lambda e: ops.cumsum(e, exclusive=True), e), e)
    big = float(np.finfo(np.float16).max)
    mask = unspecified("cumsum")
    h = np.array([big, big, 1.0], np.float16)
    assert mask(h, axis=0, exclusive=False, reverse=False).tolist() == [False, True, True]
    assert mask(h, axis=0, exclusive=True, reverse=True).tolist() == [True, False, False]
    for bad in ({"exclusive": 1}, {"reverse": None}):
        attrs = {"axis": 0, "exclusive": False, "reverse": False, **bad}
        with pytest.raises(GraphShapeError, match=r"cumsum.C1"):
            build(lambda x, a=attrs: stage("cumsum", (x,), a), x)


# -- softmax / logsoftmax -------------------------------------------------------------------
def _py_softmax(v: list[float]) -> list[float]:
    m = max(v)
    e = [math.exp(t - m) for t in v]
    s = math.fsum(e)
    return [t / s for t in e]


def _py_logsoftmax(v: list[float]) -> list[float]:
    m = max(v)
    s = math.fsum(math.exp(t - m) for t in v)
    return [(t - m) - math.log(s) for t in v]


def along(x: np.ndarray, axis: int, fn: Callable[[list[float]], list[float]]) -> np.ndarray:
    moved = np.moveaxis(x.astype(np.float64), axis, -1)
    out = np.empty(moved.shape, np.float64)
    for idx in np.ndindex(moved.shape[:-1]):
        out[idx] = fn([float(e) for e in moved[idx]])
    return np.moveaxis(out, -1, axis)


@pytest.mark.spec("REDUCE-6", "softmax.C1", "logsoftmax.C1")
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_softmax_logsoftmax_match_float64_formulas(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(10)
    for shape, axis in SHAPES_AXES:
        x = random_floats(rng, dtype, shape, scale=8.0)
        sm, lsm = run(lambda x, a=axis: (ops.softmax(x, a), ops.logsoftmax(x, a)), x)
        n = shape[axis]
        assert_within(sm, along(x, axis, _py_softmax), n, 1.0, dtype, 4)
        exact = along(x, axis, _py_logsoftmax)
        assert_within(lsm, exact, n, 1.0 + np.abs(exact), dtype, 4)
        assert np.allclose(np.sum(sm.astype(np.float64), axis=axis), 1.0, atol=0.02)


@pytest.mark.spec("REDUCE-3", "softmax.C1", "softmax.C2", "logsoftmax.C2")
def test_softmax_special_values() -> None:
    x = np.array([[1.0, NAN, 0.0], [INF, 1.0, 0.0], [-INF, -INF, -INF], [-INF, 0.0, 0.0],
                  [1e4, 1e4, -1e4]], np.float32)
    sm, lsm = run(lambda x: (ops.softmax(x), ops.logsoftmax(x)), x)
    assert_same(sm[:4], np.array([[NAN] * 3, [NAN] * 3, [NAN] * 3, [0.0, 0.5, 0.5]],
                                 np.float32))
    assert_same(sm[4], np.array([0.5, 0.5, 0.0], np.float32))  # no overflow: max-shifted
    half = math.log(0.5)
    assert_same(lsm[3], np.array([-INF, half, half], np.float32))
    assert np.isnan(lsm[:3]).all()
    assert_same(run(ops.softmax, np.zeros((3, 0), np.float16)), np.zeros((3, 0), np.float16))
    with pytest.raises(GraphTypeError, match=r"softmax.*OPDT-1"):
        build(ops.softmax, np.zeros(3, np.int32))
    with pytest.raises(GraphShapeError, match=r"logsoftmax.*AXIS-1"):
        build(ops.logsoftmax, np.array(2.0, np.float32))


# -- top_k ----------------------------------------------------------------------------------
def _py_top_k(v: list[Any], k: int) -> list[int]:
    def key(j: int) -> tuple[int, Any, int]:
        e = v[j]
        if isinstance(e, float) and math.isnan(e):
            return (0, 0, j)  # NaN first (largest)
        return (1, -e, j)  # descending; ties by index

    return sorted(range(len(v)), key=key)[:k]


@pytest.mark.spec("REDUCE-4", "top_k.C2", "top_k.C3")
@pytest.mark.parametrize("dtype", [*FLOATS, *INTS], ids=ids([*FLOATS, *INTS]))
def test_top_k_matches_python_sort(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(11)
    for shape, axis in SHAPES_AXES:
        x = rng.integers(0, 4, size=shape).astype(dtype)  # many ties
        if dtype.kind in "fV":
            x.ravel()[rng.random(x.size) < 0.15] = np.array(NAN, dtype)
            x.ravel()[rng.random(x.size) < 0.1] = np.array(INF, dtype)
        for k in (0, 1, shape[axis]):
            moved = np.moveaxis(x, axis, -1)
            idx = np.empty((*moved.shape[:-1], k), np.int64)
            for i in np.ndindex(moved.shape[:-1]):
                vals = [float(e) if dtype.kind in "fV" else e.item() for e in moved[i]]
                idx[i] = _py_top_k(vals, k)
            exp_idx = np.moveaxis(idx, -1, axis)
            exp_vals = np.moveaxis(np.take_along_axis(moved, idx, axis=-1), -1, axis)
            vals_got, idx_got = run(lambda x, a=axis, k=k: ops.top_k(x, k, a), x)
            assert_same(idx_got, exp_idx)
            assert_same(vals_got, exp_vals)


@pytest.mark.spec("top_k.C1", "top_k.C2")
def test_top_k_signed_zero_ties_and_k_range() -> None:
    x = np.array([0.0, -0.0, 0.0, -1.0], np.float64)
    v, i = run(lambda x: ops.top_k(x, 3), x)
    assert_same(i, np.array([0, 1, 2], np.int64))
    assert_same(v, np.array([0.0, -0.0, 0.0]))
    # k = 1 agrees with argmax
    y = np.array([[2, 7, 7], [9, 1, 9]], np.int32)
    assert_same(run(lambda y: ops.top_k(y, 1)[1], y), np.array([[1], [0]], np.int64))
    assert_same(run(ops.argmax, y), np.array([[1], [0]], np.int64))
    for k in (-1, 4, 1.0, True):
        with pytest.raises(GraphShapeError, match=r"top_k.*top_k.C1.*si32\[2,3\]"):
            build(lambda y, k=k: ops.top_k(y, k), y)
    v0, i0 = run(lambda e: ops.top_k(e, 0), np.zeros((2, 0), np.float32))
    assert v0.shape == i0.shape == (2, 0) and i0.dtype == np.int64


# -- declarations and sampling ---------------------------------------------------------------
MY_OPS = ["reduce_sum", "reduce_mean", "reduce_prod", "reduce_max", "reduce_min", "argmax",
          "argmin", "cumsum", "softmax", "logsoftmax", "top_k", "matmul"]


@pytest.mark.spec("TOL-1", "REDUCE-6")
def test_declared_tolerances() -> None:
    for name in ("reduce_sum", "reduce_mean", "reduce_prod", "cumsum", "matmul"):
        assert str(get_op(name).tolerance) == "reduction(2)"
    for name in ("softmax", "logsoftmax"):
        assert str(get_op(name).tolerance) == "reduction(4)"
    for name in ("reduce_max", "reduce_min", "argmax", "argmin", "top_k"):
        assert get_op(name).tolerance == EXACT


@pytest.mark.spec("REDUCE-1", "TOL-2")
@pytest.mark.parametrize("name", MY_OPS)
def test_samples_build_execute_and_match_declared_types(name: str) -> None:
    op = get_op(name)
    assert op.sample is not None
    src = RandomArgSource(seed=MY_OPS.index(name))
    for _ in range(50):
        call = op.sample(src)
        types = [TensorType(DType.from_numpy(a.dtype), a.shape) for a in call.operands]
        with Graph(name, input_types=types) as g:
            g.output(*stage(name, g.inputs, call.attrs))
        from interpreter.executor import InterpreterExecutor

        outs = InterpreterExecutor().execute(g, call.operands)
        assert len(outs) == len(g.output_types)
        for out, t in zip(outs, g.output_types, strict=True):
            assert out.dtype == t.dtype.to_numpy() and out.shape == t.shape, (name, call)
        if op.unspecified is not None:
            mask = op.unspecified(*call.operands, **call.attrs)
            assert mask.shape == g.output_types[0].shape and mask.dtype == bool
