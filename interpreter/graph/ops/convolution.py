"""Convolution graph-building functions (MAX ``ops`` names; spec/ops/conv2d.md, conv3d.md,
conv2d_transpose.md).

MAX's signatures: ``padding`` is flat, ``(before, after)`` per spatial axis in order (for
conv2d ``(top, bottom, left, right)``); the primitive ops take it as pairs. ``bias`` is
added to the result over the channel axis; only MAX's default layouts (channels-last input,
RSCF/QRSCF filter) are accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import GraphShapeError
from ..core import TensorValue, Value
from .creation import constant
from .elementwise import add
from .staging import stage1

#: MAX's default (and here only) layouts: input, then filter, per spatial rank
_LAYOUTS = {2: ("NHWC", "RSCF"), 3: ("NHWC", "QRSCF")}


def ints(name: str, value: Any, n: int) -> tuple[Any, ...]:
    """``value`` (an int, or a sequence of ``n``) as a tuple of ``n`` Python ints; anything
    else is passed on for the primitive's type rule to report."""
    items = [value] * n if isinstance(value, int | np.integer) else value
    if not isinstance(items, Sequence):
        return value
    return tuple(int(v) if isinstance(v, np.integer) else v for v in items)


def pairs(op: str, rule: str, padding: Any, rank: int) -> tuple[tuple[Any, Any], ...]:
    """MAX's flat ``(before0, after0, before1, after1, ...)`` as one pair per axis."""
    flat = ints("padding", padding, 2 * rank)
    if not isinstance(flat, tuple) or len(flat) != 2 * rank:
        raise GraphShapeError(f"{op}: padding must be {2 * rank} ints (before, after per "
                              f"spatial axis), got {padding!r} [{rule}]")
    return tuple((flat[2 * i], flat[2 * i + 1]) for i in range(rank))


def _layout_name(layout: Any) -> str:
    return str(getattr(layout, "value", layout))


def _with_bias(op: str, out: TensorValue, bias: Any) -> TensorValue:
    if bias is None:
        return out
    if isinstance(bias, np.ndarray):
        bias = constant(bias, device=out.device)
    shape = bias.shape if isinstance(bias, Value) else np.shape(bias)
    if tuple(shape) != (out.shape[-1],):
        raise GraphShapeError(f"{op}: bias must be rank 1 with shape (out_channels,) = "
                              f"({out.shape[-1]},), got shape {tuple(shape)} [{op}.C5]")
    return add(out, bias)


def _convolution(op: str, rank: int, x: TensorValue, filter: TensorValue, stride: Any,
                 dilation: Any, padding: Any, bias: Any, layouts: tuple[Any, Any],
                 attrs: dict[str, Any]) -> TensorValue:
    if tuple(_layout_name(v) for v in layouts) != _LAYOUTS[rank]:
        raise GraphShapeError(f"{op}: only the {'/'.join(_LAYOUTS[rank])} layouts are "
                              f"supported, got {'/'.join(_layout_name(v) for v in layouts)};"
                              f" permute the operands first [{op}.C5]")
    attrs = {"stride": ints("stride", stride, rank), "dilation": ints("dilation", dilation, rank),
             "paddings": pairs(op, f"{op}.C2", padding, rank), **attrs}
    return _with_bias(op, stage1(op, (x, filter), attrs), bias)


def conv2d(x: TensorValue, filter: TensorValue, stride: tuple[int, int] = (1, 1),
           dilation: tuple[int, int] = (1, 1), padding: tuple[int, int, int, int] = (0, 0, 0, 0),
           groups: int = 1, bias: Any = None, input_layout: Any = "NHWC",
           filter_layout: Any = "RSCF") -> TensorValue:
    """2-D convolution of an NHWC ``x`` with an RSCF ``filter`` ``[kh, kw, C / groups, F]``;
    ``padding`` is ``(top, bottom, left, right)``."""
    return _convolution("conv2d", 2, x, filter, stride, dilation, padding, bias,
                        (input_layout, filter_layout), {"groups": groups})


def conv3d(x: TensorValue, filter: TensorValue, stride: tuple[int, int, int] = (1, 1, 1),
           dilation: tuple[int, int, int] = (1, 1, 1),
           padding: tuple[int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0), groups: int = 1,
           bias: Any = None, input_layout: Any = "NHWC", filter_layout: Any = "QRSCF"
           ) -> TensorValue:
    """3-D convolution of an NDHWC ``x`` with a QRSCF ``filter``
    ``[kd, kh, kw, C / groups, F]``; ``padding`` is (before, after) for D, H, then W."""
    return _convolution("conv3d", 3, x, filter, stride, dilation, padding, bias,
                        (input_layout, filter_layout), {"groups": groups})


def conv2d_transpose(x: TensorValue, filter: TensorValue, stride: tuple[int, int] = (1, 1),
                     dilation: tuple[int, int] = (1, 1),
                     padding: tuple[int, int, int, int] = (0, 0, 0, 0),
                     output_paddings: tuple[int, int] = (0, 0), bias: Any = None,
                     input_layout: Any = "NHWC", filter_layout: Any = "RSCF") -> TensorValue:
    """2-D transposed convolution of an NHWC ``x`` with a ``[kh, kw, F, C]`` ``filter``;
    ``padding`` (top, bottom, left, right) is cropped from the output, ``output_paddings``
    rows/columns are added at its end. The result is NHWC."""
    return _convolution("conv2d_transpose", 2, x, filter, stride, dilation, padding, bias,
                        (input_layout, filter_layout),
                        {"output_paddings": ints("output_paddings", output_paddings, 2)})


__all__ = ["conv2d", "conv2d_transpose", "conv3d"]
