"""Tensor-creating graph-building functions: constant, range."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dtype import DType
from ...errors import GraphTypeError
from ...types import DeviceRef
from ..core import Graph, TensorValue
from ._staging import default_dtype, stage1


def constant(value: Any, dtype: DType | None = None, device: DeviceRef | None = None
             ) -> TensorValue:
    """A constant tensor in the current graph. ``dtype`` defaults to the value's own dtype
    (numpy arrays) or the default dtype of a Python scalar (PROMO-4)."""
    if isinstance(value, np.ndarray | np.generic):
        src = DType.from_numpy(value.dtype)
        if dtype is not None and dtype != src and not isinstance(value, np.generic):
            raise GraphTypeError(f"constant: array dtype {src.value} differs from requested "
                                 f"dtype {dtype.value}; cast the array first")
        dtype = dtype or src
    elif dtype is None:
        flat = np.asarray(value).ravel()
        sample = flat[0].item() if flat.size else 0.0
        if np.asarray(value).dtype.kind == "f":
            sample = 0.0
        dtype = default_dtype(sample)
    try:
        arr = np.array(value, dtype=dtype.to_numpy())
    except (TypeError, ValueError, OverflowError) as e:
        raise GraphTypeError(f"constant: cannot convert {value!r} to {dtype.value}: {e}") from None
    arr.flags.writeable = False
    return stage1("constant", (), {"value": arr, "device": device or DeviceRef.CPU()})


def range(start: float, stop: float | None = None, step: float = 1, dtype: DType | None = None,
          device: DeviceRef | None = None) -> TensorValue:  # noqa: A001 - MAX name
    """``start + i * step`` for ``i`` in ``[0, ceil((stop - start) / step))``."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        dtype = (DType.int64 if all(isinstance(v, int) for v in (start, stop, step))
                 else DType.float32)
    Graph.current  # noqa: B018 - fail early with a clear error when there is no graph
    return stage1("range", (), {"start": start, "stop": stop, "step": step, "dtype": dtype,
                                "device": device or DeviceRef.CPU()})


arange = range

__all__ = [
    "arange",
    "constant",
    "range",
]
