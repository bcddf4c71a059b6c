"""Pooling graph-building functions (MAX ``ops`` names; spec/ops/max_pool2d.md,
avg_pool2d.md).

MAX's signatures: ``stride``, ``dilation`` and ``padding`` are an int for both spatial axes
or an ``(h, w)`` pair; ``padding`` is added on both sides of its axis (the primitive ops take
one ``(before, after)`` pair per axis).
"""

from __future__ import annotations

from typing import Any

from ..core import TensorValue
from .convolution import ints
from .staging import stage1


def _window(kernel_size: Any, stride: Any, dilation: Any, padding: Any, ceil_mode: bool
            ) -> dict[str, Any]:
    pad = ints("padding", padding, 2)
    paddings = tuple((p, p) for p in pad) if isinstance(pad, tuple) else pad
    return {"kernel_size": ints("kernel_size", kernel_size, 2),
            "stride": ints("stride", stride, 2), "dilation": ints("dilation", dilation, 2),
            "paddings": paddings, "ceil_mode": ceil_mode}


def max_pool2d(input: TensorValue, kernel_size: tuple[int, int], stride: int | tuple[int, int] = 1,
               dilation: int | tuple[int, int] = 1, padding: int | tuple[int, int] = 0,
               ceil_mode: bool = False) -> TensorValue:
    """The largest element of each ``kernel_size`` window of an NHWC ``input``."""
    return stage1("max_pool2d", (input,),
                  _window(kernel_size, stride, dilation, padding, ceil_mode))


def avg_pool2d(input: TensorValue, kernel_size: tuple[int, int], stride: int | tuple[int, int] = 1,
               dilation: int | tuple[int, int] = 1, padding: int | tuple[int, int] = 0,
               ceil_mode: bool = False, count_boundary: bool = True) -> TensorValue:
    """The mean of each ``kernel_size`` window of an NHWC ``input``; ``count_boundary``:
    divide by the window size (padding counted) rather than its number of input elements."""
    return stage1("avg_pool2d", (input,), {
        **_window(kernel_size, stride, dilation, padding, ceil_mode),
        "count_boundary": count_boundary})


__all__ = ["avg_pool2d", "max_pool2d"]
