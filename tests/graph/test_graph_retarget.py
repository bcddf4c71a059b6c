"""``interpreter.graph.retarget``: a whole graph moved to one device (EXEC-14)."""

from __future__ import annotations

import numpy as np
import pytest

from interpreter.executor import InterpreterExecutor
from interpreter.graph import BufferValue, DeviceRef, ops
from interpreter.graph.retarget import devices_of, retarget
from interpreter.testing import Buf, assert_same, build

CPU, CPU1, GPU0, GPU1 = DeviceRef.CPU(), DeviceRef.CPU(1), DeviceRef.GPU(0), DeviceRef.GPU(1)


def _mixed(b: BufferValue, x: object) -> object:
    """A store, a constant (device attribute), a transfer and a collective."""
    y = ops.transfer_to(x * 2.0 + ops.constant(1.0), CPU1)  # type: ignore[operator]
    s = ops.allreduce_sum([x, y])  # type: ignore[list-item]
    ops.buffer_store(b, ops.buffer_load(b) + s[0])
    return s[1], ops.buffer_load(b)


@pytest.mark.spec("EXEC-14")
def test_retarget_moves_every_type_and_device_attribute() -> None:
    x = np.array([1.0, -0.0, np.nan], np.float32)
    buf = np.array([10.0, 20.0, 30.0], np.float32)
    g = build(_mixed, Buf(buf), x, name="mixed")
    assert devices_of(g) == {CPU, CPU1}
    gpu = retarget(g, GPU1)
    assert devices_of(gpu) == {GPU1}
    assert [str(t) for t in gpu.input_types] == ["buffer<f32[3] gpu:1>", "tensor<f32[3] gpu:1>"]
    assert [str(t) for t in gpu.output_types] == ["tensor<f32[3] gpu:1>"] * 2
    assert [n.op.name for n in gpu.nodes] == [n.op.name for n in g.nodes]
    assert [n.location for n in gpu.nodes] == [n.location for n in g.nodes]
    assert gpu.name == g.name and devices_of(g) == {CPU, CPU1}  # the original is unchanged
    back = retarget(gpu)
    assert devices_of(back) == {CPU}
    # the CPU copy computes what the original computes (the reference serves only CPUs)
    ref = InterpreterExecutor()
    assert ref.refusal(gpu) is not None and ref.refusal(back) is None
    want_buf, got_buf = buf.copy(), buf.copy()
    want = ref.execute(g, [want_buf, x])
    got = ref.execute(back, [got_buf, x])
    for w, o in zip(want, got, strict=True):
        assert_same(o, w)
    assert_same(got_buf, want_buf)
    assert_same(got_buf, np.array([14.0, 21.0, np.nan], np.float32))


@pytest.mark.spec("EXEC-14")
def test_retarget_keeps_structure_and_attributes() -> None:
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    g = build(lambda x: ops.sum(x, axis=1) * 3, x, name="red")
    gpu = retarget(g, GPU0)
    assert [n.attrs for n in gpu.nodes if n.op.name == "sum"] == \
        [n.attrs for n in g.nodes if n.op.name == "sum"]
    assert retarget(gpu).to_text() == g.to_text()
    assert gpu.to_text() != g.to_text() and "gpu:0" in gpu.to_text()


@pytest.mark.spec("EXEC-14")
def test_retarget_moves_the_devices_of_a_tuple_attribute() -> None:
    """``distributed_broadcast``'s ``devices``: every device of the tuple moves (one each)."""
    x = np.array([1.5, -0.0], np.float32)
    g = build(lambda x: ops.distributed_broadcast(x, [CPU1, CPU, CPU1]), x)
    assert devices_of(g) == {CPU, CPU1}
    gpu = retarget(g, GPU0)
    assert devices_of(gpu) == {GPU0}
    assert gpu.nodes[0].attrs == {"devices": (GPU0, GPU0, GPU0)}
    out = InterpreterExecutor().execute(retarget(gpu), [x])
    assert len(out) == 3 and all(np.array_equal(o.view(np.uint32), x.view(np.uint32))
                                 for o in out)
