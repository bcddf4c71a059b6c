"""matmul against python triple loops (spec/ops/matmul.md, REDUCE-2/5/6)."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from interpreter.errors import GraphShapeError, GraphTypeError
from interpreter.graph import ops
from interpreter.graph.lowering import lower
from interpreter.graph.ops.staging import stage
from interpreter.testing import assert_same, build, run
from tests.ops.test_reduction import (
    FLOATS,
    INTS,
    assert_within,
    ids,
    random_floats,
    random_ints,
    unspecified,
    wrap,
)

NAN, INF = float("nan"), float("inf")


def py_matmul(a: np.ndarray, b: np.ndarray, combine: Any) -> np.ndarray:
    """``combine([a[..., i, k] * b[..., k, j] for k])`` for 2-D operands (python values)."""
    av = a.astype(np.float64).tolist() if a.dtype.kind in "fV" else a.tolist()
    bv = b.astype(np.float64).tolist() if b.dtype.kind in "fV" else b.tolist()
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    return np.array([[combine([av[i][t] * bv[t][j] for t in range(k)]) for j in range(n)]
                     for i in range(m)], dtype=object).reshape(m, n)


def batched(a: np.ndarray, b: np.ndarray, combine: Any, dtype: Any) -> np.ndarray:
    """Loop over (already equal) batch dims of 3-D operands."""
    return np.stack([py_matmul(a[i], b[i], combine) for i in range(a.shape[0])]).astype(dtype)


CASES = [((3, 4), (4, 2)), ((1, 5), (5, 1)), ((2, 3, 4), (2, 4, 3)), ((2, 0), (0, 3)),
         ((0, 2), (2, 2))]


def as3(x: np.ndarray) -> np.ndarray:
    return x if x.ndim == 3 else x[None]


@pytest.mark.spec("REDUCE-2", "REDUCE-6", "matmul.C4")
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_float_matmul_matches_fsum(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(20)
    for sa, sb in CASES:
        a, b = random_floats(rng, dtype, sa, 4.0), random_floats(rng, dtype, sb, 4.0)
        got = run(lambda a, b: a @ b, a, b)
        exact = batched(as3(a), as3(b), math.fsum, np.float64).reshape(got.shape)
        mag = batched(as3(np.abs(a)), as3(np.abs(b)), math.fsum, np.float64
                      ).reshape(got.shape)
        assert_within(got, exact, sa[-1], mag, dtype, 2)


@pytest.mark.spec("REDUCE-2", "matmul.C4")
@pytest.mark.parametrize("dtype", INTS, ids=ids(INTS))
def test_int_matmul_keeps_dtype_and_wraps(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(21)
    for sa, sb in CASES:
        a, b = random_ints(rng, dtype, sa), random_ints(rng, dtype, sb)
        expected = batched(as3(a), as3(b), lambda t: wrap(sum(t), dtype), dtype)
        assert_same(run(lambda a, b: ops.matmul(a, b), a, b), expected.reshape(
            sa[:-1] + sb[-1:]))


@pytest.mark.spec("REDUCE-2")
def test_half_precision_matmul_rounds_once() -> None:
    # [2048, 1, 1] . [1, 1, 1]: float16 accumulation would stop at 2048
    a = np.array([[2048, 1, 1]], np.float16)
    assert_same(run(lambda a, b: a @ b, a, np.ones((3, 1), np.float16)),
                np.array([[2050]], np.float16))
    bf = ml_dtypes.bfloat16
    assert_same(run(lambda a, b: a @ b, np.array([[256, 1, 1]], bf), np.ones((3, 1), bf)),
                np.array([[258]], bf))


@pytest.mark.spec("REDUCE-5")
def test_matmul_special_values_and_overflow_mask() -> None:
    a = np.array([[0.0, 1.0], [NAN, 0.0], [INF, 1.0], [INF, -INF]], np.float32)
    b = np.array([[INF], [2.0]], np.float32)
    assert_same(run(lambda a, b: a @ b, a, b), np.array([[NAN], [NAN], [INF], [NAN]],
                                                        np.float32))
    big = float(np.finfo(np.float32).max)
    x = np.array([[big, big], [big, 0.0], [INF, 1.0]], np.float32)
    y = np.array([[1.0], [-1.0]], np.float32)
    mask = unspecified("matmul")(x, y)
    assert mask.tolist() == [[True], [False], [False]]
    assert not unspecified("matmul")(
        np.full((1, 2), 100, np.int8), np.full((2, 1), 100, np.int8)).any()


@pytest.mark.spec("matmul.C1", "BCAST-1")
@pytest.mark.parametrize(("sa", "sb", "out"), [
    ((3,), (3,), ()), ((2, 3), (3,), (2,)), ((3,), (3, 4), (4,)),
    ((2, 1, 2, 3), (4, 3, 2), (2, 4, 2, 2)), ((5, 2, 3), (3,), (5, 2)),
    ((3,), (2, 3, 1), (2, 1)), ((1, 2, 3), (4, 3, 5), (4, 2, 5))])
def test_rank1_and_batch_broadcasting(sa: tuple[int, ...], sb: tuple[int, ...],
                                      out: tuple[int, ...]) -> None:
    rng = np.random.default_rng(22)
    a = rng.integers(-5, 5, size=sa).astype(np.int64)
    b = rng.integers(-5, 5, size=sb).astype(np.int64)
    got = run(lambda a, b: a @ b, a, b)
    assert got.shape == out
    # independent: python loops over the broadcast batch and the numpy row/column rules
    a2 = a[None] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    ab = np.broadcast_to(a2, batch + a2.shape[-2:]).reshape(-1, *a2.shape[-2:])
    bb = np.broadcast_to(b2, batch + b2.shape[-2:]).reshape(-1, *b2.shape[-2:])
    expected = batched(ab, bb, sum, np.int64).reshape(out)
    assert_same(got, expected)


@pytest.mark.spec("matmul.C2", "LOWER-1")
def test_builder_emits_explicit_broadcasts_and_primitive_checks() -> None:
    g = build(lambda a, b: a @ b, np.zeros((2, 1, 2, 3), np.float32),
              np.zeros((4, 3, 2), np.float32))
    lower(g)
    names = [n.name for n in g.nodes]
    assert names == ["broadcast_to", "broadcast_to", "matmul"]
    mm = g.nodes[-1]
    assert [v.shape for v in mm.operands] == [(2, 4, 2, 3), (2, 4, 3, 2)]
    # the primitive refuses what the builder would have fixed up
    with pytest.raises(GraphShapeError, match=r"matmul.*matmul.C2"):
        build(lambda a, b: stage("matmul", (a, b)), np.zeros((2, 2, 3), np.float32),
              np.zeros((1, 3, 2), np.float32))
    with pytest.raises(GraphShapeError, match=r"matmul.*matmul.C2"):
        build(lambda a, b: stage("matmul", (a, b)), np.zeros(3, np.float32),
              np.zeros((3, 1), np.float32))


@pytest.mark.spec("matmul.C1", "matmul.C3", "PROMO-2", "BCAST-1")
def test_matmul_errors_name_op_types_and_rule() -> None:
    f = np.zeros((2, 3), np.float32)
    with pytest.raises(GraphShapeError, match=r"^matmul: .*3 columns.*4 rows \[matmul.C1\]; "
                       r"operands: \(tensor<f32\[2,3\] cpu:0>, tensor<f32\[4,5\] cpu:0>\)"):
        build(lambda a, b: a @ b, f, np.zeros((4, 5), np.float32))
    with pytest.raises(GraphShapeError, match=r"matmul.C1"):
        build(lambda a, b: a @ b, np.zeros(3, np.float32), np.zeros(4, np.float32))
    with pytest.raises(GraphShapeError, match=r"matmul.C3"):
        build(lambda a, b: a @ b, np.zeros((), np.float32), f)
    with pytest.raises(GraphShapeError, match=r"batch dimensions \[2\] and \[3\].*BCAST-1"):
        build(lambda a, b: a @ b, np.zeros((2, 2, 3), np.float32),
              np.zeros((3, 3, 1), np.float32))
    with pytest.raises(GraphTypeError, match=r"matmul.*PROMO-2"):
        build(lambda a, b: a @ b, np.zeros((2, 2), np.uint8), np.zeros((2, 2), np.int8))
    with pytest.raises(GraphTypeError, match=r"matmul.*OPDT-1"):
        build(lambda a, b: a @ b, np.zeros((2, 2), bool), np.zeros((2, 2), bool))
    with pytest.raises(GraphTypeError, match=r"matmul.*not a graph value"):
        build(lambda a: ops.matmul(a, 2.0), f)  # type: ignore[arg-type]


@pytest.mark.spec("PROMO-1")
def test_mixed_dtypes_promote() -> None:
    a = np.array([[1, 2]], np.int8)
    b = np.array([[300], [-1]], np.int16)
    assert_same(run(lambda a, b: a @ b, a, b), np.array([[298]], np.int16))
    c = np.array([[0.5], [0.25]], np.float64)
    assert_same(run(lambda c, d: d @ c, c, np.array([[2.0, 4.0]], np.float32)),
                np.array([[2.0]], np.float64))


# -- band_part (spec/ops/band_part.md) -----------------------------------------------------
def py_band_part(x: np.ndarray, lower: int, upper: int, exclude: bool) -> np.ndarray:
    """Element by element: kept where in (or, with exclude, outside) the band, else zero."""
    from tests.ops.test_shape import bits

    out = np.zeros_like(x)
    raw, dst = bits(x), bits(out)
    rows, cols = x.shape[-2:]
    for idx in np.ndindex(*x.shape):
        m, n = idx[-2], idx[-1]
        inside = (lower == -1 or m - n <= lower) and (upper == -1 or n - m <= upper)
        if inside != exclude:
            dst[idx] = raw[idx]
    assert (rows, cols) == out.shape[-2:]
    return out


@pytest.mark.spec("band_part.C1", "band_part.C2", "band_part.C3", "DT-6", "OPDT-1")
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float16", "bfloat16", "float32",
                                   "float8_e4m3fn"])
def test_band_part_keeps_the_band_bit_for_bit(dtype: str) -> None:
    from interpreter.dtype import DType
    from tests.ops.test_shape import assert_bits, random_bits

    x = random_bits(DType(dtype), (2, 4, 5), seed=7)
    for below, above in [(-1, -1), (0, 0), (1, 2), (3, 0), (-1, 0), (0, -1), (2, 4)]:
        for exclude in (False, True):
            got = run(lambda x, lo=below, up=above, ex=exclude: ops.band_part(x, lo, up, ex), x)
            assert_bits(got, py_band_part(x, below, above, exclude))


@pytest.mark.spec("band_part.C1", "band_part.C2", "band_part.C3")
def test_band_part_zeros_builder_defaults_and_errors() -> None:
    f = np.array([[NAN, -0.0, 2.0], [-INF, INF, -0.0]], np.float32)
    got = run(lambda f: ops.band_part(f, 0, 1), f)
    assert_same(got, np.array([[NAN, -0.0, 0.0], [0.0, INF, -0.0]], np.float32))
    assert not np.signbit(got[0, 2])  # the zeros are +0.0
    assert_same(run(lambda f: ops.band_part(f), f), f)  # None, None: everything
    assert_same(run(lambda f: ops.band_part(f, exclude=True), f), np.zeros((2, 3), np.float32))
    assert run(lambda e: ops.band_part(e, -1, 1), np.zeros((3, 0, 2), np.int8)).shape == (3, 0, 2)
    x = np.ones((3, 4), np.int32)
    for below, above in [(3, 0), (0, 4), (-2, 0), (0, -3)]:
        with pytest.raises(GraphShapeError, match=r"band_part\.C2"):
            build(lambda x, lo=below, up=above: ops.band_part(x, lo, up), x)
    with pytest.raises(GraphShapeError, match=r"band_part\.C2"):
        build(lambda x: ops.band_part(x, 0.5, 0), x)  # type: ignore[arg-type]
    with pytest.raises(GraphShapeError, match=r"band_part\.C3"):
        build(lambda x: ops.band_part(x, 0, 0, 1), x)  # type: ignore[arg-type]
    with pytest.raises(GraphShapeError, match=r"band_part\.C1"):
        build(lambda v: ops.band_part(v), np.ones(3, np.int32))
    with pytest.raises(GraphShapeError, match=r"band_part\.C2"):  # empty rows: only -1
        build(lambda e: ops.band_part(e, 0, -1), np.zeros((0, 2), np.int8))
