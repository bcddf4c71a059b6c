"""Tensors on device meshes: distribute, collectives, gather (spec/realization.md, REAL-41..43).

A mesh of CPUs (or one repeated device) is simulated: collectives run on the host.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import RealizationError
from ..graph import ops
from ..graph.core import TensorValue
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

__all__ = ["collective", "distribute", "gather_to"]


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


def collective(builder: Callable[..., list[TensorValue]], x: Tensor, mesh_axis: int,
               axis: int) -> Tensor:
    """Run the collective ``builder`` (``ops.allreduce_sum`` or ``ops.allgather``) over each
    device group of ``mesh_axis`` (REAL-42).

    The result's placement on that axis becomes ``Replicated``."""
    mapping = x.mapping
    mesh = mapping.mesh
    mesh_axis = mesh.axis_index(mesh_axis)
    p = mapping.placements[mesh_axis]
    gathers = builder is ops.allgather  # else a sum
    expected = (Sharded, Unknown) if gathers else (Partial, Unknown)
    if not isinstance(p, expected):
        raise ValueError(f"{builder.__name__}: mesh axis {mesh_axis} is {p}; expected "
                         f"{expected[0].__name__} or Unknown [REAL-42]")
    if isinstance(p, Sharded):
        axis = p.axis
    placements = list(mapping.placements)
    placements[mesh_axis] = Replicated()
    out_mapping = DeviceMapping(mesh, tuple(placements))

    def body(ctx: Any) -> Tensor:
        values = list(_shard_values(x, ctx))
        ensure = getattr(ctx, "ensure_signal_buffers", None)
        if ensure is not None and not mesh.is_simulated:
            ensure(mesh)
        out: list[TensorValue | None] = [None] * len(values)
        for group in _groups(mesh, mesh_axis):
            operands = [values[i] for i in group]
            res = builder(operands, axis=axis) if gathers else builder(operands)
            for i, r in zip(group, res, strict=True):
                out[i] = r
        t: Tensor = ctx.create_unrealized(tuple(out), mapping=out_mapping)
        return t

    return _in_context(body)


def gather_to(x: Tensor, device: DeviceRef) -> Tensor:
    """The global value of a distributed tensor on one device."""
    mapping = x.mapping
    y = x
    for i, p in enumerate(mapping.placements):
        if isinstance(p, Sharded):
            y = collective(ops.allgather, y, i, p.axis)
        elif isinstance(p, Partial):
            y = collective(ops.allreduce_sum, y, i, 0)
        elif isinstance(p, Unknown):
            raise RealizationError("an Unknown placement must be combined by a collective "
                                   "before it can be transferred [REAL-42]")

    def body(ctx: Any) -> Tensor:
        v = _shard_values(y, ctx)[0]
        out: Tensor = ctx.create_unrealized((ops.transfer_to(v, device),))
        return out

    return _in_context(body)
