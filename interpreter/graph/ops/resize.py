"""Resize graph-building functions (MAX ``ops`` names; spec/ops/resize_*.md).

MAX gives ``coordinate_transform_mode`` and ``round_mode`` as ints 0..3; the primitive
ops take their names (``interpreter/registry/resize.py``), and the builders accept either.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

import numpy as np

from ...errors import GraphShapeError, GraphTypeError
from ...registry.resize import COORDINATE_MODES, ROUND_MODES
from ..core import TensorValue
from .staging import stage1


class InterpolationMode(Enum):
    """MAX's ``ops.InterpolationMode`` (``resize``'s method)."""

    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


def _mode(op: str, name: str, value: Any, names: tuple[str, ...]) -> Any:
    """MAX's int (0..3) as its name; a name passes through; anything else is left for the
    type rule to report."""
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        if not 0 <= int(value) < len(names):
            raise GraphShapeError(f"{op}: {name} must be 0-{len(names) - 1}, got {value} "
                                  f"[{op}.C2]")
        return names[int(value)]
    return value


def _size(size: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(int(d) if isinstance(d, np.integer) else d for d in size)


def resize_nearest(input: TensorValue, size: Sequence[int], coordinate_transform_mode: Any = 0,
                   round_mode: Any = 0) -> TensorValue:
    """Nearest-neighbour resize of every axis to ``size`` (MAX's modes, ints or names)."""
    return stage1("resize_nearest", (input,), {
        "shape": _size(size),
        "coordinate_transform_mode": _mode("resize_nearest", "coordinate_transform_mode",
                                           coordinate_transform_mode, COORDINATE_MODES),
        "round_mode": _mode("resize_nearest", "round_mode", round_mode, ROUND_MODES)})


def resize_linear(input: TensorValue, size: Sequence[int], coordinate_transform_mode: Any = 0,
                  antialias: bool = False) -> TensorValue:
    """Linear resize of every axis to ``size``; ``antialias=True`` is not supported
    (resize_linear.C3)."""
    if antialias is not False:
        raise GraphTypeError(f"resize_linear: antialias={antialias!r} is not supported; "
                             "only antialias=False [resize_linear.C3]")
    return stage1("resize_linear", (input,), {
        "shape": _size(size),
        "coordinate_transform_mode": _mode("resize_linear", "coordinate_transform_mode",
                                           coordinate_transform_mode, COORDINATE_MODES)})


def resize_bicubic(input: TensorValue, size: Sequence[int]) -> TensorValue:
    """Bicubic resize of the H and W axes of an NCHW tensor to ``size``."""
    return stage1("resize_bicubic", (input,), {"shape": _size(size)})


def resize(input: TensorValue, shape: Sequence[int],
           interpolation: InterpolationMode = InterpolationMode.BILINEAR) -> TensorValue:
    """MAX's ``resize``: a rank-4 (NCHW) tensor by ``interpolation``, default modes."""
    if input.rank != 4 or len(list(shape)) != 4:
        raise GraphShapeError(f"resize: input and shape must have rank 4 (NCHW), got "
                              f"{input.type} and {list(shape)} [resize_linear.C1]")
    if interpolation is InterpolationMode.NEAREST:
        return resize_nearest(input, shape)
    if interpolation is InterpolationMode.BICUBIC:
        return resize_bicubic(input, shape)
    return resize_linear(input, shape)


__all__ = ["InterpolationMode", "resize", "resize_bicubic", "resize_linear", "resize_nearest"]
