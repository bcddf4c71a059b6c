"""resize_nearest, resize_linear and resize_bicubic against explicit Python loops with exact
(``Fraction``) coordinates (spec/ops/resize_*.md)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import GraphShapeError, GraphTypeError
from interpreter.graph import ops
from interpreter.registry import get_op
from interpreter.testing import assert_same, build, run
from tests.ops.test_shape import assert_bits, random_bits

MODES = ["half_pixel", "align_corners", "asymmetric", "half_pixel_1D"]
ROUNDS = ["HalfDown", "HalfUp", "Floor", "Ceil"]
LENGTHS = [(4, 2), (4, 8), (5, 3), (3, 5), (6, 9), (7, 1), (1, 4), (1, 1), (5, 12), (12, 5)]
FLOAT_DTYPES = [DType.float16, DType.bfloat16, DType.float32, DType.float64]


def coord(i: int, n: int, m: int, mode: str) -> Fraction:
    """The spec's coordinate table, with exact rationals."""
    if mode == "align_corners":
        return Fraction(0) if m == 1 else Fraction(i * (n - 1), m - 1)
    if mode == "asymmetric":
        return Fraction(i * n, m)
    if mode == "half_pixel_1D" and m == 1:
        return Fraction(0)
    return (i + Fraction(1, 2)) * n / m - Fraction(1, 2)


def rounded(c: Fraction, how: str) -> int:
    return {"HalfDown": math.ceil(c - Fraction(1, 2)), "HalfUp": math.floor(c + Fraction(1, 2)),
            "Floor": math.floor(c), "Ceil": math.ceil(c)}[how]


def keys(s: float) -> float:
    s = abs(s)
    if s <= 1:
        return 1.25 * s**3 - 2.25 * s**2 + 1
    return -0.75 * s**3 + 3.75 * s**2 - 6 * s + 3 if s < 2 else 0.0


def taps_1d(n: int, m: int, mode: str, cubic: bool) -> list[list[tuple[int, float]]]:
    """Per output index: (clamped input index, weight) pairs, from the spec's formulas."""
    out = []
    for i in range(m):
        c = coord(i, n, m, mode)
        f = math.floor(c)
        t = float(c - f)
        js = range(-1, 3) if cubic else range(2)
        out.append([(min(max(f + j, 0), n - 1),
                     keys(t - j) if cubic else (1 - t if j == 0 else t)) for j in js])
    return out


def py_resize(x: np.ndarray, shape: tuple[int, ...], mode: str, cubic: bool) -> np.ndarray:
    """Separable resize in float64, one axis after the other, by loops over the taps."""
    a = x.astype(np.float64)
    for axis, (n, m) in enumerate(zip(x.shape, shape, strict=True)):
        if n == m:
            continue
        moved = np.moveaxis(a, axis, 0)
        res = np.zeros((m, *moved.shape[1:]))
        for i, taps in enumerate(taps_1d(n, m, mode, cubic)):
            res[i] = sum(w * moved[j] for j, w in taps)
        a = np.moveaxis(res, 0, axis)
    return a


def within(got: np.ndarray, exact: np.ndarray, rel: float, scale: float = 4.0) -> None:
    """|got - exact| <= rel * 2 * scale (``scale``: the largest |input|; the weights' |sum|
    is below 2 per axis)."""
    err = np.abs(got.astype(np.float64) - exact)
    assert np.all(err <= rel * 2 * scale), (got, exact, err.max())


def eps(dtype: DType) -> float:
    import ml_dtypes
    return float(ml_dtypes.finfo(dtype.to_numpy()).eps)


# -- nearest --------------------------------------------------------------------------------
@pytest.mark.spec("resize_nearest.C1", "resize_nearest.C2", "resize_nearest.C3")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ROUNDS)
def test_nearest_indices_follow_the_coordinate_and_round_tables(mode: str, how: str) -> None:
    op = get_op("resize_nearest")
    for n, m in LENGTHS:
        x = np.arange(n, dtype=np.int64) * 10
        got = run(lambda x, m=m: ops.resize_nearest(x, [m], mode, how), x)
        want = np.array([10 * min(max(rounded(coord(i, n, m, mode), how), 0), n - 1)
                         for i in range(m)], np.int64)
        open_ = op.unspecified(x, shape=(m,), coordinate_transform_mode=mode, round_mode=how)
        assert np.array_equal(got[~open_], want[~open_]), (n, m, got, want)
        # C3: only coordinates at float32 distance from a boundary are open, never a tie of
        # a power-of-two scale
        for i in np.flatnonzero(open_):
            c = coord(int(i), n, m, mode)
            frac = c - math.floor(c)
            assert min(abs(frac - Fraction(1, 2)) if how.startswith("Half") else
                       min(frac, 1 - frac), 1) <= Fraction(1, 2**16) * (abs(c) + 1)


@pytest.mark.spec("resize_nearest.C3")
def test_nearest_ties_of_power_of_two_scales_are_specified_both_ways() -> None:
    x = np.array([10, 20, 30, 40], np.int8)
    # 4 -> 2 half_pixel: c = 0.5, 2.5; 2 -> 4 asymmetric: c = 0, 0.5, 1, 1.5
    assert_same(run(lambda x: ops.resize_nearest(x, [2], 0, "HalfDown"), x),
                np.array([10, 30], np.int8))
    assert_same(run(lambda x: ops.resize_nearest(x, [2], 0, "HalfUp"), x),
                np.array([20, 40], np.int8))
    y = x[:2]
    assert_same(run(lambda y: ops.resize_nearest(y, [4], "asymmetric", 0), y),
                np.array([10, 10, 20, 20], np.int8))
    assert_same(run(lambda y: ops.resize_nearest(y, [4], "asymmetric", 1), y),
                np.array([10, 20, 20, 20], np.int8))
    op = get_op("resize_nearest")
    assert not op.unspecified(x, shape=(2,), coordinate_transform_mode="half_pixel",
                              round_mode="HalfDown").any()


@pytest.mark.spec("DT-6", "OPDT-1", "resize_nearest.C1")
@pytest.mark.parametrize("dtype", list(DType), ids=lambda d: d.value)
def test_nearest_copies_bits_of_every_dtype_on_every_axis(dtype: DType) -> None:
    x = random_bits(dtype, (3, 2, 4), seed=3)
    got = run(lambda x: ops.resize_nearest(x, [5, 1, 8], "asymmetric", "Floor"), x)
    rows = [math.floor(Fraction(i * 3, 5)) for i in range(5)]
    cols = [math.floor(Fraction(j * 4, 8)) for j in range(8)]
    want = x[np.ix_(rows, [0], cols)]
    assert_bits(got, want)
    assert_bits(run(lambda s: ops.resize_nearest(s, []), x[0, 0, 0]), x[0, 0, 0])


@pytest.mark.spec("resize_nearest.C1", "resize_nearest.C2")
def test_nearest_errors() -> None:
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(GraphShapeError, match=r"resize_nearest\.C1"):
        build(lambda x: ops.resize_nearest(x, [2]), x)
    with pytest.raises(GraphShapeError, match=r"resize_nearest\.C1"):
        build(lambda x: ops.resize_nearest(x, [2, -1]), x)
    with pytest.raises(GraphShapeError, match=r"resize_nearest\.C1"):  # 0 cannot grow
        build(lambda e: ops.resize_nearest(e, [1, 3]), np.zeros((0, 3), np.float32))
    with pytest.raises(GraphShapeError, match=r"resize_nearest\.C2"):
        build(lambda x: ops.resize_nearest(x, [2, 2], 4), x)
    with pytest.raises(GraphShapeError, match=r"resize_nearest\.C2"):
        build(lambda x: ops.resize_nearest(x, [2, 2], "bilinear"), x)
    with pytest.raises(GraphShapeError, match=r"resize_nearest\.C2"):
        build(lambda x: ops.resize_nearest(x, [2, 2], 0, "nearest"), x)
    assert run(lambda x: ops.resize_nearest(x, [0, 3]), x).shape == (0, 3)


# -- linear and bicubic ---------------------------------------------------------------------
@pytest.mark.spec("resize_linear.C1", "resize_linear.C2", "REDUCE-6")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.value)
def test_linear_matches_the_tent_filter(mode: str, dtype: DType) -> None:
    rng = np.random.default_rng(11)
    for n, m in LENGTHS:
        x = rng.uniform(-4, 4, (2, n)).astype(dtype.to_numpy())
        got = run(lambda x, m=m: ops.resize_linear(x, [2, m], mode), x)
        within(got, py_resize(x, (2, m), mode, cubic=False), 4 * eps(dtype))
    x = rng.uniform(-4, 4, (3, 5)).astype(dtype.to_numpy())  # both axes
    got = run(lambda x: ops.resize_linear(x, [7, 2], mode), x)
    within(got, py_resize(x, (7, 2), mode, cubic=False), 8 * eps(dtype))


@pytest.mark.spec("resize_bicubic.C1", "resize_bicubic.C3", "REDUCE-6")
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.value)
def test_bicubic_matches_keys_filter(dtype: DType) -> None:
    rng = np.random.default_rng(12)
    for (h, oh), (w, ow) in [((4, 8), (5, 3)), ((1, 3), (6, 6)), ((7, 2), (2, 9)),
                             ((3, 3), (1, 1))]:
        x = rng.uniform(-4, 4, (2, 1, h, w)).astype(dtype.to_numpy())
        got = run(lambda x, s=(2, 1, oh, ow): ops.resize_bicubic(x, s), x)
        within(got, py_resize(x, (2, 1, oh, ow), "half_pixel", cubic=True), 16 * eps(dtype))


@pytest.mark.spec("resize_linear.C1", "resize_bicubic.C1")
def test_unchanged_axes_are_copied_and_empty_axes_stay_empty() -> None:
    x = np.array([[np.nan, -0.0, 3.0]], np.float32)
    for mode in MODES:  # the length-1 axis grows; the axis of length 3 is copied
        got = run(lambda x, mo=mode: ops.resize_linear(x, [2, 3], mo), x)
        assert_same(got, np.repeat(x, 2, axis=0))
    assert_same(run(lambda s: ops.resize_linear(s, []), np.array(2.5, np.float16)),
                np.array(2.5, np.float16))
    assert run(lambda e: ops.resize_linear(e, [0, 7]), np.zeros((0, 2))).shape == (0, 7)
    assert run(lambda e: ops.resize_bicubic(e, [1, 0, 5, 5]),
               np.zeros((1, 0, 2, 2), np.float32)).shape == (1, 0, 5, 5)


def widened_window_holds(x: np.ndarray, m: int, mode: str, cubic: bool) -> np.ndarray:
    """Per output index of a 1-D resize: the taps, widened by one each side, meet a
    non-finite value (the spec's unspecified elements)."""
    n = len(x)
    out = []  # an axis whose length stays has its window too: it may be filtered
    for taps in taps_1d(n, m, mode, cubic):
        lo, hi = taps[0][0], taps[-1][0]
        idx = [min(max(j, 0), n - 1) for j in range(lo - 1, hi + 2)]
        out.append(not np.all(np.isfinite(x[idx].astype(np.float64))))
    return np.array(out)


@pytest.mark.spec("TOL-2", "REDUCE-5")
@pytest.mark.parametrize("name", ["resize_linear", "resize_bicubic"])
def test_special_values_leave_their_widened_window_open(name: str) -> None:
    op = get_op(name)
    cubic = name == "resize_bicubic"
    x = np.array([1.0, np.nan, 2.0, 3.0, -4.0, 5.0, np.inf, 6.0, -np.inf, 1.0, 2.0, 3.0],
                 np.float32)
    for m in (5, 12, 24, 30):
        shape = (1, 1, 1, m) if cubic else (m,)
        xs = x.reshape(1, 1, 1, -1) if cubic else x
        attrs: dict[str, Any] = {} if cubic else {"coordinate_transform_mode": "half_pixel"}
        open_ = op.unspecified(xs, shape=shape, **attrs).reshape(-1)
        assert np.array_equal(open_, widened_window_holds(x, m, "half_pixel", cubic))
        got = run(lambda xs, s=shape: ops.resize_bicubic(xs, s) if cubic
                  else ops.resize_linear(xs, s), xs).reshape(-1)
        exact = py_resize(xs, shape, "half_pixel", cubic).reshape(-1)
        within(got[~open_], exact[~open_], 8 * eps(DType.float32))
    big = np.full(4, np.finfo(np.float16).max, np.float16)  # the sum may pass max: REDUCE-5
    big[1::2] *= -1
    assert get_op("resize_bicubic").unspecified(big.reshape(1, 1, 1, 4),
                                                shape=(1, 1, 1, 7)).any()


@pytest.mark.spec("TOL-2", "REDUCE-5")
def test_a_separable_pass_past_max_leaves_the_element_open() -> None:
    """2x2 -> 1x1 bicubic: a column of two -FLT_MAX has |terms| 1.375 * FLT_MAX in the H
    pass (the weights -0.09375, 0.59375, 0.59375, -0.09375), so a float32 separable sum
    overflows there, though the whole window's |terms| (the products of both weights) add
    up to 0.95 * FLT_MAX and the exact element, -FLT_MAX / 2, is finite: the element is
    unspecified. Found by ONNX Runtime's run, where the reference gave NaN. With half of
    FLT_MAX no pass overflows and the element stays specified."""
    top = np.float32(np.finfo(np.float32).max)
    x = np.array([[-top, 1.0], [-top, 2.0]], np.float32).reshape(1, 1, 2, 2)
    op = get_op("resize_bicubic")
    assert op.unspecified(x, shape=(1, 1, 1, 1)).all()
    half = (x / 2).astype(np.float32)
    assert not op.unspecified(half, shape=(1, 1, 1, 1)).any()
    got = run(lambda v: ops.resize_bicubic(v, (1, 1, 1, 1)), half)
    exact = py_resize(half, (1, 1, 1, 1), "half_pixel", True).reshape(-1)
    np.testing.assert_allclose(got.reshape(-1), exact, rtol=8 * eps(DType.float32))
    assert abs(exact[0] + top / 4) < 1e33  # -FLT_MAX / 4 and the 1.0, 2.0 column's share


@pytest.mark.spec("TOL-2")
def test_an_infinity_beside_an_axis_whose_length_stays_leaves_the_element_open() -> None:
    """(2, 2, 3) -> (1, 1, 3) linear: the last axis keeps its length, and the reference
    copies it, but an implementation may filter it too (ONNX's Resize does: weights 1 and
    0, and 0 * inf is NaN). So an element next to an infinity along that axis is
    unspecified, one two samples away is not. Found by ONNX Runtime's run."""
    op = get_op("resize_linear")
    x = np.full((2, 2, 5), 3.0, np.float32)
    x[0, 0, 0] = np.inf
    open_ = op.unspecified(x, shape=(1, 1, 5), coordinate_transform_mode="half_pixel")
    assert open_.reshape(-1).tolist() == [True, True, False, False, False]
    got = run(lambda v: ops.resize_linear(v, [1, 1, 5]), x).reshape(-1)
    assert np.isinf(got[0]) and got[2:].tolist() == [3.0, 3.0, 3.0]


@pytest.mark.spec("resize_linear.C2", "resize_linear.C3", "resize_bicubic.C3", "OPDT-1")
def test_linear_and_bicubic_errors() -> None:
    x = np.zeros((1, 1, 2, 2), np.float32)
    with pytest.raises(GraphShapeError, match=r"resize_linear\.C2"):
        build(lambda x: ops.resize_linear(x, [1, 1, 4, 4], 7), x)
    with pytest.raises(GraphTypeError, match=r"resize_linear\.C3"):
        build(lambda x: ops.resize_linear(x, [1, 1, 1, 1], antialias=True), x)
    with pytest.raises(GraphTypeError, match=r"OPDT-1"):
        build(lambda i: ops.resize_linear(i, [4]), np.zeros(2, np.int32))
    with pytest.raises(GraphTypeError, match=r"OPDT-1"):
        build(lambda i: ops.resize_bicubic(i, [1, 1, 4, 4]), np.zeros((1, 1, 2, 2), np.uint8))
    with pytest.raises(GraphShapeError, match=r"resize_bicubic\.C3"):
        build(lambda x: ops.resize_bicubic(x, [1, 2, 4, 4]), x)
    with pytest.raises(GraphShapeError, match=r"resize_bicubic\.C3"):
        build(lambda v: ops.resize_bicubic(v, [4, 4]), np.zeros((2, 2), np.float32))
    with pytest.raises(GraphShapeError, match=r"resize_linear\.C1"):
        build(lambda v: ops.resize(v, [4, 4]), np.zeros((2, 2), np.float32))


@pytest.mark.spec("resize_linear.C2")
def test_resize_front_end_picks_the_method() -> None:
    from interpreter.graph.ops import InterpolationMode

    x = np.array([0.0, 4.0, 8.0, 16.0], np.float32).reshape(1, 1, 1, 4)
    shape = [1, 1, 1, 8]
    for how, op in [(InterpolationMode.NEAREST, ops.resize_nearest),
                    (InterpolationMode.BILINEAR, ops.resize_linear),
                    (InterpolationMode.BICUBIC, ops.resize_bicubic)]:
        assert_same(run(lambda x, h=how: ops.resize(x, shape, h), x),
                    run(lambda x, o=op: o(x, shape), x))
    # half_pixel and align_corners differ: the modes are not interchangeable
    assert not np.array_equal(run(lambda x: ops.resize_linear(x, shape, 0), x),
                              run(lambda x: ops.resize_linear(x, shape, 1), x))
