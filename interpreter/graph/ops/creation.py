"""Tensor-creating graph-building functions: constant, range."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dtype import DType
from ...errors import GraphTypeError
from ...rounding import round_f64
from ...types import DeviceRef
from ..core import TensorValue
from .staging import stage1


def constant(value: Any, dtype: DType | None = None, device: DeviceRef | None = None
             ) -> TensorValue:
    """A constant tensor in the current graph (constant.C3).

    A numpy array keeps its dtype (``dtype`` may only repeat it). A Python value (or numpy
    scalar with another ``dtype``) takes ``dtype``, by default the default dtype of its
    kind (PROMO-4): bool, int64, float32. Conversion to bool and integer dtypes must be
    exact; conversion to float dtypes rounds to nearest even once.
    """
    if isinstance(value, np.generic):
        if dtype is None or _dtype_of(value) == dtype:
            value = np.array(value)
        else:
            value = value.item()
    if isinstance(value, np.ndarray):
        src = _dtype_of(value)
        if dtype is not None and dtype != src:
            raise GraphTypeError(f"constant: array dtype {src.value} differs from requested "
                                 f"dtype {dtype.value}; cast the array first [constant.C3]")
        arr = np.array(value, copy=True)
    else:
        arr = _convert(value, dtype)
    arr.flags.writeable = False
    return stage1("constant", (), {"value": arr, "device": device or DeviceRef.CPU()})


def _dtype_of(value: np.ndarray | np.generic) -> DType:
    try:
        return DType.from_numpy(value.dtype)
    except TypeError:
        raise GraphTypeError(f"constant: numpy dtype {value.dtype} is not supported "
                             "[constant.C1]") from None


def _convert(value: Any, dtype: DType | None) -> np.ndarray:
    """A Python value (nested lists of bool/int/float) as an array of ``dtype`` (constant.C3)."""
    def bad(why: str) -> GraphTypeError:
        want = dtype.value if dtype else "its default dtype"
        return GraphTypeError(f"constant: cannot convert {value!r} to {want}: {why} "
                              "[constant.C3]")

    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise bad(str(e)) from None
    if raw.dtype.kind not in "biuf" and not (raw.dtype.kind == "O" and raw.size and all(
            isinstance(v, int) for v in raw.ravel())):
        raise bad("expected bools, ints or floats")
    if dtype is None:
        dtype = {"b": DType.bool, "f": DType.float32}.get(raw.dtype.kind, DType.int64)
    if dtype.is_float():
        return round_f64(raw.astype(np.float64), dtype)
    if raw.dtype.kind == "f":
        if not np.all(np.isfinite(raw)) or np.any(raw != np.trunc(raw)):
            raise bad("not every value is an integer")
    flat = [int(v) for v in raw.ravel()]
    lo, hi = (0, 1) if dtype is DType.bool else (
        int(np.iinfo(dtype.to_numpy()).min), int(np.iinfo(dtype.to_numpy()).max))
    if not all(lo <= v <= hi for v in flat):
        raise bad(f"values must lie in [{lo}, {hi}]")
    return np.array(flat, dtype=dtype.to_numpy()).reshape(raw.shape)


def range(start: float, stop: float | None = None, step: float = 1, dtype: DType | None = None,
          device: DeviceRef | None = None) -> TensorValue:
    """``start + i * step`` for ``i`` in ``[0, ceil((stop - start) / step))``."""
    if stop is None:
        start, stop = 0, start
    start, stop, step = (v.item() if isinstance(v, np.generic) else v
                         for v in (start, stop, step))
    if dtype is None:
        dtype = (DType.int64 if all(isinstance(v, int) for v in (start, stop, step))
                 else DType.float32)
    return stage1("range", (), {"start": start, "stop": stop, "step": step, "dtype": dtype,
                                "device": device or DeviceRef.CPU()})


arange = range

__all__ = [
    "arange",
    "constant",
    "range",
]
