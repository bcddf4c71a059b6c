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


def _partial(mesh: DeviceMesh, arrays: list[np.ndarray]) -> Tensor:
    """A ``Partial`` tensor on a 1-axis mesh whose shards are ``arrays`` (in an eager
    context, realized on return)."""
    sources = [Tensor.from_dlpack(a).to(d) for a, d in zip(arrays, mesh.devices, strict=True)]
    ctx = EagerRealizationContext()
    with ctx, realization_context(ctx):
        values = [ctx.add_source(s).value for s in sources]
        placements = tuple(Partial() for _ in mesh.mesh_shape)
        t = Tensor.from_shard_values(values, DeviceMapping(mesh, placements))
    return t


@pytest.mark.spec("REAL-42", "DEV-7")
def test_reduce_scatter_leaves_each_device_its_chunk() -> None:
    mesh = DeviceMesh((CPU0, CPU1, DeviceRef.CPU(2)), (3,), ("x",))
    parts = [np.arange(10, dtype=np.float32).reshape(5, 2) * k for k in (1, 2, 4)]
    t = _partial(mesh, parts)
    r = F.reduce_scatter(t, scatter_axis=0, mesh_axis="x")
    assert r.placements == (Sharded(0),) and r.shape == (5, 2)
    total = (parts[0] + parts[1] + parts[2]).tolist()  # 7 * arange, exact
    assert [s.to_numpy().tolist() for s in r.local_shards] == [total[:2], total[2:4], total[4:]]
    assert [s.device for s in r.local_shards] == list(mesh.devices)
    assert_same(r.to(CPU0).to_numpy(), np.arange(10, dtype=np.float32).reshape(5, 2) * 7)
    last = F.reduce_scatter(t, scatter_axis=-1)
    assert last.placements == (Sharded(1),)
    assert [s.to_numpy().tolist() for s in last.local_shards] == [
        [[v[0]] for v in total], [[v[1]] for v in total], [[] for _ in total]]
    with pytest.raises(ValueError, match="expected Partial"):
        F.reduce_scatter(r)
    with pytest.raises(ValueError, match=r"scatter_axis 2 is out of range.*REAL-42"):
        F.reduce_scatter(t, scatter_axis=2)


@pytest.mark.spec("REAL-42", "DEV-7")
def test_reduce_scatter_on_a_grid_nests_inside_an_earlier_split() -> None:
    grid = DeviceMesh(tuple(DeviceRef.CPU(i) for i in range(4)), (2, 2), ("dp", "tp"))
    x = np.arange(12, dtype=np.int32).reshape(6, 2)
    sharded = Tensor.from_dlpack(x).to(DeviceMapping(grid, (Sharded(0), Replicated())))
    ctx = EagerRealizationContext()
    with ctx, realization_context(ctx):
        values = [ctx.add_source(s).value for s in sharded.local_shards]
        t = Tensor.from_shard_values(values, DeviceMapping(grid, (Sharded(0), Partial())))
    r = F.reduce_scatter(t, scatter_axis=0, mesh_axis="tp")
    assert r.placements == (Sharded(0), Sharded(0))
    # rows 0-2 on dp=0 (summed over tp: twice), cut 2 + 1 over tp; rows 3-5 on dp=1 alike
    assert [s.to_numpy().tolist() for s in r.local_shards] == [
        (2 * x[0:2]).tolist(), (2 * x[2:3]).tolist(), (2 * x[3:5]).tolist(),
        (2 * x[5:6]).tolist()]
    assert_same(r.to(CPU0).to_numpy(), 2 * x)
    nested = Tensor.from_dlpack(x).to(DeviceMapping(grid, (Sharded(0), Sharded(0))))
    assert_same(nested.to(CPU0).to_numpy(), x)  # gathered inner mesh axis first
    fresh = EagerRealizationContext()  # a later mesh axis already splitting axis 0: refused
    with fresh, realization_context(fresh):
        values = [fresh.add_source(s).value for s in sharded.local_shards]
        later = Tensor.from_shard_values(values, DeviceMapping(grid, (Partial(), Sharded(0))))
    with pytest.raises(ValueError, match=r"already sharded by mesh axis 1.*REAL-42"):
        F.reduce_scatter(later, scatter_axis=0, mesh_axis=0)


@pytest.mark.spec("REAL-42", "DEV-8")
def test_distributed_broadcast_replicates_a_single_device_tensor() -> None:
    mesh = DeviceMesh((CPU0, CPU1), (2,), ("x",))
    x = np.array([1.5, -0.0, np.nan], np.float32)
    b = F.distributed_broadcast(Tensor.from_dlpack(x).to(CPU1), mesh)
    assert b.placements == (Replicated(),) and b.shape == (3,)
    for s, d in zip(b.local_shards, mesh.devices, strict=True):
        assert s.device == d
        assert_same(s.to_numpy(), x)
    off_mesh = F.distributed_broadcast(Tensor.from_dlpack(x).to(DeviceRef.CPU(5)), mesh)
    assert [s.device for s in off_mesh.local_shards] == [CPU0, CPU1]
    lazy = LazyRealizationContext()
    with lazy, realization_context(lazy):
        pending = F.distributed_broadcast(Tensor.from_dlpack(x) * 2, mesh)
        assert not pending.real
    assert_same(pending.to(CPU1).to_numpy(), x * 2)
    with pytest.raises(ValueError, match=r"must not be distributed.*REAL-42"):
        F.distributed_broadcast(b, mesh)


@pytest.mark.spec("REAL-42", "DEV-9")
def test_distributed_scatter_gives_each_replica_group_its_chunk() -> None:
    grid = DeviceMesh(tuple(DeviceRef.CPU(i) for i in range(6)), (3, 2), ("dp", "tp"))
    chunks = [Tensor.from_dlpack(np.full((2,), k, np.int64)) for k in range(3)]
    s = F.distributed_scatter(chunks, grid)
    assert s.placements == (Unknown(), Replicated())
    assert [sh.to_numpy().tolist() for sh in s.local_shards] == [
        [0, 0], [0, 0], [1, 1], [1, 1], [2, 2], [2, 2]]
    line = DeviceMesh((CPU0, CPU1, DeviceRef.CPU(2)), (3,), ("x",))
    one = F.distributed_scatter([chunks[2].to(CPU1)], line)  # one chunk: every device
    assert one.placements == (Replicated(),)
    assert [sh.to_numpy().tolist() for sh in one.local_shards] == [[2, 2]] * 3
    mixed = F.distributed_scatter([chunks[0].to(CPU1), chunks[1]], line)  # moved to the root
    assert [sh.to_numpy().tolist() for sh in mixed.local_shards] == [[0, 0], [0, 0], [1, 1]]
    with pytest.raises(ValueError, match=r"chunk shapes.*REAL-42"):
        F.distributed_scatter([chunks[0], Tensor.from_dlpack(np.zeros(3, np.int64))], line)
    with pytest.raises(ValueError, match=r"single-device tensors.*REAL-42"):
        F.distributed_scatter([], line)


@pytest.mark.spec("REAL-42", "DEV-7")
def test_reducescatter_sum_on_a_list_of_tensors() -> None:
    a = Tensor.from_dlpack(np.array([1, 2, 3], np.int16))
    b = Tensor.from_dlpack(np.array([10, 20, 30], np.int16)).to(CPU1)
    out = F.reducescatter_sum([a, b])
    assert [t.to_numpy().tolist() for t in out] == [[11, 22], [33]]
    assert [t.device for t in out] == [CPU0, CPU1]
