"""Buffer graph-building functions: load, store, slice store, create."""

from __future__ import annotations

from typing import Any

from ...dtype import DType
from ...errors import GraphTypeError
from ...types import DeviceRef
from ..core import BufferValue, TensorValue, Value
from ._staging import stage, stage1
from .indexing import slice_triples


def buffer_load(buffer: BufferValue) -> TensorValue:
    """The buffer's current contents, as a copy (MUT-1)."""
    return stage1("buffer_load", (buffer,))


def buffer_store(destination: BufferValue, source: TensorValue) -> None:
    """Overwrite ``destination`` with ``source`` (a side effect, MUT-2)."""
    stage("buffer_store", (destination, source))


def buffer_store_slice(destination: BufferValue, source: TensorValue, indices: Any) -> None:
    """Overwrite ``destination[indices]`` with ``source`` (numpy basic indexing, MUT-3).

    ``source`` must have the shape of the selected region with integer-indexed axes kept as
    size 1 or dropped (either is accepted)."""
    if not isinstance(destination, BufferValue):
        raise GraphTypeError(f"buffer_store_slice: destination must be a buffer value, got "
                             f"{destination!r}")
    triples, keep_shape = slice_triples("buffer_store_slice", destination.shape, indices)
    if isinstance(source, Value) and source.shape != keep_shape:
        from .shape import reshape

        if source.type.num_elements == _prod(keep_shape):
            source = reshape(source, keep_shape)
    stage("buffer_store_slice", (destination, source), {"slices": triples})


def _prod(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


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
