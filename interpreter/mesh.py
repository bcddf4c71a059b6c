"""Device meshes, placements and mappings; simulated CPU meshes (spec/realization.md, REAL-4x).

A ``DeviceMesh`` arranges devices row-major in ``mesh_shape`` with named axes. A mesh whose
devices are all CPUs (or one device repeated) is *simulated*: collectives run on the host.
A ``DeviceMapping`` (mesh + one placement per mesh axis) says how a tensor's global value
relates to its per-device shards.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import RealizationError
from .graph import ops
from .graph.core import TensorValue
from .tensor import _CONTEXT, Tensor
from .types import DeviceRef

__all__ = ["DeviceMapping", "DeviceMesh", "Partial", "Replicated", "Sharded", "Unknown"]


@dataclass(frozen=True)
class Replicated:
    """Every device holds the whole value."""


@dataclass(frozen=True)
class Sharded:
    """The value is split along tensor ``axis`` (sizes differ by <= 1, larger first)."""

    axis: int


@dataclass(frozen=True)
class Partial:
    """The value is the reduction (sum) of the per-device values."""

    reduce_op: str = "sum"


@dataclass(frozen=True)
class Unknown:
    """Per-device values with no stated relation (combine with a collective)."""


Placement = Replicated | Sharded | Partial | Unknown


@dataclass(frozen=True)
class DeviceMesh:
    """Devices arranged row-major in ``mesh_shape`` with unique ``axis_names`` (REAL-43)."""

    devices: tuple[DeviceRef, ...]
    mesh_shape: tuple[int, ...]
    axis_names: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "devices", tuple(self.devices))
        object.__setattr__(self, "mesh_shape", tuple(int(d) for d in self.mesh_shape))
        names = tuple(self.axis_names) or tuple(f"axis{i}" for i in range(len(self.mesh_shape)))
        object.__setattr__(self, "axis_names", names)
        if not self.devices:
            raise ValueError("DeviceMesh needs at least one device [REAL-43]")
        if math.prod(self.mesh_shape) != len(self.devices):
            raise ValueError(f"DeviceMesh: mesh_shape {list(self.mesh_shape)} does not hold "
                             f"{len(self.devices)} devices [REAL-43]")
        if len(names) != len(self.mesh_shape) or len(set(names)) != len(names):
            raise ValueError(f"DeviceMesh: axis names {names} must be unique, one per mesh "
                             "axis [REAL-43]")
        distinct = set(self.devices)
        if len(distinct) not in (1, len(self.devices)):
            raise ValueError("DeviceMesh: devices must be all identical (simulated) or all "
                             "distinct [REAL-43]")

    @staticmethod
    def single(device: DeviceRef) -> DeviceMesh:
        return DeviceMesh((device,), (1,), ("_",))

    @property
    def ndim(self) -> int:
        return len(self.mesh_shape)

    @property
    def num_devices(self) -> int:
        return len(self.devices)

    @property
    def is_simulated(self) -> bool:
        """All CPUs, or one device repeated: collectives run on the host (REAL-43)."""
        return all(d.is_cpu() for d in self.devices) or len(set(self.devices)) == 1

    def axis_index(self, axis: int | str) -> int:
        return self.axis_names.index(axis) if isinstance(axis, str) else int(axis)

    def axis_size(self, axis: int | str) -> int:
        return self.mesh_shape[self.axis_index(axis)]

    def device_coord(self, index: int) -> tuple[int, ...]:
        return tuple(int(c) for c in np.unravel_index(index, self.mesh_shape))


@dataclass(frozen=True)
class DeviceMapping:
    """A mesh and one placement per mesh axis (REAL-43)."""

    mesh: DeviceMesh
    placements: tuple[Placement, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "placements", tuple(self.placements))
        if len(self.placements) != self.mesh.ndim:
            raise ValueError(f"DeviceMapping: {len(self.placements)} placements for a "
                             f"{self.mesh.ndim}-axis mesh [REAL-43]")

    @staticmethod
    def single(device: DeviceRef) -> DeviceMapping:
        return DeviceMapping(DeviceMesh.single(device), (Replicated(),))


def _split_sizes(n: int, parts: int) -> list[int]:
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def _local_region(shape: tuple[int, ...], mapping: DeviceMapping, coord: tuple[int, ...]
                  ) -> tuple[slice, ...]:
    """The region of the global value that device ``coord`` holds."""
    bounds = [(0, d) for d in shape]
    for i, p in enumerate(mapping.placements):
        if isinstance(p, Sharded):
            lo, hi = bounds[p.axis]
            sizes = _split_sizes(hi - lo, mapping.mesh.mesh_shape[i])
            start = lo + sum(sizes[:coord[i]])
            bounds[p.axis] = (start, start + sizes[coord[i]])
    return tuple(slice(a, b) for a, b in bounds)


def global_shape(shapes: Sequence[tuple[int, ...]], mapping: DeviceMapping) -> tuple[int, ...]:
    """The global shape from per-device shard shapes."""
    out = list(shapes[0])
    mesh = mapping.mesh
    for i, p in enumerate(mapping.placements):
        if isinstance(p, Sharded):
            total = 0
            for k in range(mesh.mesh_shape[i]):
                coord = [0] * mesh.ndim
                coord[i] = k
                idx = int(np.ravel_multi_index(coord, mesh.mesh_shape))
                total += shapes[idx][p.axis]
            out[p.axis] = total
    return tuple(out)


def _shard_values(x: Tensor, ctx: Any) -> tuple[Any, ...]:
    st = x._state
    if st is not None and st.ctx.graph is not ctx.graph:
        x._sync_realize()
        st = None
    if st is None:
        if x.is_distributed:
            return tuple(ctx.add_source(x).values)
        from .functional import _value_in

        return (_value_in(x, ctx),)
    return tuple(st.values)


def _in_context(fn: Any) -> Tensor:
    from .functional import _call

    t: Tensor = _call(lambda: fn(_CONTEXT.get()), (), {})
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
            region = _local_region(x.shape, mapping, mapping.mesh.device_coord(i))
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


def collective(name: str, x: Tensor, mesh_axis: int, axis: int) -> Tensor:
    """Run ``allreduce_sum``/``allgather`` over each device group of ``mesh_axis`` (REAL-42).

    The result's placement on that axis becomes ``Replicated``."""
    mapping = x.mapping
    mesh = mapping.mesh
    mesh_axis = mesh.axis_index(mesh_axis)
    p = mapping.placements[mesh_axis]
    if name == "allreduce_sum" and not isinstance(p, Partial | Unknown):
        raise ValueError(f"allreduce_sum: mesh axis {mesh_axis} is {p}; expected Partial or "
                         "Unknown [REAL-42]")
    if name == "allgather":
        if isinstance(p, Sharded):
            axis = p.axis
        elif not isinstance(p, Unknown):
            raise ValueError(f"allgather: mesh axis {mesh_axis} is {p}; expected Sharded or "
                             "Unknown [REAL-42]")
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
            if name == "allreduce_sum":
                res = ops.allreduce_sum(operands)
            else:
                res = ops.allgather(operands, axis=axis)
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
            y = collective("allgather", y, i, p.axis)
        elif isinstance(p, Partial):
            y = collective("allreduce_sum", y, i, 0)
        elif isinstance(p, Unknown):
            raise RealizationError("an Unknown placement must be combined by a collective "
                                   "before it can be transferred [REAL-42]")

    def body(ctx: Any) -> Tensor:
        v = _shard_values(y, ctx)[0]
        out: Tensor = ctx.create_unrealized((ops.transfer_to(v, device),))
        return out

    return _in_context(body)
