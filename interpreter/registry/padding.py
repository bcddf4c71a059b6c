"""The type rule, kernel and sampler of ``pad`` (spec/ops/pad.md; registered in ``shape.py``).

Three modes, MAX's names: ``constant`` fills with the ``value`` attribute; ``reflect``
mirrors the axis around its first and last elements (which are not repeated), as often as
the padding needs; ``edge`` repeats the first and last elements. The two copying modes
gather along each axis through an index map (``source_index``); kernels compute in the
operand's namespace (``xp``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import arrays
from ..dtype import DType
from ..errors import GraphTypeError
from ..types import ValueType
from ..validators import is_int
from .core import ArgSource, Attrs, OpCall, OpDef
from .dtypesets import ALL

__all__ = ["PAD_MODES", "pad_infer", "pad_kernel", "pad_sample", "source_index"]

Array = Any
Pairs = tuple[tuple[int, int], ...]
PAD_MODES = ("constant", "reflect", "edge")


def _check_value(op: OpDef, types: Sequence[ValueType], dtype: DType, value: Any) -> None:
    if not isinstance(value, bool | int | float):
        op.fail(types, "pad.C2", f"attribute value must be a Python number, got {value!r}",
                GraphTypeError)
    if dtype is DType.bool:
        ok = isinstance(value, bool) or value in (0, 1)
    elif dtype.is_integral():
        info = np.iinfo(dtype.to_numpy())
        ok = isinstance(value, int) and info.min <= value <= info.max
    else:
        ok = True
    if not ok:
        op.fail(types, "pad.C2", f"value {value!r} is not representable in {dtype.value}",
                GraphTypeError)


def pad_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    paddings = attrs.get("paddings")
    if not isinstance(paddings, tuple) or len(paddings) != t.rank or not all(
            isinstance(p, tuple) and len(p) == 2 and all(is_int(v) and v >= 0 for v in p)
            for p in paddings):
        op.fail(types, "pad.C1", f"attribute paddings must be {t.rank} pairs (lo, hi) of "
                f"ints >= 0, got {paddings!r}")
    _check_value(op, types, t.dtype, attrs.get("value"))
    mode = attrs.get("mode")
    if mode not in PAD_MODES:
        op.fail(types, "pad.C3", f"mode {mode!r} is not one of {PAD_MODES}")
    for k, (n, (lo, hi)) in enumerate(zip(t.shape, paddings, strict=True)):
        if mode != "constant" and lo + hi > 0 and n == 0:
            op.fail(types, "pad.C4", f"{mode} padding ({lo}, {hi}) of axis {k} needs a "
                    "non-empty axis to copy from")
    pairs = zip(t.shape, paddings, strict=True)
    return (t.with_(shape=tuple(d + lo + hi for d, (lo, hi) in pairs)),)


def source_index(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """The input index each output position of one axis copies (``reflect``, ``edge``)."""
    j = np.arange(-lo, n + hi)
    if mode == "edge" or n == 1:
        return np.clip(j, 0, n - 1)
    period = 2 * (n - 1)  # reflect at 0 and at n - 1, edges not repeated, as often as needed
    j = np.abs(j) % period
    return np.where(j > n - 1, period - j, j)


def pad_kernel(x: Array, *, paddings: Pairs, value: Any, mode: str) -> Array:
    xp = arrays.namespace(x)
    if mode != "constant":
        for axis, (lo, hi) in enumerate(paddings):
            if lo or hi:
                x = xp.take(x, xp.asarray(source_index(x.shape[axis], lo, hi, mode)), axis=axis)
        return x
    shape = tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, paddings, strict=True))
    out = xp.full(shape, arrays.fill_value(value, x.dtype), x.dtype)
    out[tuple(slice(lo, lo + d) for d, (lo, _) in zip(x.shape, paddings, strict=True))] = x
    return out


def pad_sample(src: ArgSource) -> OpCall:
    dtype, shape = src.dtype(ALL, data=True), src.shape(max_rank=3, max_side=4)
    mode = src.choice(PAD_MODES)
    room = 2 if mode == "constant" else 5  # reflect: also past the axis length (pad.C4)
    paddings = tuple((src.integer(0, room if n or mode == "constant" else 0),
                      src.integer(0, room if n or mode == "constant" else 0)) for n in shape)
    value: Any
    if dtype is DType.bool:
        value = src.boolean()
    elif dtype.is_integral():
        info = np.iinfo(dtype.to_numpy())
        value = src.choice([0, 1, int(info.min), int(info.max)])
    else:
        value = src.choice([0.0, -0.0, 1.5, float("inf"), float("nan"), -2])
    return OpCall([src.values(dtype, shape)], {"paddings": paddings, "value": value,
                                               "mode": mode})
