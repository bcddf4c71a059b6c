"""Shape and data-movement ops (spec/ops/). All are exact: they only move elements."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..promotion import broadcast_shapes
from ..types import ValueType
from .core import EXACT, Attrs, OpDef, register
from .dtypesets import ALL


def check_shape_attr(op: OpDef, types: Sequence[ValueType], shape: object) -> tuple[int, ...]:
    if not isinstance(shape, tuple) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        op.fail(types, "SHAPE-1", f"attribute shape must be a tuple of ints >= 0, got "
                f"{shape!r}")
    return shape


def _broadcast_to_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                        ) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    shape = check_shape_attr(op, types, attrs.get("shape"))
    if len(shape) < t.rank or broadcast_shapes([t.shape, shape]) != shape:
        op.fail(types, "BCAST-2", f"cannot broadcast shape {list(t.shape)} to {list(shape)}")
    return (t.with_(shape=shape),)


def _broadcast_to(x: np.ndarray, *, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(x, shape)


register(OpDef("broadcast_to", "Stretch size-1 and missing leading dims to a target shape.",
               "shape", ("x",), ("shape",), _broadcast_to_infer, _broadcast_to, ALL, EXACT))


def _reshape_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                   ) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    shape = check_shape_attr(op, types, attrs.get("shape"))
    n = 1
    for d in shape:
        n *= d
    if n != t.num_elements:
        op.fail(types, "reshape.C1", f"cannot reshape {t.num_elements} elements to shape "
                f"{list(shape)} ({n} elements)")
    return (t.with_(shape=shape),)


def _reshape(x: np.ndarray, *, shape: tuple[int, ...]) -> np.ndarray:
    return np.reshape(x, shape)


register(OpDef("reshape", "Same elements in row-major order, new shape.", "shape", ("x",),
               ("shape",), _reshape_infer, _reshape, ALL, EXACT))


def _slice_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    from .buffer import check_slices, sliced_shape

    t = op.check_tensor(types, 0)
    slices = check_slices(op, types, t.shape, attrs.get("slices"))
    return (t.with_(shape=sliced_shape(t.shape, slices)),)


def _slice(x: np.ndarray, *, slices: tuple[tuple[int | None, int | None, int], ...]
           ) -> np.ndarray:
    return x[tuple(slice(a, b, c) for a, b, c in slices)]


register(OpDef("slice", "Strided slice, one (start, stop, step) per axis; steps may be "
               "negative; numpy clamping.", "shape", ("x",), ("slices",), _slice_infer, _slice,
               ALL, EXACT))
