"""Vision graph-building functions: roi_align (spec/ops/roi_align.md)."""

from __future__ import annotations

from ..core import TensorValue
from .staging import stage1


def roi_align(input: TensorValue, rois: TensorValue, output_height: int, output_width: int,
              spatial_scale: float = 1.0, sampling_ratio: float = 0.0, aligned: bool = False,
              mode: str = "AVG") -> TensorValue:
    """Bilinear ROI pooling of the NHWC ``input`` into ``(M, output_height, output_width, C)``
    (rows of ``rois``: batch index, x1, y1, x2, y2); ``mode`` ``"AVG"`` or ``"MAX"``."""
    def number(v: object) -> object:  # MAX's Python floats also come as ints
        return float(v) if type(v) is int else v

    return stage1("roi_align", (input, rois),
                  {"output_height": output_height, "output_width": output_width,
                   "spatial_scale": number(spatial_scale),
                   "sampling_ratio": number(sampling_ratio), "aligned": aligned, "mode": mode})


__all__ = ["roi_align"]
