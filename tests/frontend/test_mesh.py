"""Devices, meshes, mappings, collectives and signal buffers (REAL-22, REAL-40..43)."""

from __future__ import annotations

import numpy as np
import pytest

import interpreter.experimental.functional as F
from interpreter.dtype import DType
from interpreter.errors import RealizationError
from interpreter.experimental.mesh import (
    DeviceMapping,
    DeviceMesh,
    Partial,
    Replicated,
    Sharded,
    Unknown,
)
from interpreter.experimental.realization_context import (
    EagerRealizationContext,
    LazyRealizationContext,
)
from interpreter.experimental.tensor import Tensor, realization_context
from interpreter.graph import BufferValue, DeviceRef, Graph
from interpreter.testing import assert_same

CPU0, CPU1 = DeviceRef.CPU(0), DeviceRef.CPU(1)


@pytest.mark.spec("REAL-43")
def test_mesh_validation() -> None:
    mesh = DeviceMesh((CPU0, CPU1), (2,), ("x",))
    assert mesh.is_simulated and mesh.num_devices == 2 and mesh.ndim == 1
    assert mesh.axis_size("x") == 2
    grid = DeviceMesh(tuple(DeviceRef.CPU(i) for i in range(6)), (2, 3), ("a", "b"))
    assert grid.device_coord(4) == (1, 1)
    assert DeviceMesh((DeviceRef.GPU(0),) * 2, (2,), ("x",)).is_simulated
    assert not DeviceMesh((DeviceRef.GPU(0), DeviceRef.GPU(1)), (2,), ("x",)).is_simulated
    with pytest.raises(ValueError, match="at least one"):
        DeviceMesh((), (0,), ("x",))
    with pytest.raises(ValueError, match="does not hold"):
        DeviceMesh((CPU0, CPU1), (3,), ("x",))
    with pytest.raises(ValueError, match="unique"):
        DeviceMesh((CPU0, CPU1), (1, 2), ("x", "x"))
    with pytest.raises(ValueError, match="all identical"):
        DeviceMesh((CPU0, CPU0, CPU1), (3,), ("x",))
    with pytest.raises(ValueError, match="placements"):
        DeviceMapping(mesh, (Replicated(), Replicated()))


@pytest.mark.spec("REAL-41", "REAL-22")
def test_distribute_sharded_and_replicated() -> None:
    mesh = DeviceMesh((CPU0, CPU1), (2,), ("x",))
    t = Tensor.from_dlpack(np.arange(5, dtype=np.float32))
    s = t.to(DeviceMapping(mesh, (Sharded(0),)))
    assert s.real and s.is_distributed and s.shape == (5,) and s.num_shards == 2
    shards = s.local_shards
    assert [sh.to_numpy().tolist() for sh in shards] == [[0.0, 1.0, 2.0], [3.0, 4.0]]
    assert [sh.device for sh in shards] == [CPU0, CPU1]
    r = F.transfer_to(t, mesh)
    assert [sh.to_numpy().tolist() for sh in r.local_shards] == [[0.0, 1, 2, 3, 4]] * 2
    with pytest.raises(ValueError, match="distributed"):
        _ = s.device
    with pytest.raises(TypeError, match="distributed"):
        _ = s + 1
    assert "mapping=" in repr(s)
    back = s.to(CPU0)
    assert back.device == CPU0 and back.to_numpy().tolist() == [0.0, 1, 2, 3, 4]


@pytest.mark.spec("REAL-22")
def test_an_op_on_a_distributed_tensor_says_so_in_every_context() -> None:
    """Eager, in a lazy context and in a graph context: one RealizationError naming the
    mapping and what to use instead."""
    mesh = DeviceMesh((CPU0, CPU1), (2,), ("x",))
    s = Tensor.from_dlpack(np.arange(4, dtype=np.float32)).to(DeviceMapping(mesh, (Sharded(0),)))
    want = r"ops on a distributed tensor \(.*\) are not supported; use local_shards.*\[REAL-22\]"
    with pytest.raises(RealizationError, match=want):
        _ = s * 2.0
    lazy = LazyRealizationContext()
    with lazy, realization_context(lazy), pytest.raises(RealizationError, match=want):
        _ = s + s
    with Graph("g"), pytest.raises(RealizationError, match=want):
        F.exp(s)


@pytest.mark.spec("REAL-42")
def test_allreduce_and_allgather_on_a_simulated_mesh() -> None:
    mesh = DeviceMesh((CPU0, CPU1), (2,), ("x",))
    a = Tensor.from_dlpack(np.array([1.0, 2.0], np.float32)).to(CPU0)
    b = Tensor.from_dlpack(np.array([10.0, 20.0], np.float32)).to(CPU1)
    ctx = EagerRealizationContext()
    with ctx, realization_context(ctx):
        va, vb = ctx.add_source(a).value, ctx.add_source(b).value
        partial = Tensor.from_shard_values([va, vb], DeviceMapping(mesh, (Partial(),)))
        total = F.allreduce_sum(partial)
        unknown = Tensor.from_shard_values([va, vb], DeviceMapping(mesh, (Unknown(),)))
        gathered = F.allgather(unknown, axis=0)
    assert total.placements == (Replicated(),)
    assert [sh.to_numpy().tolist() for sh in total.local_shards] == [[11.0, 22.0]] * 2
    assert [sh.to_numpy().tolist() for sh in gathered.local_shards] == [[1.0, 2, 10, 20]] * 2
    sharded = Tensor.from_dlpack(np.arange(4, dtype=np.int32)).to(
        DeviceMapping(mesh, (Sharded(0),)))
    full = F.allgather(sharded)
    assert [sh.to_numpy().tolist() for sh in full.local_shards] == [[0, 1, 2, 3]] * 2
    with pytest.raises(ValueError, match="expected Partial"):
        F.allreduce_sum(sharded)


@pytest.mark.spec("REAL-40")
def test_signal_buffers() -> None:
    ctx = EagerRealizationContext()
    assert ctx.ensure_signal_buffers(DeviceMesh((CPU0, CPU1), (2,), ("x",))) is None
    assert ctx.ensure_signal_buffers(DeviceMesh.single(DeviceRef.GPU(0))) is None
    gpus = DeviceMesh((DeviceRef.GPU(0), DeviceRef.GPU(1)), (2,), ("x",))
    n = len(ctx.graph.inputs)
    bufs = ctx.ensure_signal_buffers(gpus)
    assert bufs is not None and len(bufs) == 2 and len(ctx.graph.inputs) == n + 2
    assert all(isinstance(b, BufferValue) and b.type.dtype is DType.uint8 for b in bufs)
    assert [b.type.device for b in bufs] == [DeviceRef.GPU(0), DeviceRef.GPU(1)]
    assert ctx.ensure_signal_buffers(gpus) is bufs
    other = EagerRealizationContext()
    bufs2 = other.ensure_signal_buffers(gpus)
    assert bufs2 is not None
    first = [(ctx.sources[b].storages or ())[0] for b in bufs]
    second = [(other.sources[b].storages or ())[0] for b in bufs2]
    assert all(x is y for x, y in zip(first, second, strict=True))


@pytest.mark.spec("REAL-41")
def test_device_transfer_in_a_graph() -> None:
    ctx = EagerRealizationContext()
    x = Tensor.from_dlpack(np.array([1.0], np.float32))
    with ctx, realization_context(ctx):
        y = (x + 1).to(CPU1)
        assert not y.real and y.device == CPU1
    assert_same(y.to_numpy(), np.array([2.0], np.float32))
