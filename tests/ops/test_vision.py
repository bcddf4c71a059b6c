"""roi_align against scalar loops written from its spec page (spec/ops/roi_align.md)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import interpreter.experimental.functional as F
from interpreter.dtype import DType
from interpreter.errors import GraphShapeError, GraphTypeError
from interpreter.experimental.tensor import Tensor
from interpreter.graph import DeviceRef, ops
from interpreter.registry import get_op
from interpreter.testing import assert_same, build, run
from tests.ops.test_buffer import run_samples

f32 = np.float32
FLOAT_DTYPES = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32),
                np.dtype(np.float64)]
IDS = ["float16", "bfloat16", "float32", "float64"]
#: regions on a 2 x 4 x 5 image: inside, partly and wholly outside, x2 < x1, a fractional
#: batch index, the last row and column, a wide adaptive grid
ROIS = [[0, 0.5, 0.25, 3.0, 2.75], [1.75, -1.5, -0.5, 2.25, 5.5], [0, 2.0, 1.0, 1.0, 0.5],
        [1, 3.5, 2.5, 4.75, 3.75], [0, -4.0, -3.0, -2.0, -1.5], [1, 0.0, 0.0, 9.0, 7.5]]


Pairs = list[tuple[Any, Any]]


def roi_bins(x: np.ndarray, rois: np.ndarray, oh: int, ow: int, scale: float, ratio: float,
             aligned: bool) -> Iterator[tuple[tuple[int, int, int, int], Pairs, int, int]]:
    """Steps 1-5 of the page, one element and one sample at a time (float32 scalars for the
    coordinates): per result element its index, its (float32 weight, pixel) pairs, count and
    number of samples."""
    _, h, w, channels = x.shape
    for r, row in enumerate(rois.astype(f32)):
        b = math.trunc(float(row[0]))
        off = f32(0.5 if aligned else 0.0)
        x0, y0, x1, y1 = (row[k] * f32(scale) - off for k in (1, 2, 3, 4))
        rw, rh = x1 - x0, y1 - y0
        if not aligned:
            rw, rh = max(rw, f32(1)), max(rh, f32(1))
        bh, bw = rh / f32(oh), rw / f32(ow)
        gh = max(int(ratio) if ratio > 0 else math.ceil(bh), 0)
        gw = max(int(ratio) if ratio > 0 else math.ceil(bw), 0)
        for ph, pw, c in itertools.product(range(oh), range(ow), range(channels)):
            pairs: Pairs = []
            for iy, ix in itertools.product(range(gh), range(gw)):
                y = (y0 + f32(ph) * bh) + ((f32(iy) + f32(0.5)) * bh) / f32(gh)
                xx = (x0 + f32(pw) * bw) + ((f32(ix) + f32(0.5)) * bw) / f32(gw)
                if y < -1 or y > h or xx < -1 or xx > w:
                    pairs += [(f32(0), x[b, 0, 0, c])] * 4
                    continue
                y, xx = max(y, f32(0)), max(xx, f32(0))
                yl, xl = min(int(y), h - 1), min(int(xx), w - 1)
                yh, xh = min(yl + 1, h - 1), min(xl + 1, w - 1)
                ly, lx = y - f32(yl), xx - f32(xl)
                hy, hx = f32(1) - ly, f32(1) - lx
                pairs += [(hy * hx, x[b, yl, xl, c]), (hy * lx, x[b, yl, xh, c]),
                          (ly * hx, x[b, yh, xl, c]), (ly * lx, x[b, yh, xh, c])]
            yield (r, ph, pw, c), pairs, max(gh * gw, 1), gh * gw


def roi_align_loops(x: np.ndarray, rois: np.ndarray, oh: int, ow: int, scale: float,
                    ratio: float, aligned: bool, mode: str
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step 6 on :func:`roi_bins`: the exact AVG/MAX value per element (float64; the terms
    in float32, float64 for float64 data) and n and M of the REDUCE-6 bound (AVG:
    4 * samples + 1 and sum|w * x| / count; MAX: 2 for 16-bit data, else 0, and max|w * x|;
    finite, in float64)."""
    acc = np.float64 if x.dtype == np.float64 else f32
    out = np.zeros((len(rois), oh, ow, x.shape[3]))
    count_n, scale_m = np.zeros_like(out), np.zeros_like(out)
    for i, pairs, count, samples in roi_bins(x, rois, oh, ow, scale, ratio, aligned):
        t = np.array([acc(wgt) * acc(v) for wgt, v in pairs], np.float64)
        mag = np.array([abs(float(wgt) * float(v)) for wgt, v in pairs], np.float64)
        finite = mag[np.isfinite(mag)]
        if mode == "MAX":
            real = t[~np.isnan(t)]
            out[i] = real.max() if real.size else -np.inf
            count_n[i] = 2 if x.dtype.itemsize == 2 else 0
            scale_m[i] = finite.max() if finite.size else 0.0
        else:
            out[i] = (math.fsum(t) if np.isfinite(t).all() else float(np.sum(t))) / count
            count_n[i], scale_m[i] = 4 * samples + 1, finite.sum() / count
    return out, count_n, scale_m


def _roi(x: np.ndarray, rois: np.ndarray, **attrs: Any) -> np.ndarray:
    out: np.ndarray = run(lambda x, r: ops.roi_align(x, r, **attrs), x, rois)
    return out


def _check(x: np.ndarray, rois: np.ndarray, **attrs: Any) -> None:
    got = _roi(x, rois, **attrs)
    with np.errstate(all="ignore"):
        want = roi_align_loops(x, rois, attrs["output_height"], attrs["output_width"],
                               attrs["spatial_scale"], attrs["sampling_ratio"],
                               attrs["aligned"], attrs["mode"])
        _compare(x, got, *want, attrs["mode"])


def _compare(x: np.ndarray, got: np.ndarray, exact: np.ndarray, n: np.ndarray, m: np.ndarray,
             mode: str) -> None:
    assert got.dtype == x.dtype and got.shape == exact.shape
    g = got.astype(np.float64)
    if mode == "MAX":  # one term, rounded once: the reference is that term
        assert_same(got, exact.astype(x.dtype))
        return
    eps = float(ml_dtypes.finfo(x.dtype).eps)
    tiny = float(ml_dtypes.finfo(x.dtype).smallest_subnormal)
    same_special = (np.isnan(g) & np.isnan(exact)) | (np.isinf(exact) & (g == exact))
    close = np.abs(g - exact) <= eps * n * m + tiny * n
    assert (same_special | close).all(), np.argwhere(~(same_special | close))[:5]


@pytest.mark.spec("roi_align.C1", "REDUCE-6", "TOL-4")
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=IDS)
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("mode", ["AVG", "MAX"])
def test_roi_align_matches_the_loops(dtype: np.dtype[Any], aligned: bool, mode: str) -> None:
    rng = np.random.default_rng(11)
    x = rng.uniform(-4, 4, size=(2, 4, 5, 3)).astype(dtype)
    rois = np.array(ROIS, np.float64).astype(dtype)
    for oh, ow, ratio, scale in ((2, 3, 0.0, 1.0), (1, 2, 2.0, 0.5), (3, 1, 1.0, 2.0)):
        _check(x, rois, output_height=oh, output_width=ow, spatial_scale=scale,
               sampling_ratio=ratio, aligned=aligned, mode=mode)


@pytest.mark.spec("roi_align.C1", "TOL-4")
@pytest.mark.parametrize("mode", ["AVG", "MAX"])
def test_roi_align_special_values(mode: str) -> None:
    """NaN, +-inf and -0 pixels: AVG sums them (0 * inf is NaN), MAX skips NaN terms; the
    (0, 0) pixel stays finite so no element is unspecified."""
    x = np.array([[1.0, np.nan, -0.0, 2.0], [np.inf, 3.0, -np.inf, 0.5],
                  [-0.0, -0.0, 4.0, np.nan]], np.float32).reshape(1, 3, 4, 1)
    rois = np.array([[0, 0, 0, 3, 2], [0, 1.5, 0.5, 3.5, 2.5], [0, -2, -2, 5, 4],
                     [0, 2.25, 1.25, 2.25, 1.25]], np.float32)
    for ratio in (0.0, 1.0, 3.0):
        attrs = {"output_height": 2, "output_width": 2, "spatial_scale": 1.0,
                 "sampling_ratio": ratio, "aligned": False, "mode": mode}
        assert not get_op("roi_align").unspecified(x, rois, **attrs).any()
        _check(x, rois, **attrs)


@pytest.mark.spec("roi_align.C1")
def test_roi_align_empty_shapes() -> None:
    x = np.ones((1, 2, 2, 3), np.float32)
    attrs: dict[str, Any] = {"output_height": 2, "output_width": 1}
    assert _roi(x, np.zeros((0, 5), np.float32), **attrs).shape == (0, 2, 1, 3)
    assert _roi(x[..., :0], np.zeros((2, 5), np.float32), **attrs).shape == (2, 2, 1, 0)
    no_batch = np.zeros((0, 2, 2, 3), np.float32)  # every batch index is out of range
    assert _roi(no_batch, np.zeros((2, 5), np.float32), **attrs).shape == (2, 2, 1, 3)
    assert get_op("roi_align").unspecified(no_batch, np.zeros((2, 5), np.float32),
                                           spatial_scale=1.0, sampling_ratio=0.0,
                                           aligned=False, mode="AVG", **attrs).all()


@pytest.mark.spec("roi_align.C1", "TOL-2")
def test_roi_align_unspecified_regions_and_bins() -> None:
    op = get_op("roi_align")
    x = np.ones((2, 3, 3, 2), np.float32)
    x[1, 0, 0, 1] = np.inf
    rois = np.array([[2, 0, 0, 1, 1], [-1, 0, 0, 1, 1], [0.5, 0, 0, np.nan, 1],
                     [0, 0, 0, 1000, 1], [1, -3, 0, 1, 1], [1, 0, 0, 2, 2]], np.float32)
    attrs = {"output_height": 1, "output_width": 2, "spatial_scale": 1.0,
             "sampling_ratio": 0.0, "aligned": False}
    avg = op.unspecified(x, rois, mode="AVG", **attrs)
    # batch 2 and -1: out of range; NaN corner; grid ceil(1000 / 2) > 64; region 4 has samples
    # out of the image and pixel (0, 0) of image 1 is inf in channel 1 (AVG only)
    assert avg[:, :, :, 0].all(axis=(1, 2)).tolist() == [True, True, True, True, False, False]
    assert avg[4, 0, :, 1].tolist() == [True, False] and not avg[5].any()
    mx = op.unspecified(x, rois, mode="MAX", **attrs)
    assert not mx[4].any() and mx[:4].all()
    # the reference still computes them (bounded): a value of the right shape
    assert _roi(x, rois, mode="AVG", **attrs).shape == (6, 1, 2, 2)


@pytest.mark.spec("roi_align.C1", "roi_align.C2", "roi_align.C3", "roi_align.C4",
                  "roi_align.C5", "DEV-1", "OPDT-1")
def test_roi_align_errors() -> None:
    x, r = np.zeros((1, 2, 2, 1), np.float32), np.zeros((1, 5), np.float32)

    def stage(x: np.ndarray, r: np.ndarray, **kw: Any) -> None:
        build(lambda x, r: ops.roi_align(x, r, **{"output_height": 1, "output_width": 1,
                                                  **kw}), x, r)

    with pytest.raises(GraphShapeError, match=r"roi_align: roi_align expects rank-4"):
        stage(x[0], r)
    with pytest.raises(GraphShapeError, match=r"roi_align.C1"):
        stage(np.zeros((1, 2, 0, 1), np.float32), r)
    with pytest.raises(GraphShapeError, match=r"\[M, 5\].*roi_align.C1"):
        stage(x, r[:, :4])
    with pytest.raises(GraphTypeError, match=r"roi_align.C2"):
        stage(x, r.astype(np.float16))
    with pytest.raises(GraphShapeError, match=r"DEV-1"):
        build(lambda x, r: ops.roi_align(x, ops.transfer_to(r, DeviceRef.CPU(1)), 1, 1), x, r)
    for kw in ({"output_height": 0}, {"output_width": 2.0}, {"output_height": True}):
        with pytest.raises(GraphShapeError, match=r"roi_align.C3"):
            stage(x, r, **kw)
    for kw in ({"spatial_scale": 0.0}, {"spatial_scale": float("inf")},
               {"sampling_ratio": 0.5}, {"sampling_ratio": -1.0}, {"sampling_ratio": 65.0},
               {"spatial_scale": "1"}):
        with pytest.raises(GraphShapeError, match=r"roi_align.C4"):
            stage(x, r, **kw)
    for kw in ({"mode": "avg"}, {"aligned": 1}):
        with pytest.raises(GraphShapeError, match=r"roi_align.C5"):
            stage(x, r, **kw)
    with pytest.raises(GraphTypeError, match=r"OPDT-1"):
        stage(x.astype(np.int32), r.astype(np.int32))


@pytest.mark.spec("roi_align.C4")
def test_builder_takes_int_scale_and_ratio_as_floats() -> None:
    x = np.arange(8, dtype=np.float64).reshape(1, 2, 4, 1)
    r = np.array([[0, 0, 0, 4, 2]], np.float64)
    g = build(lambda x, r: ops.roi_align(x, r, 1, 2, spatial_scale=1, sampling_ratio=2), x, r)
    assert g.nodes[-1].attrs["spatial_scale"] == 1.0
    assert type(g.nodes[-1].attrs["sampling_ratio"]) is float
    # two bins of 2x2 samples at x in {0.5, 1.5} / {2.5, 3.5}, y in {0.5, 1.5}, v = 4 y + x;
    # past the last row or column (y = 1.5, x = 3.5) both corners are that row or column
    rows = (4 * 0.5 + 4 * 1) / 2
    want = np.array([rows + (0.5 + 1.5) / 2, rows + (2.5 + 3) / 2]).reshape(1, 1, 2, 1)
    assert_same(run(lambda x, r: ops.roi_align(x, r, 1, 2, sampling_ratio=2), x, r), want)


@pytest.mark.spec("roi_align.C1")
def test_front_end_mirrors_max_signature() -> None:
    x = np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)
    r = np.array([[0, 0, 0, 2, 2]], np.float32)
    t = F.roi_align(Tensor.from_dlpack(x), Tensor.from_dlpack(r), output_height=1,
                    output_width=1, spatial_scale=1.0, sampling_ratio=0.0, aligned=False,
                    mode="AVG")
    assert_same(t.to_numpy(), np.full((1, 1, 1, 1), 4.0, np.float32))
    assert t.dtype is DType.float32


@pytest.mark.spec("roi_align.C1")
def test_roi_align_samples_execute() -> None:
    run_samples("roi_align")
