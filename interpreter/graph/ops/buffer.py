"""Buffer graph-building functions: load, store, slice store, create."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dtype import DType
from ...errors import GraphTypeError
from ...types import DeviceRef
from ..core import BufferValue, TensorValue
from .indexing import result_shape, slice_triples
from .staging import Operand, constant, is_scalar, stage, stage1, weak_dtype


def buffer_load(buffer: BufferValue) -> TensorValue:
    """The buffer's current contents, as a copy (MUT-1)."""
    return stage1("buffer_load", (buffer,))


def buffer_store(destination: BufferValue, source: TensorValue) -> None:
    """Overwrite ``destination`` with ``source`` (a side effect, MUT-2)."""
    stage("buffer_store", (destination, source))


def buffer_store_slice(destination: BufferValue, source: Operand, indices: Any) -> None:
    """Overwrite ``destination[indices]`` with ``source`` (numpy basic indexing, MUT-3).

    ``source`` has the region's shape, with each integer-indexed axis either kept as size 1
    or dropped (numpy's ``a[indices]`` shape); nothing else is reshaped. A Python scalar
    source is a weak constant of the buffer's dtype (for a one-element region)."""
    if not isinstance(destination, BufferValue):
        raise GraphTypeError(f"buffer_store_slice: destination must be a buffer value, got "
                             f"{destination!r} [GRAPH-4]")
    triples, keep_shape = slice_triples("buffer_store_slice", destination.shape, indices)
    dropped = result_shape(destination.shape, indices, keep_shape)
    if is_scalar(source):  # a weak Python scalar takes the buffer's dtype (PROMO-4)
        value = source.item() if isinstance(source, np.generic) else source
        source = constant(destination.graph, value,
                          weak_dtype("buffer_store_slice", value, destination.dtype),
                          destination.device)
    if isinstance(source, TensorValue) and source.shape != keep_shape and source.shape == dropped:
        from .shape import reshape

        source = reshape(source, keep_shape)
    stage("buffer_store_slice", (destination, source), {"slices": triples})


def buffer_create(dtype: DType, shape: tuple[int, ...], device: DeviceRef | None = None
                  ) -> BufferValue:
    """A fresh zero-filled scratch buffer."""
    (v,) = stage("buffer_create", (), {"dtype": dtype, "shape": tuple(shape),
                                       "device": device or DeviceRef.CPU()})
    return v  # type: ignore[return-value]

__all__ = [
    "buffer_create",
    "buffer_load",
    "buffer_store",
    "buffer_store_slice",
]
