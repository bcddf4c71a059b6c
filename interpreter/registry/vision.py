"""Vision ops: roi_align (spec/ops/roi_align.md).

Sample coordinates and bilinear weights are float32 for every dtype (as MAX's kernel computes
them); the weighted corner values are combined in float32 (float64 for float64 data) and
rounded once. The kernel computes in its operands' namespace (``interpreter/arrays.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from .. import arrays
from ..errors import GraphTypeError
from ..types import TensorType, ValueType
from .attrtypes import AttrType
from .core import ArgSource, Attrs, OpCall, OpDef, Tolerance, register
from .dtypesets import FLOATS

__all__ = ["GRID_LIMIT", "roi_geometry"]

Array = Any  # a numpy array, or a CuPy array on a GPU
F32 = np.float32

#: Sample grids finer than this per direction (adaptive sampling of a huge ROI) leave the
#: ROI's results unspecified; the reference clips its grid to it (roi_align.md).
GRID_LIMIT = 64
_MODES = ("AVG", "MAX")


def _roi_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    x, rois = op.check_tensor(types, 0), op.check_tensor(types, 1)
    if x.rank != 4 or 0 in x.shape[1:3]:
        op.fail(types, "roi_align.C1", f"roi_align expects rank-4 NHWC input with H, W >= 1, "
                f"got {list(x.shape)}")
    if rois.rank != 2 or rois.shape[1] != 5:
        op.fail(types, "roi_align.C1", f"roi_align expects rois of shape [M, 5], got "
                f"{list(rois.shape)}")
    if rois.dtype != x.dtype:
        op.fail(types, "roi_align.C2", "rois must have the input's dtype", GraphTypeError)
    if rois.device != x.device:
        op.fail(types, "DEV-1", "operands must be on the same device; transfer first")
    for name in ("output_height", "output_width"):
        v = attrs.get(name)
        if type(v) is not int or v < 1:
            op.fail(types, "roi_align.C3", f"{name}={v!r} must be an int >= 1")
    scale, ratio = attrs.get("spatial_scale"), attrs.get("sampling_ratio")
    if type(scale) is not float or not 0 < scale < float("inf"):
        op.fail(types, "roi_align.C4", f"spatial_scale={scale!r} must be a finite float > 0")
    if type(ratio) is not float or not 0 <= ratio <= GRID_LIMIT or ratio != int(ratio):
        op.fail(types, "roi_align.C4", f"sampling_ratio={ratio!r} must be a float holding an "
                f"integer in [0, {GRID_LIMIT}] (0: adaptive)")
    if type(attrs.get("aligned")) is not bool:
        op.fail(types, "roi_align.C5", f"aligned={attrs.get('aligned')!r} must be a bool")
    if attrs.get("mode") not in _MODES:
        op.fail(types, "roi_align.C5", f"roi_align mode must be 'AVG' or 'MAX', got "
                f"{attrs.get('mode')!r}")
    shape = (rois.shape[0], attrs["output_height"], attrs["output_width"], x.shape[3])
    return (TensorType(x.dtype, shape, x.device),)


def roi_geometry(rois: Array, size: int, pooled: int, column: int, *, spatial_scale: float,
                 sampling_ratio: float, aligned: bool) -> tuple[Array, Array, Array]:
    """Along one image axis (``column`` 1: x, 2: y of ``rois``; ``size``: W or H): the float32
    sample coordinates ``(R, pooled, G)`` (``G`` the largest grid of any ROI), the grid per ROI
    ``(R,)`` clipped to [0, GRID_LIMIT] and whether it was clipped."""
    xp = arrays.namespace(rois)
    r = rois.astype(F32)
    off = F32(0.5 if aligned else 0.0)
    start = r[:, column] * F32(spatial_scale) - off
    length = r[:, column + 2] * F32(spatial_scale) - off - start
    length = length if aligned else xp.maximum(length, F32(1))
    bin_ = length / F32(pooled)
    with arrays.errstate(xp, invalid="ignore"):
        want = xp.full(bin_.shape, sampling_ratio, F32) if sampling_ratio else xp.ceil(bin_)
        grid = xp.clip(xp.nan_to_num(want, nan=0.0), 0, GRID_LIMIT).astype(np.int64)
        clipped = ~(want <= GRID_LIMIT)  # NaN and +inf too
    steps = max(int(grid.max()) if grid.size else 0, 1)
    i = xp.arange(steps, dtype=F32)[None, None, :]
    p = xp.arange(pooled, dtype=F32)[None, :, None]
    b, s, g = bin_[:, None, None], start[:, None, None], xp.maximum(grid, 1)[:, None, None]
    with arrays.errstate(xp, invalid="ignore", over="ignore"):
        coord = s + p * b + (i + F32(0.5)) * b / g.astype(F32)  # this order, float32
    return coord, grid, clipped


def _corners(coord: Array, size: int) -> tuple[Array, Array, Array, Array, Array]:
    """Bilinear corners of float32 coordinates along one axis of ``size`` pixels: in range
    (``-1 <= c <= size``), low and high pixel, low and high weight (0 outside)."""
    xp = arrays.namespace(coord)
    with arrays.errstate(xp, invalid="ignore"):
        inside = (coord >= -1) & (coord <= size)
        c = xp.where(inside, xp.maximum(coord, F32(0)), F32(0))
    lo = xp.minimum(xp.floor(c).astype(np.int64), size - 1)
    hi = xp.minimum(lo + 1, size - 1)
    frac = c - lo.astype(F32)
    return inside, lo, hi, F32(1) - frac, frac


def _sample_terms(x: Array, rois: Array, acc: Any, *, output_height: int, output_width: int,
                  spatial_scale: float, sampling_ratio: float, aligned: bool
                  ) -> tuple[Array, Array, Array, Array]:
    """Every weighted corner value ``w * x`` of every sample: ``terms (R, oh, ow, 4, G, G, C)``
    in ``acc``, ``used`` (the samples of each ROI's grid), ``outside`` (used samples out of
    the image, which read pixel (0, 0) with weight 0, as MAX's kernel) and the divisor
    ``count = max(gh * gw, 1)`` per ROI."""
    xp = arrays.namespace(x)
    n, h, w, _ = x.shape
    geo: dict[str, Any] = {"spatial_scale": spatial_scale, "sampling_ratio": sampling_ratio,
                           "aligned": aligned}
    ys, gh, _ = roi_geometry(rois, h, output_height, 2, **geo)
    xs, gw, _ = roi_geometry(rois, w, output_width, 1, **geo)
    iny, ylo, yhi, wy0, wy1 = _corners(ys, h)  # (R, oh, Gh)
    inx, xlo, xhi, wx0, wx1 = _corners(xs, w)  # (R, ow, Gw)
    with arrays.errstate(xp, invalid="ignore"):
        batch = xp.clip(xp.nan_to_num(xp.trunc(rois[:, 0].astype(F32))), 0, n - 1)
    b = batch.astype(np.int64)[:, None, None, None, None]
    inside = iny[:, :, None, :, None] & inx[:, None, :, None, :]  # (R, oh, ow, Gh, Gw)
    ky = xp.arange(ys.shape[2])[None, :] < gh[:, None]
    kx = xp.arange(xs.shape[2])[None, :] < gw[:, None]
    used = ky[:, None, None, :, None] & kx[:, None, None, None, :]
    terms = []
    for yi, wy in ((ylo, wy0), (yhi, wy1)):
        for xi, wx in ((xlo, wx0), (xhi, wx1)):
            wgt = wy[:, :, None, :, None] * wx[:, None, :, None, :]  # float32 product
            wgt = xp.where(inside, wgt, F32(0))
            yy = xp.where(inside, yi[:, :, None, :, None], 0)
            xx = xp.where(inside, xi[:, None, :, None, :], 0)
            with arrays.errstate(xp, invalid="ignore", over="ignore"):  # 0 * inf = NaN
                terms.append(wgt.astype(acc)[..., None] * x[b, yy, xx].astype(acc))
    count = xp.maximum(gh * gw, 1).astype(acc)[:, None, None, None]
    return xp.stack(terms, axis=3), used[:, :, :, None, :, :, None], used & ~inside, count


def _roi_align(x: Array, rois: Array, *, output_height: int, output_width: int,
               spatial_scale: float, sampling_ratio: float, aligned: bool, mode: str) -> Array:
    """AVG: the sum of a bin's weighted corner values over ``count``; MAX: the largest of
    them that is not NaN (-inf without one), as MAX's kernel compares."""
    xp = arrays.namespace(x)
    shape = (rois.shape[0], output_height, output_width, x.shape[3])
    if 0 in shape or x.shape[0] == 0:  # no batch: every ROI's index is out of range
        return xp.zeros(shape, x.dtype)
    acc = x.dtype if x.dtype == np.float64 else F32
    t, used, _, count = _sample_terms(
        x, rois, acc, output_height=output_height, output_width=output_width,
        spatial_scale=spatial_scale, sampling_ratio=sampling_ratio, aligned=aligned)
    with arrays.errstate(xp, invalid="ignore", over="ignore"):
        if mode == "MAX":
            out = xp.max(xp.where(used & ~xp.isnan(t), t, -np.inf), axis=(3, 4, 5))
        else:
            out = xp.sum(xp.where(used, t, 0), axis=(3, 4, 5)) / count
    return out.astype(x.dtype)


def _geometry_attrs(attrs: Attrs) -> dict[str, Any]:
    return {k: attrs[k] for k in ("output_height", "output_width", "spatial_scale",
                                  "sampling_ratio", "aligned")}


def _host_terms(ops: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
    """|w * x| of every used sample term in float64 (non-finite ones as 0), and count."""
    x, rois = ops[0], ops[1]
    if 0 in x.shape or rois.shape[0] == 0:
        shape = (rois.shape[0], attrs["output_height"], attrs["output_width"], x.shape[3])
        return np.zeros((*shape[:3], 1, 1, 1, shape[3])), np.ones((1,) * 7, bool), np.ones(1)
    t, used, _, count = _sample_terms(np.asarray(x, np.float64), rois, np.float64,
                                      **_geometry_attrs(attrs))
    with np.errstate(invalid="ignore"):
        return np.where(used & np.isfinite(t), np.abs(t), 0.0), used, count


def _roi_count(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
    """AVG: 4 * samples per bin + 1; MAX: 2 for float16 and bfloat16, else 0"""
    if attrs["mode"] == "MAX":  # one product: exact unless the weight is rounded first
        return 2 if np.dtype(expected.dtype).itemsize == 2 else 0
    x, rois = ops[0], ops[1]
    geo = {k: attrs[k] for k in ("spatial_scale", "sampling_ratio", "aligned")}
    _, gh, _ = roi_geometry(rois, x.shape[1], attrs["output_height"], 2, **geo)
    _, gw, _ = roi_geometry(rois, x.shape[2], attrs["output_width"], 1, **geo)
    return (4 * gh * gw + 1)[:, None, None, None]


def _roi_scale(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
    """AVG: sum of the bin's |w * x| / count; MAX: the largest |w * x| of the bin"""
    a, _, count = _host_terms(ops, attrs)
    if attrs["mode"] == "MAX":
        return np.max(a, axis=(3, 4, 5))
    with np.errstate(over="ignore"):
        return np.sum(a, axis=(3, 4, 5)) / count


def _roi_unspecified(x: Array, rois: Array, **attrs: Any) -> np.ndarray:
    """ROIs with a batch index (truncated) outside [0, N), non-finite scaled coordinates or a
    grid over GRID_LIMIT; AVG bins with a sample out of the image where pixel (0, 0) of the
    ROI's image is not finite (MAX reads it with weight 0: 0 * inf is NaN), or whose finite
    |terms| add up past the dtype's largest value (the order decides, REDUCE-5)."""
    r = np.asarray(rois).astype(F32)
    shape = (r.shape[0], attrs["output_height"], attrs["output_width"], x.shape[3])
    if 0 in shape or x.shape[0] == 0:
        return np.ones(shape, bool)
    geo = _geometry_attrs(attrs)
    del geo["output_height"], geo["output_width"]
    with np.errstate(all="ignore"):
        b = np.trunc(r[:, 0])
        ends = r[:, 1:] * F32(attrs["spatial_scale"])
        bad = ~((b >= 0) & (b < x.shape[0])) | ~np.isfinite(ends).all(axis=1)
        for column, size, pooled in ((1, x.shape[2], shape[2]), (2, x.shape[1], shape[1])):
            coord, _, clipped = roi_geometry(r, size, pooled, column, **geo)
            bad |= clipped | ~np.isfinite(coord).all(axis=(1, 2))
    if attrs["mode"] == "MAX":
        return np.broadcast_to(bad[:, None, None, None], shape)
    t, used, outside, _ = _sample_terms(np.asarray(x, np.float64), rois, np.float64,
                                        **_geometry_attrs(attrs))
    origin = np.asarray(x)[np.clip(np.nan_to_num(b), 0, x.shape[0] - 1).astype(np.int64), 0, 0]
    poisoned = outside.any(axis=(3, 4))[..., None] & ~np.isfinite(
        origin.astype(np.float64))[:, None, None, :]
    with np.errstate(all="ignore"):
        total = np.sum(np.where(used & np.isfinite(t), np.abs(t), 0.0), axis=(3, 4, 5))
    big = total > float(ml_dtypes.finfo(x.dtype).max)
    return bad[:, None, None, None] | poisoned | big


def _sample_roi_align(src: ArgSource) -> OpCall:
    dtype = src.dtype(FLOATS, data=True)
    n, h, w, c = src.shape(min_rank=4, max_rank=4, max_side=4)
    if 0 in (h, w):  # roi_align.C1: an empty image has no rows or columns, but no channels
        h, w, c = max(h, 1), max(w, 1), 0
    scale = src.choice([1.0, 0.5, 2.0])
    rows = []
    for _ in range(src.integer(0, 3)):
        batch = src.integer(0, max(n - 1, 0)) + src.choice([0.0, 0.5])
        # corners in quarter pixels of the image, a little beyond it, in ROI units
        ends = [src.integer(-6, 4 * size + 6) / 4 / scale for size in (w, h, w, h)]
        rows.append([batch, *ends])
    rois = np.array(rows, np.float64).reshape(-1, 5).astype(dtype.to_numpy())
    attrs = {"output_height": src.integer(1, 3), "output_width": src.integer(1, 3),
             "spatial_scale": scale, "sampling_ratio": float(src.integer(0, 3)),
             "aligned": src.boolean(), "mode": src.choice(list(_MODES))}
    return OpCall([src.values(dtype, (n, h, w, c)), rois], attrs)


def _int_attr(v: Any) -> bool:
    return type(v) is int


#: REDUCE-6 over the terms of a bin: any order, any precision at least the dtype's
ROI_ALIGN_TOLERANCE = Tolerance("reduction", 1, _roi_count, _roi_scale)
register(OpDef("roi_align",
               summary="Bilinear ROI pooling (AVG or MAX) of an NHWC image into fixed-size "
                       "bins per region (rows: batch, x1, y1, x2, y2).",
               category="vision", operands=("input", "rois"),
               attrs=("output_height", "output_width", "spatial_scale", "sampling_ratio",
                      "aligned", "mode"),
               infer=_roi_infer, kernel=_roi_align, dtypes=FLOATS,
               tolerance=ROI_ALIGN_TOLERANCE, unspecified=_roi_unspecified,
               sample=_sample_roi_align,
               attr_types={"output_height": AttrType("int", _int_attr, ">= 1"),
                           "output_width": AttrType("int", _int_attr, ">= 1"),
                           "spatial_scale": AttrType("float", lambda v: type(v) is float,
                                                     "finite, > 0"),
                           "sampling_ratio": AttrType("float", lambda v: type(v) is float,
                                                      "an integer in [0, 64]; 0: adaptive"),
                           "aligned": AttrType("bool", lambda v: type(v) is bool),
                           "mode": AttrType("str", lambda v: type(v) is str,
                                            "`'AVG'` or `'MAX'`")}))
