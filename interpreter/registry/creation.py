"""Ops that create tensors from attributes: constant, range (spec/ops/)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..dtype import DType
from ..types import DeviceRef, TensorType, ValueType
from .core import EXACT, Attrs, OpDef, register
from .dtypesets import ALL, NUMERIC


def _constant_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                    ) -> tuple[ValueType, ...]:
    value, device = attrs.get("value"), attrs.get("device")
    if not isinstance(value, np.ndarray):
        op.fail(types, "constant.C1", f"attribute value must be a numpy array, got "
                f"{type(value).__name__}")
    if not isinstance(device, DeviceRef):
        op.fail(types, "constant.C2", f"attribute device must be a DeviceRef, got {device!r}")
    dtype = DType.from_numpy(value.dtype)
    return (TensorType(dtype, tuple(value.shape), device),)


def _constant(*, value: np.ndarray, device: DeviceRef) -> np.ndarray:
    return value  # read-only; outputs are copied when not fresh (EXEC-5)


register(OpDef("constant", "A tensor whose value is an attribute (stored read-only).",
               "creation", (), ("value", "device"), _constant_infer, _constant, ALL, EXACT))


def range_length(start: float, stop: float, step: float) -> int:
    """Number of elements of ``range(start, stop, step)``: ceil((stop - start) / step), >= 0."""
    return max(0, math.ceil((stop - start) / step))


def _range_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    start, stop, step = attrs.get("start"), attrs.get("stop"), attrs.get("step")
    dtype, device = attrs.get("dtype"), attrs.get("device")
    if not isinstance(dtype, DType) or not isinstance(device, DeviceRef):
        op.fail(types, "range.C1", "attributes dtype and device must be a DType and DeviceRef")
    op.check_dtype(types, dtype, what="result")
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
            op.fail(types, "range.C2", f"attribute {name}={v!r} must be a finite number")
        if dtype.is_integral() and not isinstance(v, int):
            op.fail(types, "range.C2", f"attribute {name}={v!r} must be an int for {dtype}")
    if step == 0:
        op.fail(types, "range.C3", "step must not be 0")
    return (TensorType(dtype, (range_length(start, stop, step),), device),)


def _range(*, start: Any, stop: Any, step: Any, dtype: DType, device: DeviceRef
           ) -> np.ndarray:
    n = range_length(start, stop, step)
    if dtype.is_integral():
        return (start + step * np.arange(n, dtype=np.int64)).astype(dtype.to_numpy())
    return (start + step * np.arange(n, dtype=np.float64)).astype(dtype.to_numpy())


register(OpDef("range", "start + i * step for i in [0, ceil((stop - start) / step)).",
               "creation", (), ("start", "stop", "step", "dtype", "device"), _range_infer,
               _range, NUMERIC, EXACT))
