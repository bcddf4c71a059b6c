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


__all__ = [
    "allgather",
    "allreduce_sum",
    "transfer_to",
]
