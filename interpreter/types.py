"""Devices and value types of the graph IR (spec/graph.md, GRAPH-1..3)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from .dtype import DType

__all__ = ["BufferType", "DeviceRef", "ShapedType", "TensorType", "ValueType"]


@dataclass(frozen=True, slots=True)
class DeviceRef:
    """A device a value lives on: ``DeviceRef.CPU(id)`` or ``DeviceRef.GPU(id)``."""

    device_type: Literal["cpu", "gpu"] = "cpu"
    id: int = 0

    @staticmethod
    def CPU(id: int = 0) -> DeviceRef:
        return DeviceRef("cpu", id)

    @staticmethod
    def GPU(id: int = 0) -> DeviceRef:
        return DeviceRef("gpu", id)

    def is_cpu(self) -> bool:
        return self.device_type == "cpu"

    def is_gpu(self) -> bool:
        return self.device_type == "gpu"

    def __str__(self) -> str:
        return f"{self.device_type}:{self.id}"

    @staticmethod
    def parse(text: str) -> DeviceRef:
        kind, _, num = text.partition(":")
        if kind not in ("cpu", "gpu") or not num.isdigit():
            raise ValueError(f"bad device {text!r}; expected 'cpu:N' or 'gpu:N'")
        return DeviceRef(kind, int(num))  # type: ignore[arg-type]


def _check_shape(shape: tuple[int, ...]) -> None:
    for d in shape:
        if not isinstance(d, int) or isinstance(d, bool) or d < 0:
            raise ValueError(f"shape {shape!r}: dimensions must be non-negative ints")


@dataclass(frozen=True, slots=True)
class ShapedType:
    """What tensor and buffer types share: dtype, static shape (non-negative ints), device.

    Types of different kinds never compare equal (``TensorType`` vs ``BufferType``)."""

    dtype: DType
    shape: tuple[int, ...]
    device: DeviceRef = DeviceRef()

    def __post_init__(self) -> None:
        if not isinstance(self.shape, tuple):
            object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        _check_shape(self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_elements(self) -> int:
        return math.prod(self.shape)

    def _dims(self) -> str:
        return f"{self.dtype.short}[{','.join(map(str, self.shape))}] {self.device}"


@dataclass(frozen=True, slots=True)
class TensorType(ShapedType):
    """An immutable (value-semantic) tensor: dtype, static shape, device (GRAPH-1)."""

    def as_buffer(self) -> BufferType:
        return BufferType(self.dtype, self.shape, self.device)

    def as_tensor(self) -> TensorType:
        return self

    def with_(self, *, dtype: DType | None = None, shape: tuple[int, ...] | None = None,
              device: DeviceRef | None = None) -> TensorType:
        return TensorType(dtype or self.dtype, self.shape if shape is None else shape,
                          device or self.device)

    def __str__(self) -> str:
        return f"tensor<{self._dims()}>"


@dataclass(frozen=True, slots=True)
class BufferType(ShapedType):
    """A mutable buffer: stores into it are side effects visible to the caller (GRAPH-2)."""

    def as_tensor(self) -> TensorType:
        return TensorType(self.dtype, self.shape, self.device)

    def as_buffer(self) -> BufferType:
        return self

    def __str__(self) -> str:
        return f"buffer<{self._dims()}>"


ValueType = TensorType | BufferType
