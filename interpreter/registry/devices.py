"""Device ops: transfer and the collectives allreduce_sum, allgather (spec/devices.md).

The collectives compute in their operands' namespace (``interpreter/arrays.py``); an
executor without peer communication refuses them (their trait ``collective``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import arrays
from ..errors import GraphShapeError, GraphTypeError
from ..types import DeviceRef, TensorType, ValueType
from .core import EXACT, ArgSource, Attrs, OpCall, OpDef, register
from .dtypesets import ALL, NUMERIC

__all__: list[str] = []  # importing the module registers its ops

Array = Any  # a numpy array, or a CuPy array on a GPU


def _results(results: list[Array]) -> Any:
    """Kernel results: one array for one result, else a tuple (the interpreter's protocol)."""
    return results[0] if len(results) == 1 else tuple(results)


# -- transfer ---------------------------------------------------------------------------------
def _transfer_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                    ) -> tuple[ValueType, ...]:
    x = op.check_tensor(types, 0)
    device = attrs.get("device")
    if not isinstance(device, DeviceRef):
        op.fail(types, "transfer.C1", f"attribute device must be a DeviceRef, got {device!r}",
                GraphTypeError)
    return (x.with_(device=device),)


def _transfer(x: np.ndarray, *, device: DeviceRef) -> np.ndarray:
    return np.array(x, copy=True)  # a new value on the target device (DEV-3)


def _sample_devices(src: ArgSource, n: int) -> list[DeviceRef]:
    return [DeviceRef.CPU(src.integer(0, 3)) for _ in range(n)]


def _sample_transfer(src: ArgSource) -> OpCall:
    dtype = src.dtype(ALL, data=True)
    return OpCall([src.values(dtype, src.shape())], {"device": _sample_devices(src, 1)[0]})


register(OpDef("transfer", summary="A copy of a tensor on another device.", category="devices",
               operands=("x",), attrs=("device",), infer=_transfer_infer, kernel=_transfer,
               dtypes=ALL, tolerance=EXACT, sample=_sample_transfer,
               traits=frozenset({"byte-copy", "cross-device"})))


# -- collectives ------------------------------------------------------------------------------
def _same_dtype(op: OpDef, types: Sequence[ValueType]) -> list[TensorType]:
    ts = [op.check_tensor(types, i) for i in range(len(types))]
    if any(t.dtype != ts[0].dtype for t in ts):
        op.fail(types, f"{op.name}.C1", "all operands must have the same dtype",
                GraphTypeError)
    return ts


def _allreduce_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                     ) -> tuple[ValueType, ...]:
    ts = _same_dtype(op, types)
    if any(t.shape != ts[0].shape for t in ts):
        op.fail(types, "allreduce_sum.C1", "all operands must have the same shape",
                GraphShapeError)
    return tuple(ts)


def _allreduce_sum(*xs: Array) -> Any:
    xp = arrays.namespace(xs[0])
    total = xp.array(xs[0], copy=True)
    for x in xs[1:]:
        total = total + x  # operand order (DEV-4); integers wrap
    return _results([total] + [total.copy() for _ in xs[1:]])


def _allgather_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                     ) -> tuple[ValueType, ...]:
    ts = _same_dtype(op, types)
    rank = ts[0].rank
    if rank == 0 or any(t.rank != rank for t in ts):
        op.fail(types, "allgather.C2", "operands must all have the same rank >= 1")
    axis = op.check_axis(types, attrs.get("axis"), rank)
    for t in ts:
        if t.shape[:axis] + t.shape[axis + 1:] != ts[0].shape[:axis] + ts[0].shape[axis + 1:]:
            op.fail(types, "allgather.C2", f"operand shapes may differ only along axis {axis}")
    size = sum(t.shape[axis] for t in ts)
    shape = (*ts[0].shape[:axis], size, *ts[0].shape[axis + 1:])
    return tuple(t.with_(shape=shape) for t in ts)


def _allgather(*xs: Array, axis: int) -> Any:
    xp = arrays.namespace(xs[0])
    whole = xp.concatenate(xs, axis=axis)
    return _results([whole] + [whole.copy() for _ in xs[1:]])


def _sample_allreduce(src: ArgSource) -> OpCall:
    dtype, shape, n = src.dtype(NUMERIC, data=True), src.shape(max_rank=3), src.integer(1, 4)
    return OpCall([src.values(dtype, shape, "small") for _ in range(n)])


def _sample_allgather(src: ArgSource) -> OpCall:
    dtype = src.dtype(ALL, data=True)
    shape, n = list(src.shape(min_rank=1, max_rank=3)), src.integer(1, 4)
    axis = src.integer(0, len(shape) - 1)
    operands = []
    for _ in range(n):
        shape[axis] = src.integer(0, 3)
        operands.append(src.values(dtype, tuple(shape)))
    return OpCall(operands, {"axis": src.choice([axis, axis - len(shape)])})


register(OpDef("allreduce_sum",
               summary="Each device gets the sum of all operands (in operand order).",
               category="devices", operands=("inputs",), attrs=(), infer=_allreduce_infer,
               kernel=_allreduce_sum, dtypes=NUMERIC, tolerance=EXACT, variadic=True,
               sample=_sample_allreduce, traits=frozenset({"collective"})))
register(OpDef("allgather",
               summary="Each device gets the concatenation of all operands along axis.",
               category="devices", operands=("inputs",), attrs=("axis",), infer=_allgather_infer,
               kernel=_allgather, dtypes=ALL, tolerance=EXACT, variadic=True,
               sample=_sample_allgather, traits=frozenset({"collective", "byte-copy"})))
