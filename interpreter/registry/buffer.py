"""Buffer ops: load (a copy), store, slice store, create (spec/mutation.md, MUT-1..5).

Kernels with operands compute in their namespace (``xp``: numpy, or CuPy on a GPU,
``interpreter/arrays.py``); ``buffer_create`` has none and makes a numpy array.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import arrays
from ..dtype import DType
from ..errors import GraphShapeError, GraphTypeError
from ..types import BufferType, DeviceRef, ValueType
from ..validators import Slices, int_tuple_problem, slice_objects, sliced_shape, slices_problem
from .core import EXACT, ArgSource, Attrs, OpCall, OpDef, register
from .dtypesets import ALL

__all__ = [
    "check_slices",
]

Array = Any  # a numpy array, or a CuPy array on a GPU


def _load_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    return (op.check_buffer(types, 0).as_tensor(),)


def _load(buf: Array) -> Array:
    return buf.copy()  # copy-on-load (MUT-1)


def _sample_load(src: ArgSource) -> OpCall:
    dtype = src.dtype(ALL, data=True)
    return OpCall([src.values(dtype, src.shape())], buffers=frozenset({0}))


register(OpDef("buffer_load", summary="Read a buffer's current contents as a tensor (a copy).",
               category="buffer", operands=("buffer",), attrs=(), infer=_load_infer, kernel=_load,
               dtypes=ALL, tolerance=EXACT, sample=_sample_load,
               traits=frozenset({"buffer-load", "byte-copy"})))


def _check_source(op: OpDef, types: Sequence[ValueType], want: tuple[int, ...]) -> None:
    buf = op.check_buffer(types, 0)
    src = op.check_tensor(types, 1)
    if src.dtype != buf.dtype:
        op.fail(types, f"{op.name}.C1", "source dtype must equal the buffer dtype",
                GraphTypeError)
    if src.shape != want:
        op.fail(types, f"{op.name}.C2", f"source shape {list(src.shape)} must be "
                f"{list(want)}", GraphShapeError)
    if src.device != buf.device:
        op.fail(types, "DEV-1", "source and buffer must be on the same device")


def _store_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    _check_source(op, types, op.check_buffer(types, 0).shape)
    return ()


def _store(buf: Array, src: Array) -> None:
    xp = arrays.namespace(buf)
    xp.copyto(buf, src)  # same dtype: a byte copy (MUT-2)


def _sample_store(src: ArgSource) -> OpCall:
    dtype, shape = src.dtype(ALL, data=True), src.shape()
    return OpCall([src.values(dtype, shape), src.values(dtype, shape)], buffers=frozenset({0}))


register(OpDef("buffer_store", summary="Overwrite a whole buffer with a tensor (a side effect).",
               category="buffer", operands=("buffer", "source"), attrs=(), infer=_store_infer,
               kernel=_store, dtypes=ALL, tolerance=EXACT, side_effect=True, sample=_sample_store,
               result_dtypes=frozenset(), traits=frozenset({"buffer-store"})))

def check_slices(op: OpDef, types: Sequence[ValueType], shape: tuple[int, ...], slices: Any
                 ) -> Slices:
    """``slices`` is one (start, stop, step) triple per axis; start/stop may be None (SLICE-1)."""
    problem = slices_problem(slices, len(shape))
    if problem is not None:
        op.fail(types, "SLICE-1", problem)
    return slices


def _store_slice_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                       ) -> tuple[ValueType, ...]:
    buf = op.check_buffer(types, 0)
    slices = check_slices(op, types, buf.shape, attrs.get("slices"))
    _check_source(op, types, sliced_shape(buf.shape, slices))
    return ()


def _store_slice(buf: Array, src: Array, *, slices: Slices) -> None:
    buf[slice_objects(slices)] = src  # same dtype: a byte copy (MUT-3)


def _sample_triple(src: ArgSource, dim: int) -> tuple[int | None, int | None, int]:
    step = src.choice([1, 1, 2, -1, -2, 3])
    start = src.choice([None, src.integer(-dim - 1, dim + 1)])
    stop = src.choice([None, src.integer(-dim - 1, dim + 1)])
    return (start, stop, step)


def _sample_store_slice(src: ArgSource) -> OpCall:
    dtype, shape = src.dtype(ALL, data=True), src.shape(max_rank=3)
    slices = tuple(_sample_triple(src, d) for d in shape)
    region = sliced_shape(shape, slices)
    return OpCall([src.values(dtype, shape), src.values(dtype, region)], {"slices": slices},
                  buffers=frozenset({0}))


register(OpDef("buffer_store_slice",
               summary="Overwrite a strided slice of a buffer with a tensor (a side effect).",
               category="buffer", operands=("buffer", "source"), attrs=("slices",),
               infer=_store_slice_infer, kernel=_store_slice, dtypes=ALL, tolerance=EXACT,
               side_effect=True, sample=_sample_store_slice, result_dtypes=frozenset(),
               traits=frozenset({"buffer-store"})))


def _create_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                  ) -> tuple[ValueType, ...]:
    dtype, shape, device = attrs.get("dtype"), attrs.get("shape"), attrs.get("device")
    if not isinstance(dtype, DType) or not isinstance(device, DeviceRef):
        op.fail(types, "buffer_create.C1", f"attributes dtype and device must be a DType and "
                f"a DeviceRef, got {dtype!r} and {device!r}", GraphTypeError)
    problem = int_tuple_problem("shape", shape)
    if problem is not None:
        op.fail(types, "buffer_create.C1", problem)
    return (BufferType(dtype, shape, device),)  # type: ignore[arg-type]


def _create(*, dtype: DType, shape: tuple[int, ...], device: DeviceRef) -> np.ndarray:
    return np.zeros(shape, dtype.to_numpy())  # all-zero bytes: +0.0, 0, False (MUT-4)


def _sample_create(src: ArgSource) -> OpCall:
    return OpCall([], {"dtype": src.dtype(ALL, data=True), "shape": src.shape(),
                       "device": DeviceRef.CPU(src.integer(0, 1))})


register(OpDef("buffer_create", summary="A fresh zero-filled scratch buffer.", category="buffer",
               operands=(), attrs=("dtype", "shape", "device"), infer=_create_infer,
               kernel=_create, dtypes=ALL, tolerance=EXACT, sample=_sample_create,
               traits=frozenset({"byte-copy"})))
