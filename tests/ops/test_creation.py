"""constant and range (spec/ops/constant.md, spec/ops/range.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import GraphShapeError, GraphTypeError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import DeviceRef, Graph, TensorType, ops
from interpreter.registry import get_op
from interpreter.testing import assert_same, build, run
from tests.ops.test_buffer import bits, run_samples, special

BF16 = DType.bfloat16.to_numpy()


# -- constant ---------------------------------------------------------------------------------
@pytest.mark.spec("constant.C1")
@pytest.mark.parametrize("dt", list(DType), ids=str)
def test_constant_every_dtype_bit_exact(dt: DType) -> None:
    for arr in (special(dt, 6).reshape(2, 3), special(dt, 1).reshape(()),
                special(dt, 0).reshape(0, 2)):
        out = run(lambda a=arr: ops.constant(a))
        assert out.dtype == arr.dtype and out.shape == arr.shape
        assert np.array_equal(bits(out), bits(arr))


@pytest.mark.spec("constant.C1", "constant.C2")
def test_constant_type_and_device() -> None:
    g = build(lambda: ops.constant(np.zeros((2, 1), np.uint32), device=DeviceRef.CPU(4)))
    assert g.output_types[0] == TensorType(DType.uint32, (2, 1), DeviceRef.CPU(4))


@pytest.mark.spec("constant.C1")
def test_constant_value_is_never_exposed() -> None:
    src = np.array([1, 2, 3], np.int32)
    g = build(lambda: ops.constant(src))
    src[0] = 100  # the builder copied the array
    ex = InterpreterExecutor()
    (out,) = ex.execute(g, [])
    out[1] = 200  # outputs are fresh
    assert_same(ex.execute(g, [])[0], np.array([1, 2, 3], np.int32))


@pytest.mark.spec("constant.C3")
def test_constant_python_values() -> None:
    assert_same(run(lambda: ops.constant(7)), np.array(7, np.int64))
    assert_same(run(lambda: ops.constant([1.5, 2])), np.array([1.5, 2.0], np.float32))
    assert_same(run(lambda: ops.constant([[True], [False]])), np.array([[True], [False]]))
    assert_same(run(lambda: ops.constant([1, 0], DType.bool)), np.array([True, False]))
    assert_same(run(lambda: ops.constant([-4.0, 2**62], DType.int64)),
                np.array([-4, 2**62], np.int64))
    assert_same(run(lambda: ops.constant(2**64 - 1, DType.uint64)),
                np.array(2**64 - 1, np.uint64))
    assert_same(run(lambda: ops.constant(np.float16(1.5))), np.array(1.5, np.float16))
    assert_same(run(lambda: ops.constant(np.float16(1.5), DType.float64)), np.array(1.5))
    assert_same(run(lambda: ops.constant(1e6, DType.float16)), np.array(np.inf, np.float16))


@pytest.mark.spec("constant.C3")
@pytest.mark.parametrize(("value", "dt", "expected"), [
    # 1 + 2^-8 + 2^-40: above the bfloat16 midpoint of 1.0 and 1.0078125
    (1 + 2**-8 + 2**-40, DType.bfloat16, 1.0078125),
    (1 + 2**-8, DType.bfloat16, 1.0),  # the midpoint itself: ties to even
    # 1.125 + 2^-40: above the float8_e5m2 midpoint of 1.0 and 1.25
    (1.125 + 2**-40, DType.float8_e5m2, 1.25),
    (-(1.0625 + 2**-40), DType.float8_e4m3fn, -1.125),
    (0.1, DType.float32, 0.100000001490116119384765625),
    (0.1, DType.float16, 0.0999755859375),
])
def test_constant_floats_round_once(value: float, dt: DType, expected: float) -> None:
    out = run(lambda: ops.constant(value, dt))
    assert out.dtype == dt.to_numpy() and float(out) == expected


@pytest.mark.spec("constant.C1", "constant.C2", "constant.C3")
def test_constant_errors() -> None:
    for value, dt in [(2.5, DType.int32), ([300], DType.uint8), (-1, DType.uint8),
                      (math.nan, DType.int64), (2, DType.bool), (2**64, DType.uint64),
                      ("a", DType.float32), ([[1], [2, 3]], DType.int8)]:
        with pytest.raises(GraphTypeError, match=r"constant.C3"):
            build(lambda v=value, d=dt: ops.constant(v, d))
    with pytest.raises(GraphTypeError, match=r"constant.C3"):
        build(lambda: ops.constant(2**63))  # beyond the default int64
    with pytest.raises(GraphTypeError, match=r"constant.C3"):
        build(lambda: ops.constant(np.zeros(2, np.float32), DType.float64))
    with pytest.raises(GraphTypeError, match=r"constant.C1"):
        build(lambda: ops.constant(np.zeros(2, np.complex128)))
    op = get_op("constant")
    with pytest.raises(GraphTypeError, match=r"constant.C1"):
        build(lambda: Graph.current.stage(op, [], {"value": [1, 2], "device": DeviceRef.CPU()}
                                          )[0])
    with pytest.raises(GraphTypeError, match=r"constant.C2"):
        build(lambda: Graph.current.stage(op, [], {"value": np.zeros(1), "device": "cpu"})[0])


# -- range ------------------------------------------------------------------------------------
@pytest.mark.spec("range.C2")
@pytest.mark.parametrize(("args", "expected"), [
    ((5,), [0, 1, 2, 3, 4]),
    ((2, 9, 3), [2, 5, 8]),
    ((9, 2, -3), [9, 6, 3]),
    ((3, 3), []),
    ((3, 0), []),
    ((-2, 2, 1), [-2, -1, 0, 1]),
])
def test_range_ints(args: tuple[int, ...], expected: list[int]) -> None:
    assert_same(run(lambda: ops.range(*args)), np.array(expected, np.int64))  # type: ignore[arg-type]


@pytest.mark.spec("range.C2")
def test_range_integer_dtypes_exact() -> None:
    top = 2**64 - 1
    assert_same(run(lambda: ops.range(top, top - 7, -3, DType.uint64)),
                np.array([top, top - 3, top - 6], np.uint64))
    assert_same(run(lambda: ops.range(-128, 128, 85, DType.int8)),
                np.array([-128, -43, 42, 127], np.int8))
    assert_same(run(lambda: ops.range(np.int32(1), np.int64(4), dtype=DType.uint16)),  # type: ignore[arg-type]
                np.array([1, 2, 3], np.uint16))


@pytest.mark.spec("range.C2")
def test_range_floats() -> None:
    # ceil((1 - 0) / 0.1) = 10 elements, float64 0 + i * 0.1 rounded once to float32
    assert_same(run(lambda: ops.range(0, 1, 0.1)),
                np.array([i * 0.1 for i in range(10)], np.float64).astype(np.float32))
    assert_same(run(lambda: ops.range(1.0, -1.0, -0.5, DType.float64)),
                np.array([1.0, 0.5, 0.0, -0.5]))
    assert_same(run(lambda: ops.range(0.0, 0.35, 0.1, DType.float64)),
                np.array([0.0, 0.1, 0.2, 0.30000000000000004]))
    # float16: 2049 is not representable; 2048 + 1 rounds to even (2048), 2051 to 2052
    assert_same(run(lambda: ops.range(2047, 2052, 2, DType.float16)),
                np.array([2047, 2048, 2052], np.float16))
    # bfloat16, one rounding: 256 + 1 -> 256 (tie to even), 256 + 3 -> 260 (tie to even)
    assert_same(run(lambda: ops.range(255, 260, 1, DType.bfloat16)),
                np.array([255, 256, 256, 258, 260], BF16))
    assert run(lambda: ops.range(0.0, 0.0, 1.0)).shape == (0,)


@pytest.mark.spec("range.C1", "range.C2", "range.C3", "OPDT-1")
def test_range_errors() -> None:
    with pytest.raises(GraphShapeError, match=r"range.C3"):
        build(lambda: ops.range(0, 3, 0))
    with pytest.raises(GraphShapeError, match=r"range.C3"):
        build(lambda: ops.range(0.0, 3.0, 0.0))
    for args in [(0, 200, 1, DType.int8), (0, -2, -1, DType.uint8), (0.5, 3, 1, DType.int32),
                 (0, math.inf, 1.0, DType.float32), (0, math.nan, 1.0, DType.float32),
                 (True, 3, 1, DType.int32)]:
        with pytest.raises(GraphShapeError, match=r"range.C2"):
            build(lambda a=args: ops.range(*a))
    with pytest.raises(GraphTypeError, match=r"range.C1"):
        build(lambda: ops.range(0, 3, 1, DType.int32, "cpu"))  # type: ignore[arg-type]
    for dt in (DType.bool, DType.float8_e4m3fn):
        with pytest.raises(GraphTypeError, match=r"OPDT-1"):
            build(lambda d=dt: ops.range(0, 3, 1, d))


# -- sampling ---------------------------------------------------------------------------------
@pytest.mark.spec("constant.C1", "range.C2")
@pytest.mark.parametrize("name", ["constant", "range"])
def test_samples_execute_with_declared_types(name: str) -> None:
    run_samples(name)


