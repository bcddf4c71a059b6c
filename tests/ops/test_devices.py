"""transfer, the collectives and the device rules (spec/devices.md)."""

from __future__ import annotations

import math
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
from interpreter.registry import get_op
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


@pytest.mark.spec("DEV-3", "DEV-4", "DEV-5", "DEV-7", "DEV-8", "DEV-9")
@pytest.mark.parametrize("name", ["transfer", "allreduce_sum", "allgather", "reducescatter_sum",
                                  "distributed_broadcast", "distributed_scatter"])
def test_samples_execute_with_declared_types(name: str) -> None:
    run_samples(name)


# -- reducescatter_sum ------------------------------------------------------------------------
def _chunks(total: list[Any], n: int) -> list[list[Any]]:
    """``total`` cut into ``n`` consecutive runs, one more element in the first ``len % n``."""
    out, start = [], 0
    for i in range(n):
        size = len(total) // n + (1 if i < len(total) % n else 0)
        out.append(total[start:start + size])
        start += size
    return out


def reducescatter_n_m(ops: list[np.ndarray], attrs: dict[str, Any], expected: np.ndarray
                      ) -> tuple[int, np.ndarray]:
    """REDUCE-6's n and M of one result, from the spec table: n = the number of operands,
    M = sum of |x_i| at the element, the largest over the chunks of the result's size."""
    total = sum(np.abs(np.where(np.isfinite(x.astype(np.float64)), x.astype(np.float64), 0))
                for x in ops)
    axis = attrs["axis"] % total.ndim
    moved = np.moveaxis(total, axis, 0)
    pieces = [moved[c[0]:c[-1] + 1] if c else moved[:0]
              for c in _chunks(list(range(moved.shape[0])), len(ops))]
    same = [np.moveaxis(q, 0, axis) for q in pieces if q.shape[0] == expected.shape[axis]]
    return len(ops), np.max(same, axis=0)


@pytest.mark.spec("DEV-7", "DEV-6")
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_reducescatter_chunks_are_max_ragged_bins(n: int) -> None:
    for d in range(8):
        xs = [np.arange(d, dtype=np.int64) * (k + 1) + k for k in range(n)]
        total = [sum(int(x[j]) for x in xs) for j in range(d)]
        devices = [DeviceRef.CPU(k % 3) for k in range(n)]

        def f(*vals: Any, devices: list[DeviceRef] = devices) -> Any:
            moved = [ops.transfer_to(v, dev) for v, dev in zip(vals, devices, strict=True)]
            return ops.reducescatter_sum(moved)

        out = run(f, *xs)
        assert [o.tolist() for o in (out if n > 1 else [out])] == _chunks(total, n)
        assert [t.device for t in build(f, *xs).output_types] == devices


@pytest.mark.spec("DEV-7", "REDUCE-6")
@pytest.mark.parametrize("dt", [DType.float16, DType.bfloat16, DType.float32, DType.float64],
                         ids=str)
def test_reducescatter_float_sum_within_its_bound(dt: DType) -> None:
    rng = np.random.default_rng(5)
    xs = [rng.uniform(-8, 8, size=(3, 7)).astype(dt.to_numpy()) for _ in range(4)]
    out = run(lambda *v: ops.reducescatter_sum(list(v), axis=1), *xs)
    eps = float(np.finfo(np.float32 if dt is DType.bfloat16 else dt.to_numpy()).eps)
    eps = 2.0 ** -7 if dt is DType.bfloat16 else eps
    cols = _chunks(list(range(7)), 4)
    for chunk, got in zip(cols, out, strict=True):
        assert got.dtype == dt.to_numpy() and got.shape == (3, len(chunk))
        for r in range(3):
            for j, c in enumerate(chunk):
                terms = [float(x[r, c]) for x in xs]
                exact = math.fsum(terms)
                assert abs(float(got[r, j]) - exact) <= 4 * eps * sum(map(abs, terms)), (r, c)


@pytest.mark.spec("DEV-7", "NUM-2")
@pytest.mark.parametrize("dt", [DType.int8, DType.uint8, DType.int16, DType.uint16, DType.int32,
                                DType.uint32, DType.int64, DType.uint64], ids=str)
def test_reducescatter_integers_wrap(dt: DType) -> None:
    info = np.iinfo(dt.to_numpy())
    xs = [np.array([info.max, info.min, 3, info.max], dt.to_numpy()) for _ in range(3)]
    out = run(lambda a, b, c: ops.reducescatter_sum([a, b, c]), *xs)
    span = 1 << (8 * dt.size_in_bytes)
    total = []
    for j in range(4):
        v = sum(int(x[j]) for x in xs) % span
        total.append(v - span if dt.is_signed() and v > info.max else v)
    assert [o.tolist() for o in out] == _chunks(total, 3)


@pytest.mark.spec("DEV-7", "TOL-4")
def test_reducescatter_special_values() -> None:
    nan, inf, tiny = np.nan, np.inf, float(np.finfo(np.float32).smallest_subnormal)
    a = np.array([nan, inf, inf, -0.0, tiny, 2.0], np.float32)
    b = np.array([1.0, 1.0, -inf, -0.0, tiny, -2.0], np.float32)
    out = run(lambda a, b: ops.reducescatter_sum([a, b]), a, b)
    assert_same(out, [np.array([nan, inf, nan], np.float32),
                      np.array([-0.0, 2 * tiny, 0.0], np.float32)])


@pytest.mark.spec("DEV-7", "REDUCE-5", "TOL-2")
def test_reducescatter_overflow_is_unspecified_on_every_chunk() -> None:
    op = get_op("reducescatter_sum")
    big = np.array([[60000.0, 1.0, 2.0], [1.0, 1.0, 1.0]], np.float16)
    neg = np.array([[-60000.0, 1.0, 2.0], [1.0, 1.0, 1.0]], np.float16)
    mask = op.unspecified(big, big, neg, axis=1)
    assert mask.shape == (2, 1) and mask[:, 0].tolist() == [True, False]
    ints = np.array([[1, 2]], np.int8)
    assert not op.unspecified(ints, ints, axis=0).any()


@pytest.mark.spec("reducescatter_sum.C1", "reducescatter_sum.C2", "AXIS-1", "OPDT-1", "GRAPH-4")
def test_reducescatter_errors() -> None:
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(GraphTypeError, match=r"reducescatter_sum.C1"):
        build(lambda p, q: ops.reducescatter_sum([p, q]), x, x.astype(np.float64))
    with pytest.raises(GraphShapeError, match=r"reducescatter_sum.C2"):
        build(lambda p, q: ops.reducescatter_sum([p, q]), x, np.zeros((2, 2), np.float32))
    with pytest.raises(GraphShapeError, match=r"reducescatter_sum.C2"):
        build(lambda p: ops.reducescatter_sum([p]), np.float32(1.0))
    with pytest.raises(GraphShapeError, match=r"AXIS-1"):
        build(lambda p: ops.reducescatter_sum([p], axis=2), x)
    with pytest.raises(GraphTypeError, match=r"OPDT-1"):
        build(lambda p: ops.reducescatter_sum([p]), np.zeros(2, bool))
    with pytest.raises(GraphTypeError, match=r"GRAPH-4"):
        build(lambda p: ops.reducescatter_sum([]), x)


# -- distributed_broadcast, distributed_scatter -----------------------------------------------
@pytest.mark.spec("DEV-8", "DEV-6")
@pytest.mark.parametrize("dt", list(DType), ids=str)
def test_broadcast_copies_bits_to_every_device(dt: DType) -> None:
    x = special(dt, 6).reshape(2, 3)
    devices = [CPU2, CPU0, CPU2, CPU1]
    out = run(lambda v: ops.distributed_broadcast(v, devices), x)
    assert len(out) == 4
    for o in out:
        assert o.dtype == x.dtype and np.array_equal(bits(o), bits(x))
        assert not np.shares_memory(o, x)
    assert [t.device for t in build(lambda v: ops.distributed_broadcast(v, devices),
                                    x).output_types] == devices


@pytest.mark.spec("distributed_broadcast.C1", "distributed_broadcast.C2")
def test_broadcast_errors() -> None:
    x = np.zeros(2, np.float32)
    with pytest.raises(GraphShapeError, match=r"distributed_broadcast.C2.*cpu:0"):
        build(lambda v: ops.distributed_broadcast(v, [CPU1]), x)
    with pytest.raises(GraphTypeError, match=r"distributed_broadcast.C1"):
        build(lambda v: ops.distributed_broadcast(v, ()), x)
    with pytest.raises(GraphTypeError, match=r"distributed_broadcast.C1"):
        build(lambda v: ops.distributed_broadcast(v, ["cpu:0"]), x)  # type: ignore[list-item]
    with pytest.raises(GraphTypeError, match=r"distributed_broadcast.C1"):
        build(lambda v: ops.distributed_broadcast(v, CPU0), x)  # type: ignore[arg-type]


@pytest.mark.spec("DEV-9", "DEV-6")
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_scatter_gives_each_replica_group_its_chunk(k: int) -> None:
    chunks = [np.full(j + 1, j, np.int16) for j in range(k)]  # chunk j: j+1 copies of j
    for n in range(1, 7):
        devices = [DeviceRef.CPU(i % 4) for i in range(n)]
        per_group = -(-n // k)
        groups = [devices[j * per_group:(j + 1) * per_group] for j in range(k)]
        expected = [chunks[j].tolist() for j, g in enumerate(groups) for _ in g]
        out = run(lambda *c: ops.distributed_scatter(list(c), devices), *chunks)  # noqa: B023
        assert [o.tolist() for o in (out if n > 1 else [out])] == expected, (k, n)


@pytest.mark.spec("DEV-9")
@pytest.mark.parametrize("dt", list(DType), ids=str)
def test_scatter_copies_bits(dt: DType) -> None:
    a, b = special(dt, 4), special(dt, 3)[::-1].copy()
    out = run(lambda p, q: ops.distributed_scatter([p, q], [CPU1, CPU0, CPU2]), a, b)
    assert [np.array_equal(bits(o), bits(w)) for o, w in zip(out, [a, a, b], strict=True)] == \
        [True] * 3
    g = build(lambda p, q: ops.distributed_scatter([p, q], [CPU1, CPU0, CPU2]), a, b)
    assert [(t.device, t.shape) for t in g.output_types] == [(CPU1, (4,)), (CPU0, (4,)),
                                                              (CPU2, (3,))]


@pytest.mark.spec("distributed_scatter.C1", "distributed_scatter.C2", "GRAPH-4")
def test_scatter_errors() -> None:
    x = np.zeros(2, np.float32)
    with pytest.raises(GraphShapeError, match=r"distributed_scatter.C2"):
        build(lambda p, q: ops.distributed_scatter([p, ops.transfer_to(q, CPU1)], [CPU0, CPU1]),
              x, x)
    with pytest.raises(GraphShapeError, match=r"distributed_scatter.C2"):
        build(lambda p: ops.distributed_scatter([p], [CPU1, CPU2]), x)
    with pytest.raises(GraphTypeError, match=r"distributed_scatter.C1"):
        build(lambda p, q: ops.distributed_scatter([p, q], [CPU0]), x, x.astype(np.int32))
    with pytest.raises(GraphTypeError, match=r"distributed_scatter.C1"):
        build(lambda p: ops.distributed_scatter([p], []), x)
    with pytest.raises(GraphTypeError, match=r"GRAPH-4"):
        build(lambda p: ops.distributed_scatter([], [CPU0]), x)
