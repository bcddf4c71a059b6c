"""Tensors on device meshes: distribute, collectives, broadcast, scatter, gather
(spec/realization.md, REAL-41..43).

A mesh of CPUs (or one repeated device) is simulated: collectives run on the host.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import RealizationError
from ..graph import ops
from ..graph.core import TensorValue
from ..registry.devices import scatter_source
from ..types import DeviceRef
from .context import CURRENT
from .mesh import (
    DeviceMapping,
    DeviceMesh,
    Partial,
    Replicated,
    Sharded,
    Unknown,
    local_region,
)
from .staging import call, value_in
from .tensor import Tensor

__all__ = ["collective", "distribute", "gather_to", "mesh_broadcast", "mesh_scatter"]


def _shard_values(x: Tensor, ctx: Any) -> tuple[Any, ...]:
    st = x.state
    if st is not None and st.ctx.graph is not ctx.graph:
        x.realize_sync()
        st = None
    if st is None:
        if x.is_distributed:
            return tuple(ctx.add_source(x).values)
        return (value_in(x, ctx),)
    return tuple(st.values)


def _in_context(fn: Any) -> Tensor:
    t: Tensor = call(lambda: fn(CURRENT.get()), (), {})
    return t


def distribute(x: Tensor, target: DeviceMesh | DeviceMapping) -> Tensor:
    """Place a single-device tensor on a mesh (Replicated / Sharded placements, REAL-41)."""
    mapping = (target if isinstance(target, DeviceMapping)
               else DeviceMapping(target, tuple(Replicated() for _ in target.mesh_shape)))
    for p in mapping.placements:
        if isinstance(p, Partial | Unknown):
            raise ValueError(f"cannot distribute a tensor with a {p} placement [REAL-41]")
        if isinstance(p, Sharded) and not 0 <= p.axis < x.rank:
            raise ValueError(f"Sharded({p.axis}) is out of range for rank {x.rank} [REAL-41]")
    if x.is_distributed:
        x = gather_to(x, x.mesh.devices[0])

    def body(ctx: Any) -> Tensor:
        (v,) = _shard_values(x, ctx)
        values = []
        for i, dev in enumerate(mapping.mesh.devices):
            region = local_region(x.shape, mapping, mapping.mesh.device_coord(i))
            local = ops.slice_tensor(v, region) if x.rank else v
            values.append(ops.transfer_to(local, dev))
        out: Tensor = ctx.create_unrealized(tuple(values), mapping=mapping)
        return out

    return _in_context(body)


def _groups(mesh: DeviceMesh, axis: int) -> list[list[int]]:
    """Device indices grouped along mesh ``axis`` (the other coordinates fixed)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for i in range(mesh.num_devices):
        c = mesh.device_coord(i)
        groups.setdefault(c[:axis] + c[axis + 1:], []).append(i)
    return list(groups.values())


def _ensure_signal_buffers(ctx: Any, mesh: DeviceMesh) -> None:
    ensure = getattr(ctx, "ensure_signal_buffers", None)
    if ensure is not None and not mesh.is_simulated:
        ensure(mesh)


def collective(builder: Callable[..., list[TensorValue]], x: Tensor, mesh_axis: int | str,
               axis: int) -> Tensor:
    """Run the collective ``builder`` (``ops.allreduce_sum``, ``ops.allgather`` or
    ``ops.reducescatter_sum``) over each device group of ``mesh_axis`` (REAL-42).

    The result's placement on that axis becomes ``Replicated`` (``Sharded(axis)`` for
    ``reducescatter_sum``)."""
    mapping = x.mapping
    mesh = mapping.mesh
    mesh_axis = mesh.axis_index(mesh_axis)
    p = mapping.placements[mesh_axis]
    gathers = builder is ops.allgather
    scatters = builder is ops.reducescatter_sum  # else a sum
    expected = (Sharded, Unknown) if gathers else (Partial, Unknown)
    if not isinstance(p, expected):
        raise ValueError(f"{builder.__name__}: mesh axis {mesh_axis} is {p}; expected "
                         f"{expected[0].__name__} or Unknown [REAL-42]")
    if isinstance(p, Sharded):
        axis = p.axis
    placements = list(mapping.placements)
    placements[mesh_axis] = Replicated()
    if scatters:
        placements[mesh_axis] = _scatter_placement(mapping, mesh_axis, axis, x.rank)
    out_mapping = DeviceMapping(mesh, tuple(placements))

    def body(ctx: Any) -> Tensor:
        values = list(_shard_values(x, ctx))
        _ensure_signal_buffers(ctx, mesh)
        out: list[TensorValue | None] = [None] * len(values)
        for group in _groups(mesh, mesh_axis):
            operands = [values[i] for i in group]
            res = builder(operands, axis=axis) if gathers or scatters else builder(operands)
            for i, r in zip(group, res, strict=True):
                out[i] = r
        t: Tensor = ctx.create_unrealized(tuple(out), mapping=out_mapping)
        return t

    return _in_context(body)


def _scatter_placement(mapping: DeviceMapping, mesh_axis: int, axis: int, rank: int
                       ) -> Sharded:
    """``Sharded(axis)`` for a reduce-scatter along ``mesh_axis``: the tensor axis must
    exist and no later mesh axis may split it already (its pieces would nest the other way
    round than ``local_region`` reads them)."""
    if not -rank <= axis < rank:
        raise ValueError(f"reduce_scatter: scatter_axis {axis} is out of range for rank "
                         f"{rank} [REAL-42]")
    axis %= rank
    later = [i for i, q in enumerate(mapping.placements)
             if i > mesh_axis and isinstance(q, Sharded) and q.axis == axis]
    if later:
        raise ValueError(f"reduce_scatter: tensor axis {axis} is already sharded by mesh axis "
                         f"{later[0]}, after mesh axis {mesh_axis} [REAL-42]")
    return Sharded(axis)


def _on_root(v: TensorValue, mesh: DeviceMesh) -> TensorValue:
    """``v`` where a mesh collective can take it from: its device if the mesh has it, else
    a copy on the mesh's first device."""
    return v if v.type.device in mesh.devices else ops.transfer_to(v, mesh.devices[0])


def mesh_broadcast(x: Tensor, mesh: DeviceMesh) -> Tensor:
    """A single-device tensor copied to every device of ``mesh`` by one
    ``distributed_broadcast``: ``Replicated`` on every mesh axis (REAL-42)."""
    if x.is_distributed:
        raise ValueError(f"distributed_broadcast: the source tensor must not be distributed "
                         f"(it is on {x.mapping}) [REAL-42]")

    def body(ctx: Any) -> Tensor:
        (v,) = _shard_values(x, ctx)
        _ensure_signal_buffers(ctx, mesh)
        values = ops.distributed_broadcast(_on_root(v, mesh), mesh.devices)
        mapping = DeviceMapping(mesh, tuple(Replicated() for _ in mesh.mesh_shape))
        out: Tensor = ctx.create_unrealized(tuple(values), mapping=mapping)
        return out

    return _in_context(body)


def mesh_scatter(chunks: Sequence[Tensor], mesh: DeviceMesh) -> Tensor:
    """Chunk ``j`` of ``chunks`` on the ``j``-th group of consecutive devices of ``mesh`` by
    one ``distributed_scatter`` (DEV-9). A mesh axis along which the chunk does not change is
    ``Replicated``, any other ``Unknown`` (REAL-42)."""
    if not chunks or any(c.is_distributed for c in chunks):
        raise ValueError("distributed_scatter: expects one or more single-device tensors "
                         "[REAL-42]")
    if any(c.shape != chunks[0].shape for c in chunks):
        raise ValueError(f"distributed_scatter: chunk shapes {[list(c.shape) for c in chunks]}"
                         " differ; a distributed tensor has one shape [REAL-42]")
    n = mesh.num_devices
    source = [scatter_source(i, len(chunks), n) for i in range(n)]
    placements = []
    for a in range(mesh.ndim):
        first = [source[_with_coord(mesh, i, a, 0)] for i in range(n)]
        placements.append(Replicated() if first == source else Unknown())

    def body(ctx: Any) -> Tensor:
        values = [_shard_values(c, ctx)[0] for c in chunks]
        root = _on_root(values[0], mesh)
        values = [v if v.type.device == root.type.device else ops.transfer_to(
            v, root.type.device) for v in [root, *values[1:]]]
        _ensure_signal_buffers(ctx, mesh)
        shards = ops.distributed_scatter(values, mesh.devices)
        out: Tensor = ctx.create_unrealized(tuple(shards),
                                            mapping=DeviceMapping(mesh, tuple(placements)))
        return out

    return _in_context(body)


def _with_coord(mesh: DeviceMesh, index: int, axis: int, value: int) -> int:
    """The index of the device at ``index``'s coordinates with ``axis`` set to ``value``."""
    c = list(mesh.device_coord(index))
    c[axis] = value
    return int(np.ravel_multi_index(c, mesh.mesh_shape))


def gather_to(x: Tensor, device: DeviceRef) -> Tensor:
    """The global value of a distributed tensor on one device.

    Mesh axes are combined last to first: a tensor axis split by several mesh axes holds the
    later axes' pieces inside the earlier ones' (``local_region``)."""
    placements = x.mapping.placements
    if any(isinstance(p, Unknown) for p in placements):
        raise RealizationError("an Unknown placement must be combined by a collective "
                               "before it can be transferred [REAL-42]")
    y = x
    for i in reversed(range(len(placements))):
        p = placements[i]
        if isinstance(p, Sharded):
            y = collective(ops.allgather, y, i, p.axis)
        elif isinstance(p, Partial):
            y = collective(ops.allreduce_sum, y, i, 0)

    def body(ctx: Any) -> Tensor:
        v = _shard_values(y, ctx)[0]
        out: Tensor = ctx.create_unrealized((ops.transfer_to(v, device),))
        return out

    return _in_context(body)
