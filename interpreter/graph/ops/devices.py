"""Device graph-building functions: transfer and collectives (spec/devices.md)."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import GraphTypeError
from ...types import DeviceRef
from ..core import TensorValue
from .staging import stage, stage1


def transfer_to(x: TensorValue, device: DeviceRef) -> TensorValue:
    """A copy of ``x`` on ``device`` (DEV-3)."""
    return stage1("transfer", (x,), {"device": device})


def _values(op: str, values: Sequence[TensorValue]) -> tuple[TensorValue, ...]:
    vals = tuple(values)
    if not vals or not all(isinstance(v, TensorValue) for v in vals):
        raise GraphTypeError(f"{op}: expects a non-empty sequence of tensor values, got "
                             f"{values!r} [GRAPH-4]")
    return vals


def allreduce_sum(values: Sequence[TensorValue]) -> list[TensorValue]:
    """One result per operand: the sum of all operands, on that operand's device (DEV-4)."""
    return list(stage("allreduce_sum", _values("allreduce_sum", values)))  # type: ignore[arg-type]


def allgather(values: Sequence[TensorValue], axis: int = 0) -> list[TensorValue]:
    """One result per operand: all operands concatenated along ``axis`` (DEV-5)."""
    return list(stage("allgather", _values("allgather", values),  # type: ignore[arg-type]
                      {"axis": axis}))


def reducescatter_sum(values: Sequence[TensorValue], axis: int = 0) -> list[TensorValue]:
    """One result per operand: chunk ``i`` along ``axis`` of the sum of all operands, on
    operand ``i``'s device (DEV-7; MAX ``ops.reducescatter.sum`` without signal buffers)."""
    return list(stage("reducescatter_sum",  # type: ignore[arg-type]
                      _values("reducescatter_sum", values), {"axis": axis}))


def _devices(op: str, devices: Sequence[DeviceRef]) -> tuple[DeviceRef, ...]:
    if isinstance(devices, DeviceRef) or not isinstance(devices, Sequence):
        raise GraphTypeError(f"{op}: expects a sequence of DeviceRef, got {devices!r} "
                             f"[{op}.C1]")
    return tuple(devices)


def distributed_broadcast(input: TensorValue, devices: Sequence[DeviceRef]
                          ) -> list[TensorValue]:
    """One copy of ``input`` per device of ``devices``; ``input``'s device is the root
    (DEV-8; MAX takes the devices of its signal buffers)."""
    return list(stage("distributed_broadcast",  # type: ignore[arg-type]
                      _values("distributed_broadcast", [input]),
                      {"devices": _devices("distributed_broadcast", devices)}))


def distributed_scatter(input_chunks: Sequence[TensorValue], devices: Sequence[DeviceRef]
                        ) -> list[TensorValue]:
    """One result per device: the chunk of its replica group, copied from the root (DEV-9;
    MAX takes the devices of its signal buffers)."""
    return list(stage("distributed_scatter",  # type: ignore[arg-type]
                      _values("distributed_scatter", input_chunks),
                      {"devices": _devices("distributed_scatter", devices)}))


__all__ = [
    "allgather",
    "allreduce_sum",
    "distributed_broadcast",
    "distributed_scatter",
    "reducescatter_sum",
    "transfer_to",
]
