"""Device ops: transfer and the collectives allreduce_sum, allgather, reducescatter_sum,
distributed_broadcast and distributed_scatter (spec/devices.md).

The collectives compute in their operands' namespace (``interpreter/arrays.py``); an
executor without peer communication refuses them (their trait ``collective``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import arrays
from ..errors import GraphShapeError, GraphTypeError
from ..types import DeviceRef, TensorType, ValueType
from .attrtypes import AttrType
from .core import EXACT, ArgSource, Attrs, OpCall, OpDef, Tolerance, register
from .dtypesets import ALL, NUMERIC
from .reduction import float_info, widen

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


# -- reducescatter_sum ------------------------------------------------------------------------
def chunk_sizes(size: int, parts: int) -> list[int]:
    """``size`` split into ``parts`` chunks differing by at most 1, the larger first (DEV-7)."""
    return [size // parts + (1 if i < size % parts else 0) for i in range(parts)]


def _reducescatter_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                         ) -> tuple[ValueType, ...]:
    ts = _same_dtype(op, types)
    if ts[0].rank == 0 or any(t.shape != ts[0].shape for t in ts):
        op.fail(types, "reducescatter_sum.C2", "all operands must have one shape of rank >= 1")
    axis = op.check_axis(types, attrs.get("axis"), ts[0].rank)
    sizes = chunk_sizes(ts[0].shape[axis], len(ts))
    return tuple(t.with_(shape=(*t.shape[:axis], k, *t.shape[axis + 1:]))
                 for t, k in zip(ts, sizes, strict=True))


def _reducescatter_sum(*xs: Array, axis: int) -> Any:
    """The sum (16-bit floats in float32, rounded once), cut into one chunk per device."""
    xp = arrays.namespace(xs[0])
    total = widen(xs[0])
    for x in xs[1:]:
        total = total + widen(x)  # one legal order; integers wrap
    cuts = list(itertools.accumulate(chunk_sizes(total.shape[axis], len(xs))))[:-1]
    return _results([c.astype(xs[0].dtype) for c in xp.split(total, cuts, axis=axis)])


def _finite_abs_sum(xs: Sequence[np.ndarray]) -> np.ndarray:
    """sum over the operands of their finite |x_i| (float64), elementwise."""
    out = np.zeros(np.shape(xs[0]), np.float64)
    for x in xs:
        a = np.asarray(x, np.float64)
        out += np.where(np.isfinite(a), np.abs(a), 0.0)
    return out


def _num_operands(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
    """number of operands (devices)"""
    return len(ops)


def _chunk_abs(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
    """sum of the operands' |x_i| at that element, the largest over the chunks of the
    result's size"""
    total = _finite_abs_sum(ops)
    axis = attrs["axis"] % total.ndim
    cuts = list(itertools.accumulate(chunk_sizes(total.shape[axis], len(ops))))[:-1]
    same = [c for c in np.split(total, cuts, axis=axis) if c.shape == np.shape(expected)]
    return np.max(np.stack(same), axis=0)


def _reducescatter_overflow(*xs: Array, axis: int) -> np.ndarray:
    """Where the finite |x_i| of some element sum past the dtype's max, the order decides
    between inf and a finite value: every result's elements along the scattered axis at the
    same other coordinates are unspecified (REDUCE-5; one mask fits every chunk)."""
    total = _finite_abs_sum(xs)
    if np.dtype(xs[0].dtype).kind in "biu":
        return np.zeros((1,) * total.ndim, bool)
    return np.any(total > float(float_info(xs[0].dtype).max), axis=axis, keepdims=True)


def _sample_reducescatter(src: ArgSource) -> OpCall:
    dtype = src.dtype(NUMERIC, data=True)
    shape, n = src.shape(min_rank=1, max_rank=3), src.integer(1, 4)
    axis = src.integer(-len(shape), len(shape) - 1)
    return OpCall([src.values(dtype, shape, "small") for _ in range(n)], {"axis": axis})


#: REDUCE-6 over the devices: any order and any precision at least the dtype's
REDUCESCATTER_TOLERANCE = Tolerance("reduction", 1, _num_operands, _chunk_abs)
register(OpDef("reducescatter_sum",
               summary="Device i gets chunk i (along axis) of the sum of all operands.",
               category="devices", operands=("inputs",), attrs=("axis",),
               infer=_reducescatter_infer, kernel=_reducescatter_sum, dtypes=NUMERIC,
               tolerance=REDUCESCATTER_TOLERANCE, variadic=True,
               unspecified=_reducescatter_overflow, sample=_sample_reducescatter,
               traits=frozenset({"collective"})))


# -- distributed_broadcast, distributed_scatter -----------------------------------------------
DEVICES = AttrType("tuple[DeviceRef, ...]",
                   lambda v: type(v) is tuple and len(v) > 0
                   and all(type(d) is DeviceRef for d in v),
                   "one device per result, in result order")


def _check_devices(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                   ) -> tuple[DeviceRef, ...]:
    devices = attrs.get("devices")
    if not DEVICES.check(devices):
        op.fail(types, f"{op.name}.C1", "attribute devices must be a non-empty tuple of "
                f"DeviceRef, got {devices!r}", GraphTypeError)
    return tuple(devices)  # type: ignore[arg-type]


def _broadcast_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                     ) -> tuple[ValueType, ...]:
    x = op.check_tensor(types, 0)
    devices = _check_devices(op, types, attrs)
    if x.device not in devices:
        op.fail(types, "distributed_broadcast.C2", f"the input's device {x.device} (the root) "
                f"must be one of devices {[str(d) for d in devices]}")
    return tuple(x.with_(device=d) for d in devices)


def _distributed_broadcast(x: Array, *, devices: tuple[DeviceRef, ...]) -> Any:
    return _results([x.copy() for _ in devices])


def scatter_source(i: int, chunks: int, devices: int) -> int:
    """The chunk device ``i`` of ``devices`` receives: ``ceil(devices / chunks)`` consecutive
    devices (one replica group) per chunk, so never past the last chunk (DEV-9)."""
    return i // -(-devices // chunks)


def _scatter_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                   ) -> tuple[ValueType, ...]:
    ts = _same_dtype(op, types)
    devices = _check_devices(op, types, attrs)
    if any(t.device != ts[0].device for t in ts) or ts[0].device not in devices:
        op.fail(types, "distributed_scatter.C2", "all chunks must be on one device (the "
                f"root), one of devices {[str(d) for d in devices]}")
    return tuple(ts[scatter_source(i, len(ts), len(devices))].with_(device=d)
                 for i, d in enumerate(devices))


def _distributed_scatter(*chunks: Array, devices: tuple[DeviceRef, ...]) -> Any:
    n = len(devices)
    return _results([chunks[scatter_source(i, len(chunks), n)].copy() for i in range(n)])


def _sample_broadcast(src: ArgSource) -> OpCall:
    dtype = src.dtype(ALL, data=True)
    x = src.values(dtype, src.shape(max_rank=3))
    return OpCall([x], {"devices": (DeviceRef.CPU(), *_sample_devices(src, src.integer(0, 3)))})


def _sample_scatter(src: ArgSource) -> OpCall:
    dtype = src.dtype(ALL, data=True)
    chunks = [src.values(dtype, src.shape(max_rank=3)) for _ in range(src.integer(1, 3))]
    devices = _sample_devices(src, src.integer(0, 4))
    devices.insert(src.integer(0, len(devices)), DeviceRef.CPU())  # the root
    return OpCall(chunks, {"devices": tuple(devices)})


register(OpDef("distributed_broadcast",
               summary="A copy of the input (on the root, one of devices) on every device.",
               category="devices", operands=("input",), attrs=("devices",),
               infer=_broadcast_infer, kernel=_distributed_broadcast, dtypes=ALL,
               tolerance=EXACT, sample=_sample_broadcast, attr_types={"devices": DEVICES},
               traits=frozenset({"collective", "byte-copy"})))
register(OpDef("distributed_scatter",
               summary="Chunk j (all on the root) to the j-th group of consecutive devices.",
               category="devices", operands=("input_chunks",), attrs=("devices",),
               infer=_scatter_infer, kernel=_distributed_scatter, dtypes=ALL, tolerance=EXACT,
               variadic=True, sample=_sample_scatter, attr_types={"devices": DEVICES},
               traits=frozenset({"collective", "byte-copy"})))
