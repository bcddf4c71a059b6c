"""Device meshes, placements and mappings; simulated CPU meshes (spec/realization.md, REAL-4x).

A ``DeviceMesh`` arranges devices row-major in ``mesh_shape`` with named axes. A mesh whose
devices are all CPUs (or one device repeated) is *simulated*: collectives run on the host.
A ``DeviceMapping`` (mesh + one placement per mesh axis) says how a tensor's global value
relates to its per-device shards. Data only: moving tensors onto meshes and collectives are
in ``distributed``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..types import DeviceRef

__all__ = ["DeviceMapping", "DeviceMesh", "Partial", "Placement", "Replicated", "Sharded",
           "Unknown", "global_shape", "local_region"]


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


def local_region(shape: tuple[int, ...], mapping: DeviceMapping, coord: tuple[int, ...]
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
