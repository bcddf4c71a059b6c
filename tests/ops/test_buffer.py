"""Buffer ops: buffer_load, buffer_store, buffer_store_slice, buffer_create (spec/mutation.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import (
    EagerConformanceError,
    GraphIndexError,
    GraphShapeError,
    GraphTypeError,
)
from interpreter.executor import InterpreterExecutor
from interpreter.graph import BufferValue, DeviceRef, Graph, ops
from interpreter.graph.passes import dead_code_elimination
from interpreter.registry import get_op
from interpreter.testing import Buf, assert_same, build, run
from interpreter.testing.sampling import RandomArgSource

ALL_DTYPES = list(DType)
#: byte patterns of special values per storage width: NaN payloads, -0.0, smallest subnormal
SPECIAL_BITS = {1: [0x7F, 0x80, 0x01, 0xFF], 2: [0x7FC1, 0x8000, 0x0001, 0xFFFF]}


def run_samples(name: str, n: int = 50, seed: int = 0) -> None:
    """Build and execute ``n`` sampled calls of op ``name`` (its registry ``sample``) and check
    the outputs have the declared result types; buffer results are checked through a load."""
    op = get_op(name)
    assert op.sample is not None, f"{name} has no sample function"
    src = RandomArgSource(seed)
    for _ in range(n):
        call = op.sample(src)
        args = [Buf(a.copy()) if i in call.buffers else a for i, a in enumerate(call.operands)]
        declared: list[Any] = []

        def fn(*values: Any) -> list[Any]:
            results = Graph.current.stage(op, values, call.attrs)  # noqa: B023
            declared.extend(r.type for r in results)  # noqa: B023
            return [ops.buffer_load(r) if isinstance(r, BufferValue) else r for r in results]

        out = run(fn, *args)
        outs = [] if out is None else out if isinstance(out, list) else [out]
        assert len(outs) == len(declared), (name, call)
        for o, t in zip(outs, declared, strict=True):
            assert o.dtype == t.dtype.to_numpy() and o.shape == t.shape, (name, call, t)


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind in "fV" else a


def special(dt: DType, n: int = 4) -> np.ndarray:
    """An array of ``dt`` whose bytes include NaN payloads, -0 and subnormals (for floats)."""
    np_dt = dt.to_numpy()
    if dt.is_float() and dt.size_in_bytes <= 2:
        pattern = np.array(SPECIAL_BITS[dt.size_in_bytes], f"u{dt.size_in_bytes}")
        return np.resize(pattern, n).view(np_dt)
    if dt.is_float():
        vals = np.array([np.nan, -0.0, np.finfo(np_dt).smallest_subnormal, -np.inf], np_dt)
        return np.resize(vals, n)
    return np.resize(np.array([0, 1, 1, 0] if dt is DType.bool else [1, 2, 3, 4]), n
                     ).astype(np_dt)


# -- buffer_load ------------------------------------------------------------------------------
@pytest.mark.spec("MUT-1", "MUT-5")
@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_load_is_a_byte_exact_copy(dt: DType) -> None:
    arr = special(dt, 6).reshape(2, 3)
    buf = arr.copy()
    out = run(lambda b: ops.buffer_load(b), Buf(buf))
    assert out.dtype == arr.dtype and np.array_equal(bits(out), bits(arr))
    assert not np.shares_memory(out, buf)


@pytest.mark.spec("MUT-1")
def test_load_store_load_sees_old_then_new() -> None:
    buf = np.array([[1, 2], [3, 4]], np.int32)

    def f(b: Any) -> Any:
        a = ops.buffer_load(b)
        ops.buffer_store(b, ops.constant(np.array([[9, 9], [9, 9]], np.int32)))
        c = ops.buffer_load(b)
        ops.buffer_store_slice(b, ops.constant(np.array([0], np.int32)), (0, slice(0, 1)))
        return a, c, ops.buffer_load(b), a * 2

    a, c, d, a2 = run(f, Buf(buf))
    assert_same(a, np.array([[1, 2], [3, 4]], np.int32))
    assert_same(c, np.array([[9, 9], [9, 9]], np.int32))
    assert_same(d, np.array([[0, 9], [9, 9]], np.int32))
    assert_same(a2, np.array([[2, 4], [6, 8]], np.int32))
    assert_same(buf, np.array([[0, 9], [9, 9]], np.int32))


@pytest.mark.spec("MUT-1")
def test_bufferval_getitem_loads_then_indexes() -> None:
    buf = np.array([10, 20, 30], np.int64)
    assert_same(run(lambda b: b[...], Buf(buf)), np.array([10, 20, 30]))


@pytest.mark.spec("GRAPH-4")
def test_load_of_a_tensor_is_refused() -> None:
    with pytest.raises(GraphTypeError, match=r"buffer_load.*GRAPH-4"):
        build(lambda x: ops.buffer_load(x), np.zeros(2, np.float32))


# -- buffer_store -----------------------------------------------------------------------------
@pytest.mark.spec("MUT-2", "MUT-5")
@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_store_every_dtype_byte_exact(dt: DType) -> None:
    src = special(dt, 4).reshape(2, 2)
    buf = np.zeros((2, 2), dt.to_numpy())
    addr = buf.__array_interface__["data"][0]
    assert run(lambda b, s: ops.buffer_store(b, s), Buf(buf), src) is None
    assert np.array_equal(bits(buf), bits(src))
    assert buf.__array_interface__["data"][0] == addr  # mutated in place


@pytest.mark.spec("MUT-2")
def test_store_survives_dce_and_applies_in_order() -> None:
    buf = np.zeros(3, np.int8)

    def f(b: Any) -> Any:
        ops.buffer_store(b, ops.constant(np.array([1, 2, 3], np.int8)))
        ops.buffer_store_slice(b, ops.constant(np.array([7], np.int8)), slice(2, 3))
        ops.buffer_store(b, ops.buffer_load(b) + 1)
        ops.buffer_load(b)  # dead
        return ops.constant(np.array(0.0, np.float32))

    g = build(f, Buf(buf))
    assert dead_code_elimination(g) == 1
    assert sum(n.op.side_effect for n in g.nodes) == 3
    InterpreterExecutor().execute(g, [buf])
    assert_same(buf, np.array([2, 3, 8], np.int8))


@pytest.mark.spec("MUT-5")
def test_each_execute_mutates_once() -> None:
    buf = np.array([0], np.int32)
    g = build(lambda b: ops.buffer_store(b, ops.buffer_load(b) + 1), Buf(buf))
    ex = InterpreterExecutor()
    for expected in (1, 2, 3):
        assert list(ex.execute(g, [buf])) == []
        assert buf[0] == expected


@pytest.mark.spec("MUT-5")
def test_tensor_inputs_are_never_written() -> None:
    src = np.array([1.0, 2.0], np.float32)
    buf = np.zeros(2, np.float32)
    run(lambda b, s: ops.buffer_store(b, s), Buf(buf), src)
    buf[0] = 5.0
    assert_same(src, np.array([1.0, 2.0], np.float32))


@pytest.mark.spec("buffer_store.C1", "buffer_store.C2", "DEV-1", "GRAPH-4")
def test_store_errors() -> None:
    b32 = Buf(np.zeros((2, 2), np.float32))
    with pytest.raises(GraphTypeError, match=r"buffer_store: .*\[buffer_store.C1\].*f64"):
        build(lambda b, s: ops.buffer_store(b, s), b32, np.zeros((2, 2)))
    with pytest.raises(GraphShapeError, match=r"buffer_store.C2"):
        build(lambda b, s: ops.buffer_store(b, s), b32, np.zeros((2, 1), np.float32))
    with pytest.raises(GraphShapeError, match=r"DEV-1"):
        build(lambda b, s: ops.buffer_store(b, ops.transfer_to(s, DeviceRef.CPU(1))), b32,
              np.zeros((2, 2), np.float32))
    with pytest.raises(GraphTypeError, match=r"GRAPH-4"):
        build(lambda b, s: ops.buffer_store(b, s), np.zeros(2, np.float32),
              np.zeros(2, np.float32))


# -- buffer_store_slice -----------------------------------------------------------------------
@pytest.mark.spec("MUT-3")
@pytest.mark.parametrize(("index", "region"), [
    ((1, slice(None, None, -2)), [(1, 4), (1, 2), (1, 0)]),
    ((slice(None, None, -1), 0), [(1, 0), (0, 0)]),
    ((slice(-1, -4, -1), slice(4, 0, -3)), [(1, 4), (1, 1), (0, 4), (0, 1)]),
    ((..., 3), [(0, 3), (1, 3)]),
    ((slice(-100, 100), slice(1, 3)), [(0, 1), (0, 2), (1, 1), (1, 2)]),
    ((-1, -5), [(1, 0)]),
])
def test_store_slice_regions(index: Any, region: list[tuple[int, int]]) -> None:
    # the region's elements, in numpy order, are listed by hand
    src = np.arange(1, len(region) + 1, dtype=np.int64)
    buf = np.zeros((2, 5), np.int64)
    shape = np.zeros((2, 5))[index].shape

    run(lambda b, s: ops.buffer_store_slice(b, s, index), Buf(buf), src.reshape(shape))
    expected = np.zeros((2, 5), np.int64)
    for k, (i, j) in enumerate(region):
        expected[i, j] = k + 1
    assert_same(buf, expected)


@pytest.mark.spec("MUT-3")
def test_store_slice_int_axis_kept_or_dropped() -> None:
    for src in (np.array([[5, 6]], np.uint16), np.array([5, 6], np.uint16)):
        buf = np.zeros((3, 2), np.uint16)
        run(lambda b, s: ops.buffer_store_slice(b, s, 1), Buf(buf), src)
        assert_same(buf, np.array([[0, 0], [5, 6], [0, 0]], np.uint16))


@pytest.mark.spec("MUT-3", "PROMO-4")
def test_store_slice_python_scalar_into_one_element() -> None:
    buf = np.zeros((2, 2), np.float16)
    run(lambda b: ops.buffer_store_slice(b, 2.5, (1, -1)), Buf(buf))
    assert_same(buf, np.array([[0, 0], [0, 2.5]], np.float16))
    with pytest.raises(GraphShapeError, match=r"buffer_store_slice.C2"):
        build(lambda b: ops.buffer_store_slice(b, 1.0, 0), Buf(buf))
    with pytest.raises(GraphTypeError, match=r"PROMO-4"):
        build(lambda b: ops.buffer_store_slice(b, 1.5, (0, 0)), Buf(np.zeros((2, 2), np.int8)))


@pytest.mark.spec("MUT-3", "buffer_store_slice.C2")
def test_store_slice_never_reshapes_other_shapes() -> None:
    buf = Buf(np.zeros((2, 3), np.float32))
    with pytest.raises(GraphShapeError, match=r"must be \[2, 3\] \[buffer_store_slice.C2\]"):
        build(lambda b, s: ops.buffer_store_slice(b, s, (slice(None), slice(None))), buf,
              np.zeros((3, 2), np.float32))
    with pytest.raises(GraphShapeError, match=r"buffer_store_slice.C2"):
        build(lambda b, s: ops.buffer_store_slice(b, s, 0), buf, np.zeros(6, np.float32))


@pytest.mark.spec("MUT-3", "MUT-2")
@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_store_slice_every_dtype_byte_exact(dt: DType) -> None:
    src = special(dt, 2)
    buf = np.zeros(5, dt.to_numpy())
    run(lambda b, s: ops.buffer_store_slice(b, s, slice(4, None, -3)), Buf(buf), src)
    got = bits(buf)
    assert np.array_equal(got[[4, 1]], bits(src))
    assert not np.any(got[[0, 2, 3]])


@pytest.mark.spec("buffer_store_slice.C1", "buffer_store_slice.C2", "INDEX-1", "SLICE-1")
def test_store_slice_errors() -> None:
    buf = Buf(np.zeros((2, 2), np.int8))
    with pytest.raises(GraphTypeError, match=r"buffer_store_slice.C1"):
        build(lambda b, s: ops.buffer_store_slice(b, s, 0), buf, np.zeros(2, np.uint8))
    with pytest.raises(GraphShapeError, match=r"buffer_store_slice.C2"):
        build(lambda b, s: ops.buffer_store_slice(b, s, 0), buf, np.zeros(3, np.int8))
    with pytest.raises(GraphIndexError, match=r"INDEX-1"):
        build(lambda b, s: ops.buffer_store_slice(b, s, (0, 2)), buf, np.zeros(1, np.int8))
    with pytest.raises(GraphTypeError, match=r"GRAPH-4"):
        build(lambda x, s: ops.buffer_store_slice(x, s, 0), np.zeros((2, 2), np.int8),
              np.zeros(2, np.int8))
    op = get_op("buffer_store_slice")
    with pytest.raises(GraphShapeError, match=r"SLICE-1"):
        build(lambda b, s: Graph.current.stage(op, [b, s], {"slices": ((0, 1, 0), (0, 2, 1))}),
              buf, np.zeros((1, 2), np.int8))
    with pytest.raises(GraphShapeError, match=r"SLICE-1"):
        build(lambda b, s: Graph.current.stage(op, [b, s], {"slices": ((0, 1, 1),)}),
              buf, np.zeros((1, 2), np.int8))


# -- buffer_create ----------------------------------------------------------------------------
@pytest.mark.spec("MUT-4")
@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_create_is_zero_bytes(dt: DType) -> None:
    out = run(lambda: ops.buffer_load(ops.buffer_create(dt, (2, 0, 3))))
    assert out.shape == (2, 0, 3) and out.dtype == dt.to_numpy()
    out = run(lambda: ops.buffer_load(ops.buffer_create(dt, (3,))))
    assert out.dtype == dt.to_numpy() and not np.any(out.view(np.uint8))


@pytest.mark.spec("MUT-4")
def test_created_buffers_are_distinct_and_fresh() -> None:
    def f() -> Any:
        a = ops.buffer_create(DType.int32, (2,))
        b = ops.buffer_create(DType.int32, (2,))
        ops.buffer_store(a, ops.constant(np.array([1, 2], np.int32)))
        return ops.buffer_load(a), ops.buffer_load(b)

    g = build(f)
    for _ in range(2):
        a, b = InterpreterExecutor().execute(g, [])
        assert_same(a, np.array([1, 2], np.int32))
        assert_same(b, np.array([0, 0], np.int32))


@pytest.mark.spec("buffer_create.C1", "GRAPH-6")
def test_create_errors() -> None:
    with pytest.raises(GraphShapeError, match=r"buffer_create.C1"):
        build(lambda: ops.buffer_create(DType.int8, (True, 2)))
    with pytest.raises(GraphTypeError, match=r"buffer_create.C1"):
        build(lambda: ops.buffer_create(DType.int8, (2,), "cpu:0"))  # type: ignore[arg-type]
    with pytest.raises(EagerConformanceError, match=r"GRAPH-6"):
        build(lambda: ops.buffer_create(DType.int8, (2,)))


# -- sampling ---------------------------------------------------------------------------------
@pytest.mark.spec("MUT-1", "MUT-2", "MUT-3", "MUT-4")
@pytest.mark.parametrize("name", ["buffer_load", "buffer_store", "buffer_store_slice",
                                  "buffer_create"])
def test_samples_execute_with_declared_types(name: str) -> None:
    run_samples(name)
