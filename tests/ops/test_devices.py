"""transfer, allreduce_sum, allgather and the device rules (spec/devices.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import (
    GraphShapeError,
    GraphTypeError,
    UnsupportedGraphError,
)
from interpreter.executor import InterpreterExecutor
from interpreter.graph import DeviceRef, Graph, TensorType, ops
from interpreter.testing import Buf, assert_same, build, run
from tests.ops.test_buffer import bits, run_samples, special

CPU0, CPU1, CPU2 = DeviceRef.CPU(0), DeviceRef.CPU(1), DeviceRef.CPU(2)


# -- transfer ---------------------------------------------------------------------------------
@pytest.mark.spec("DEV-3")
@pytest.mark.parametrize("dt", list(DType), ids=str)
def test_transfer_copies_bits(dt: DType) -> None:
    x = special(dt, 6).reshape(3, 2)
    out = run(lambda v: ops.transfer_to(v, CPU1), x)
    assert out.dtype == x.dtype and np.array_equal(bits(out), bits(x))
    assert not np.shares_memory(out, x)


@pytest.mark.spec("DEV-3")
def test_transfer_result_type_and_same_device_copy() -> None:
    x = np.array([1, 2], np.int16)
    g = build(lambda v: (ops.transfer_to(v, CPU2), ops.transfer_to(v, CPU0)), x)
    assert g.output_types == [TensorType(DType.int16, (2,), CPU2),
                                           TensorType(DType.int16, (2,), CPU0)]
    a, b = InterpreterExecutor().execute(g, [x])
    assert not np.shares_memory(a, b) and not np.shares_memory(b, x)


@pytest.mark.spec("DEV-3", "MUT-1")
def test_transfer_of_a_load_is_not_changed_by_later_stores() -> None:
    buf = np.array([1.0, 2.0], np.float32)

    def f(b: Any) -> Any:
        moved = ops.transfer_to(ops.buffer_load(b), CPU1)
        ops.buffer_store(b, ops.constant(np.array([5.0, 6.0], np.float32)))
        return moved

    assert_same(run(f, Buf(buf)), np.array([1.0, 2.0], np.float32))
    assert_same(buf, np.array([5.0, 6.0], np.float32))


@pytest.mark.spec("transfer.C1")
def test_transfer_errors() -> None:
    with pytest.raises(GraphTypeError, match=r"transfer.*\[transfer.C1\]"):
        build(lambda v: ops.transfer_to(v, "cpu:1"), np.zeros(2))  # type: ignore[arg-type]


# -- DEV-1 / DEV-2 ----------------------------------------------------------------------------
@pytest.mark.spec("DEV-1")
def test_mixed_devices_are_refused_at_staging() -> None:
    x = np.zeros(2, np.float32)
    with pytest.raises(GraphShapeError, match=r"add: .*\[DEV-1\].*cpu:1"):
        build(lambda v: ops.add(v, ops.transfer_to(v, CPU1)), x)
    # values on one non-default device are fine and stay there
    g = build(lambda v: ops.transfer_to(v, CPU1) * 2, x)
    assert g.output_types[0].device == CPU1


@pytest.mark.spec("DEV-2", "EXEC-3")
def test_gpu_graphs_are_refused_before_side_effects() -> None:
    ex = InterpreterExecutor()
    buf = np.array([1, 2], np.int32)

    def f(b: Any) -> Any:
        ops.buffer_store(b, ops.constant(np.array([7, 7], np.int32)))
        return ops.transfer_to(ops.buffer_load(b), DeviceRef.GPU(0))

    g = build(f, Buf(buf))
    why = ex.refusal(g)
    assert why is not None and "gpu:0" in why
    with pytest.raises(UnsupportedGraphError):
        ex.execute(g, [buf])
    assert_same(buf, np.array([1, 2], np.int32))  # untouched
    with Graph("gpu_in", [TensorType(DType.float32, (2,), DeviceRef.GPU(1))]) as g2:
        g2.output(ops.transfer_to(g2.inputs[0], CPU0))  # type: ignore[arg-type]
    assert "gpu:1" in (ex.refusal(g2) or "")


# -- allreduce_sum ----------------------------------------------------------------------------
@pytest.mark.spec("DEV-4", "DEV-6")
def test_allreduce_sums_in_operand_order() -> None:
    big, one = np.float32(2**24), np.float32(1.0)
    xs = [np.array([v], np.float32) for v in (one, one, big)]
    # (1 + 1) + 2^24 = 2^24 + 2 exactly; a different order, (2^24 + 1) + 1, would give 2^24
    out = run(lambda a, b, c: ops.allreduce_sum([a, ops.transfer_to(b, CPU1), c]), *xs)
    for r in out:
        assert_same(r, np.array([2**24 + 2], np.float32))
    out2 = run(lambda a, b, c: ops.allreduce_sum([c, a, b]), *xs)
    for r in out2:
        assert_same(r, np.array([2**24], np.float32))
    assert not any(np.shares_memory(p, q) for i, p in enumerate(out) for q in out[i + 1:])


@pytest.mark.spec("DEV-4")
@pytest.mark.parametrize("dt", [DType.int8, DType.uint16, DType.int64, DType.float16,
                                DType.bfloat16, DType.float64], ids=str)
def test_allreduce_dtypes(dt: DType) -> None:
    np_dt = dt.to_numpy()
    a = np.array([[1, 2], [3, 4]]).astype(np_dt)
    b = np.array([[10, 20], [30, 40]]).astype(np_dt)
    expected = np.array([[11, 22], [33, 44]]).astype(np_dt)
    assert_same(run(lambda x, y: ops.allreduce_sum([x, y]), a, b), [expected, expected])


@pytest.mark.spec("DEV-4")
def test_allreduce_wraps_and_single_operand() -> None:
    u8 = np.array([200, 255], np.uint8)
    assert_same(run(lambda x: ops.allreduce_sum([x, x]), u8),
                [np.array([144, 254], np.uint8)] * 2)
    assert_same(run(lambda x: ops.allreduce_sum([x])[0], u8), u8)
    g = build(lambda x: ops.allreduce_sum([x, ops.transfer_to(x, CPU2), x]), u8)
    assert [t.device for t in g.output_types] == [CPU0, CPU2, CPU0]


@pytest.mark.spec("allreduce_sum.C1", "OPDT-1", "GRAPH-4")
def test_allreduce_errors() -> None:
    f32 = np.zeros(2, np.float32)
    with pytest.raises(GraphShapeError, match=r"allreduce_sum.C1"):
        build(lambda x, y: ops.allreduce_sum([x, y]), f32, np.zeros(3, np.float32))
    with pytest.raises(GraphTypeError, match=r"allreduce_sum.C1"):
        build(lambda x, y: ops.allreduce_sum([x, y]), f32, np.zeros(2, np.float16))
    with pytest.raises(GraphTypeError, match=r"OPDT-1"):
        build(lambda x: ops.allreduce_sum([x]), np.zeros(2, bool))
    with pytest.raises(GraphTypeError, match=r"GRAPH-4"):
        build(lambda x: ops.allreduce_sum([]), f32)


# -- allgather --------------------------------------------------------------------------------
@pytest.mark.spec("DEV-5", "DEV-6")
def test_allgather_uneven_shards() -> None:
    a = np.array([[1.0], [2.0]], np.float64)
    b = np.array([[3.0, 4.0, 5.0], [6.0, 7.0, 8.0]], np.float64)
    c = np.zeros((2, 0), np.float64)
    expected = np.array([[1.0, 3.0, 4.0, 5.0], [2.0, 6.0, 7.0, 8.0]])

    def f(x: Any, y: Any, z: Any) -> Any:
        return ops.allgather([x, ops.transfer_to(y, CPU1), ops.transfer_to(z, CPU2)], axis=-1)

    assert_same(run(f, a, b, c), [expected] * 3)
    assert [t.device for t in build(f, a, b, c).output_types] == [CPU0, CPU1, CPU2]


@pytest.mark.spec("DEV-5")
@pytest.mark.parametrize("dt", list(DType), ids=str)
def test_allgather_every_dtype(dt: DType) -> None:
    x = special(dt, 4)
    y = special(dt, 4)[::-1].copy()
    out = run(lambda p, q: ops.allgather([p, q]), x, y)
    for o in out:
        assert np.array_equal(bits(o), np.concatenate([bits(x), bits(y)]))


@pytest.mark.spec("allgather.C1", "allgather.C2", "AXIS-1")
def test_allgather_errors() -> None:
    x = np.zeros((2, 3), np.int32)
    with pytest.raises(GraphTypeError, match=r"allgather.C1"):
        build(lambda p, q: ops.allgather([p, q]), x, x.astype(np.int64))
    with pytest.raises(GraphShapeError, match=r"allgather.C2"):
        build(lambda p, q: ops.allgather([p, q], axis=0), x, np.zeros((2, 2), np.int32))
    with pytest.raises(GraphShapeError, match=r"allgather.C2"):
        build(lambda p, q: ops.allgather([p, q]), x, np.zeros(6, np.int32))
    with pytest.raises(GraphShapeError, match=r"allgather.C2"):
        build(lambda p: ops.allgather([p]), np.array(1, np.int32))
    with pytest.raises(GraphShapeError, match=r"AXIS-1"):
        build(lambda p: ops.allgather([p], axis=-3), x)


@pytest.mark.spec("DEV-3", "DEV-4", "DEV-5")
@pytest.mark.parametrize("name", ["transfer", "allreduce_sum", "allgather"])
def test_samples_execute_with_declared_types(name: str) -> None:
    run_samples(name)
