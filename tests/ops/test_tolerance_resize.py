"""The REDUCE-6 bounds of resize_linear and resize_bicubic, against a float64 oracle.

The bound (spec/ops/resize_linear.md): ``1 * n * eps * M + n * tiny`` with ``n = 2^k`` (k
resized axes) and ``M = (1 + sum over resized axes of (|c| + 1)) *
(sum of |x| over the window)``: the ``|c|`` term admits an implementation that computes the
coordinate ``c`` in float32, whose error moves the weights. Here: the registry's bound is
that formula (written out again), the reference and legal-but-different controls (float32
coordinates and weights, taps summed in reverse; 16-bit floats computed in their own dtype)
stay inside it on adversarial inputs (long axes, non-power-of-two scales, cancellation,
subnormals), and the bound is not looser than needed by more than 4x there: the measured
ratio bound / observed error is printed per op (``-s``) and asserted.
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from conformance.compare import compare_op
from interpreter.registry import get_op
from tests.ops.test_resize import coord, keys, py_resize
from tests.ops.test_tolerance_bounds import farthest, step

#: the ops whose REDUCE-6 bounds this module checks (``tests/ops/test_tolerance_bounds.family_ops``)
TOLERANCE_OPS = frozenset({"resize_linear", "resize_bicubic"})

BF16 = np.dtype(ml_dtypes.bfloat16)
MODES = ["half_pixel", "align_corners", "asymmetric", "half_pixel_1D"]


def attrs_of(name: str, shape: tuple[int, ...], mode: str) -> dict[str, Any]:
    a: dict[str, Any] = {"shape": shape}
    if name == "resize_linear":
        a["coordinate_transform_mode"] = mode
    return a


def spec_bound(name: str, x: np.ndarray, shape: tuple[int, ...], mode: str,
               dtype: np.dtype[Any]) -> np.ndarray:
    """The spec's formula, element by element over 1-D and 2-D windows (loops)."""
    cubic = name == "resize_bicubic"
    resized = [a for a, (n, m) in enumerate(zip(x.shape, shape, strict=True)) if n != m]
    n_taps = 2 ** len(resized)
    info = ml_dtypes.finfo(dtype)
    ax = np.abs(x.astype(np.float64))
    out = np.zeros(shape)
    for idx in np.ndindex(*shape):
        factor, ranges = 1.0, []
        for a, i in enumerate(idx):
            n, m = x.shape[a], shape[a]
            if n == m:
                ranges.append([i])
                continue
            c = coord(i, n, m, mode)
            factor += abs(float(c)) + 1
            f = math.floor(c)
            js = range(-1, 3) if cubic else range(2)
            ranges.append([min(max(f + j, 0), n - 1) for j in js])
        window = sum(ax[k] for k in np.ndindex(*[len(r) for r in ranges])
                     for k in [tuple(r[j] for r, j in zip(ranges, k, strict=True))])
        out[idx] = n_taps * float(info.eps) * factor * window + n_taps * float(
            info.smallest_subnormal)
    return out


def float32_coordinates(x: np.ndarray, shape: tuple[int, ...], mode: str, cubic: bool,
                        work: Any = np.float32) -> np.ndarray:
    """A legal implementation: c, floor(c), the weights and the sums in ``work`` precision
    (float32 as a GPU kernel would, or the 16-bit dtype itself), taps in reverse order."""
    w32 = np.dtype(work)
    a = x.astype(w32)
    for axis, (n, m) in enumerate(zip(x.shape, shape, strict=True)):
        if n == m:
            continue
        i = np.arange(m, dtype=np.float32)
        half, scale = np.float32(0.5), np.float32(m) / np.float32(n)
        if mode == "align_corners":
            c = i * (np.float32(n - 1) / np.float32(max(m - 1, 1))) if m > 1 else 0 * i
        elif mode == "asymmetric":
            c = i / scale
        elif mode == "half_pixel_1D" and m == 1:
            c = 0 * i
        else:
            c = (i + half) / scale - half
        f = np.floor(c)
        t = c - f
        js = range(-1, 3) if cubic else range(2)
        terms = []
        for j in js:
            d = (t - np.float32(j)).astype(np.float32)
            w = (np.float32([keys(float(v)) for v in d]) if cubic
                 else np.maximum(np.float32(0), np.float32(1) - np.abs(d)))
            idx = np.clip(f.astype(np.int64) + j, 0, n - 1)
            shp = (-1,) + (1,) * (x.ndim - axis - 1)
            terms.append(w.astype(w32).reshape(shp) * np.take(a, idx, axis=axis))
        total = terms[-1]
        for term in reversed(terms[:-1]):
            total = (total + term).astype(w32)
        a = total
    return a.astype(x.dtype)


def adversarial(dtype: np.dtype[Any]) -> list[tuple[str, np.ndarray, tuple[int, ...], str]]:
    """(op, x, result shape, mode): long axes at non-power-of-two scales, alternating signs
    (cancellation), values near the subnormal range, both resized axes."""
    rng = np.random.default_rng(19)
    big = rng.choice([-1.0, 1.0], 4097) * rng.uniform(0.5, 1.0, 4097)
    tiny = float(ml_dtypes.finfo(dtype).smallest_normal) * rng.uniform(-4, 4, 300)
    cases = []
    for mode in MODES:
        cases += [("resize_linear", big.astype(dtype), (3001,), mode),
                  ("resize_linear", big[:2049].astype(dtype), (4093,), mode),
                  ("resize_linear", tiny.astype(dtype), (701,), mode)]
    two = rng.uniform(-1, 1, (1, 1, 61, 67)).astype(dtype)
    cases += [("resize_linear", two[0, 0], (127, 29), "half_pixel"),
              ("resize_bicubic", two, (1, 1, 127, 29), "half_pixel"),
              ("resize_bicubic", big.astype(dtype).reshape(1, 1, 1, -1), (1, 1, 1, 2731),
               "half_pixel"),
              ("resize_bicubic", big.astype(dtype).reshape(1, 1, 1, -1), (1, 1, 1, 5000),
               "half_pixel"),
              ("resize_bicubic", tiny.astype(dtype).reshape(1, 1, 3, 100), (1, 1, 7, 33),
               "half_pixel")]
    return cases


def observed(name: str, x: np.ndarray, shape: tuple[int, ...], mode: str
             ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(float64 oracle, the registry's bound, results of the reference and the controls)."""
    op = get_op(name)
    attrs = attrs_of(name, shape, mode)
    oracle = py_resize(x, shape, mode, name == "resize_bicubic")
    ref = op.apply(x, **attrs)[0]
    bound = op.tolerance.bound([x], attrs, ref)
    cubic = name == "resize_bicubic"
    got = [ref, float32_coordinates(x, shape, mode, cubic)]
    if x.dtype.itemsize == 2:
        got.append(float32_coordinates(x, shape, mode, cubic, work=x.dtype))
    return oracle, bound, got


@pytest.mark.spec("REDUCE-6", "TOL-1")
@pytest.mark.parametrize("name", ["resize_linear", "resize_bicubic"])
def test_the_registry_bound_is_the_spec_formula(name: str) -> None:
    rng = np.random.default_rng(5)
    for mode in MODES if name == "resize_linear" else ["half_pixel"]:
        for xs, shape in [((5,), (3,)), ((3, 4), (7, 4)), ((2, 3), (1, 8))]:
            if name == "resize_bicubic":
                xs, shape = (1, 1, *xs)[-4:], (1, 1, *shape)[-4:]
                xs, shape = (1,) * (4 - len(xs)) + xs, (1,) * (4 - len(shape)) + shape
            x = rng.uniform(-3, 3, xs).astype(np.float32)
            attrs = attrs_of(name, shape, mode)
            ref = get_op(name).apply(x, **attrs)[0]
            np.testing.assert_allclose(get_op(name).tolerance.bound([x], attrs, ref),
                                       spec_bound(name, x, shape, mode, np.dtype(np.float32)),
                                       rtol=1e-12)


@pytest.mark.spec("REDUCE-6")
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16), BF16],
                         ids=["float32", "float16", "bfloat16"])
def test_reference_and_controls_stay_inside_and_the_bound_is_tight(
        dtype: np.dtype[Any]) -> None:
    tightest: dict[str, float] = {}
    for name, x, shape, mode in adversarial(dtype):
        oracle, bound, results = observed(name, x, shape, mode)
        for k, got in enumerate(results):
            err = np.abs(got.astype(np.float64) - oracle)
            assert np.all(err <= bound), (name, mode, k, float((err / bound).max()))
            if k == 1 and dtype == np.float32:  # the float32-coordinate control
                hit = err > 0
                if hit.any():
                    ratio = float((bound[hit] / err[hit]).min())
                    tightest[name] = min(tightest.get(name, math.inf), ratio)
    if dtype == np.float32:
        print(f"\nbound / observed error (float32 coordinates, tightest element): {tightest}")
        assert set(tightest) == {"resize_linear", "resize_bicubic"}
        assert all(r <= 4 for r in tightest.values()), tightest


@pytest.mark.spec("REDUCE-6", "TOL-1")
def test_bound_edge_passes_and_one_step_beyond_fails() -> None:
    rng = np.random.default_rng(8)
    x = rng.uniform(-2, 2, (1, 1, 3, 5)).astype(np.float32)
    for name, shape, attrs in [
            ("resize_linear", (1, 1, 5, 9), {"coordinate_transform_mode": "align_corners"}),
            ("resize_bicubic", (1, 1, 6, 3), {})]:
        op = get_op(name)
        attrs = {"shape": shape, **attrs}
        expected = op.apply(x, **attrs)[0]
        bound = op.tolerance.bound([x], attrs, expected)
        for d in (1, -1):
            edge = farthest(expected, bound, d)
            assert compare_op(op, [x], attrs, [expected], [edge]) is None
            m = compare_op(op, [x], attrs, [expected], [step(edge, d)])
            assert m is not None and "REDUCE-6" in m.message
