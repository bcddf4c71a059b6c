"""Ops that create tensors from attributes: constant, range (spec/ops/)."""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..dtype import DType
from ..errors import GraphTypeError
from ..rounding import round_f64
from ..types import DeviceRef, TensorType, ValueType
from .attrtypes import NUMBER, AttrType
from .core import EXACT, ArgSource, Attrs, OpCall, OpDef, register
from .dtypesets import ALL, NUMERIC

__all__ = [
    "range_length",
]

_FROM_NUMPY = {d.to_numpy(): d for d in DType}


def _constant_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                    ) -> tuple[ValueType, ...]:
    value, device = attrs.get("value"), attrs.get("device")
    if not isinstance(value, np.ndarray) or (dtype := _FROM_NUMPY.get(value.dtype)) is None:
        shown = value.dtype if isinstance(value, np.ndarray) else type(value).__name__
        op.fail(types, "constant.C1", f"attribute value must be a numpy array of a supported "
                f"dtype, got {shown}", GraphTypeError)
    if not isinstance(device, DeviceRef):
        op.fail(types, "constant.C2", f"attribute device must be a DeviceRef, got {device!r}",
                GraphTypeError)
    return (TensorType(dtype, value.shape, device),)


def _constant(*, value: np.ndarray, device: DeviceRef) -> np.ndarray:
    view = value.view()
    view.flags.writeable = False  # a read-only view: outputs get copied (EXEC-5)
    return view


def _sample_constant(src: ArgSource) -> OpCall:
    dtype = src.dtype(ALL, data=True)
    value = src.values(dtype, src.shape())
    value.flags.writeable = False
    return OpCall([], {"value": value, "device": DeviceRef.CPU(src.integer(0, 1))})


register(OpDef("constant", summary="A tensor whose value is an attribute (stored read-only).",
               category="creation", operands=(), attrs=("value", "device"), infer=_constant_infer,
               kernel=_constant, dtypes=ALL, tolerance=EXACT, sample=_sample_constant,
               traits=frozenset({"literal", "byte-copy", "compile-time"}),
               attr_types={"value": AttrType(
                   "numpy.ndarray", lambda v: type(v) is np.ndarray and not v.flags.writeable,
                   "read-only; its dtype is the result dtype's numpy dtype "
                   "(`DType.to_numpy()`: ml_dtypes types for bfloat16 and float8) and its "
                   "shape the result shape; any memory layout (use "
                   "`np.asarray`/`np.ascontiguousarray`)")}))


def range_length(start: float, stop: float, step: float) -> int:
    """Number of elements: exact ``len(range(...))`` for ints, else ceil((stop-start)/step)."""
    if all(isinstance(v, int) for v in (start, stop, step)):
        return len(builtins.range(int(start), int(stop), int(step)))
    return max(0, math.ceil((stop - start) / step))


def _range_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    start, stop, step = attrs.get("start"), attrs.get("stop"), attrs.get("step")
    dtype, device = attrs.get("dtype"), attrs.get("device")
    if not isinstance(dtype, DType) or not isinstance(device, DeviceRef):
        op.fail(types, "range.C1", f"attributes dtype and device must be a DType and a "
                f"DeviceRef, got {dtype!r} and {device!r}", GraphTypeError)
    op.check_dtype(types, dtype, what="result")
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
            op.fail(types, "range.C2", f"attribute {name}={v!r} must be a finite number")
        if dtype.is_integral() and not isinstance(v, int):
            op.fail(types, "range.C2", f"attribute {name}={v!r} must be an int for "
                    f"{dtype.value}")
    assert isinstance(start, int | float) and isinstance(stop, int | float)
    assert isinstance(step, int | float)
    if step == 0:
        op.fail(types, "range.C3", "step must not be 0")
    n = range_length(start, stop, step)
    if dtype.is_integral() and n:
        info = np.iinfo(dtype.to_numpy())
        last = start + (n - 1) * step
        if not (info.min <= start <= info.max and info.min <= last <= info.max):
            op.fail(types, "range.C2", f"values {start}..{last} do not fit in {dtype.value}")
    return (TensorType(dtype, (n,), device),)


def _range(*, start: Any, stop: Any, step: Any, dtype: DType, device: DeviceRef
           ) -> np.ndarray:
    n = range_length(start, stop, step)
    if dtype.is_integral():  # exact Python ints, all representable (range.C2)
        return np.fromiter(builtins.range(start, stop, step), dtype.to_numpy(), count=n)
    # float64 start + i * step (two roundings), then rounded once to dtype
    return round_f64(float(start) + np.arange(n, dtype=np.float64) * float(step), dtype)


def _sample_range(src: ArgSource) -> OpCall:
    dtype = src.dtype(NUMERIC, data=True)
    start: float
    stop: float
    step: float
    if dtype.is_integral():
        lo = 0 if dtype.is_unsigned() else -20
        start, stop = src.integer(lo, 20), src.integer(lo, 20)
        step = src.choice([1, 2, 3, -1, -2]) * (1 if stop >= start else -1)
    else:
        start, stop = src.choice([(0.0, 5.0), (-1.5, 2.0), (3.0, -3.0), (0.0, 0.0)])
        step = src.choice([0.5, 1.0, 0.25, 0.1]) * (1 if stop >= start else -1)
    return OpCall([], {"start": start, "stop": stop, "step": step, "dtype": dtype,
                       "device": DeviceRef.CPU()})


register(OpDef("range", summary="start + i * step for i in [0, ceil((stop - start) / step)).",
               category="creation", operands=(),
               attrs=("start", "stop", "step", "dtype", "device"), infer=_range_infer,
               kernel=_range, dtypes=NUMERIC, tolerance=EXACT, sample=_sample_range,
               attr_types={"start": NUMBER, "stop": NUMBER, "step": NUMBER}))
