"""REDUCE-6 for conv2d, conv3d and conv2d_transpose (the matmul bound over the receptive
field) and avg_pool2d (a window sum and a division).

For each op: the registry's bound equals the spec's formula (written out again here from
loops over the terms), a result at exactly the allowed error passes and one representable
step further fails, special values compare exactly; and on adversarial inputs (many terms,
cancellation, products and quotients below the subnormal range) the legal-but-different
controls pass: the terms accumulated in the operand dtype itself (the least precision
REDUCE-2 allows) forward and backward, and in float64. ``test_measured_ratios`` prints the
ratio bound / observed error of the worst control per op and input family.
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from conformance.compare import compare_op
from interpreter.registry import get_op
from tests.ops.test_convolution import attrs as conv_attrs
from tests.ops.test_convolution import conv_terms, transpose_terms
from tests.ops.test_pooling import attrs as pool_attrs
from tests.ops.test_pooling import window_values
from tests.ops.test_tolerance_bounds import DT_IDS, DTYPES, farthest, ref, step

#: the ops whose REDUCE-6 bounds this module checks (tests/ops/test_tolerance_bounds.py reads it)
TOLERANCE_OPS = frozenset({"conv2d", "conv3d", "conv2d_transpose", "avg_pool2d"})
NAN, INF = float("nan"), float("inf")
Case = tuple[str, list[np.ndarray], dict[str, Any]]
TRANSPOSE = {"stride": (2, 1), "dilation": (1, 2), "paddings": ((1, 0), (0, 1)),
             "output_paddings": (1, 0)}


# -- the spec's n, M and terms, from loops -------------------------------------------------
def terms_of(name: str, ops: list[np.ndarray], a: dict[str, Any]) -> tuple[dict[Any, Any], Any]:
    """Output index -> its terms (float64 products, or window elements), and the divisor."""
    x = ops[0].astype(np.float64)
    if name == "avg_pool2d":
        found = window_values(ops[0], a)
        return found, (math.prod(a["kernel_size"]) if a["count_boundary"] else None)
    fn = transpose_terms if name == "conv2d_transpose" else conv_terms
    return fn(x, ops[1].astype(np.float64), a), 1


def spec_bound(name: str, ops: list[np.ndarray], a: dict[str, Any], expected: np.ndarray
               ) -> np.ndarray:
    """2 * n * eps * M + n * tiny per element, n and M as the op pages state them."""
    info = ml_dtypes.finfo(expected.dtype)
    found, divisor = terms_of(name, ops, a)
    w = ops[-1]
    out = np.zeros(expected.shape)
    for idx, t in found.items():
        if name == "avg_pool2d":
            n, m = len(t) + 1, math.fsum(abs(v) for v in t) / (divisor or len(t) or 1)
        else:
            n = (w.shape[-1] if name == "conv2d_transpose" else w.shape[-2]) * math.prod(
                w.shape[:-2])
            m = math.fsum(abs(v) for v in t)
        out[idx] = 2 * n * float(info.eps) * m + n * float(info.smallest_subnormal)
    return out


def regular_cases(dtype: np.dtype[Any]) -> list[Case]:
    rng = np.random.default_rng(8)

    def v(*shape: int) -> np.ndarray:
        return rng.uniform(-4.0, 4.0, size=shape).astype(dtype)

    return [("conv2d", [v(1, 4, 5, 2), v(2, 3, 2, 3)], conv_attrs(2, (2, 1), (1, 2),
                                                                  ((1, 0), (0, 2)))),
            ("conv2d", [v(2, 3, 3, 4), v(3, 3, 2, 6)], conv_attrs(2, groups=2)),
            ("conv3d", [v(1, 3, 4, 3, 2), v(2, 2, 1, 2, 2)], conv_attrs(3, 1, 1, 1)),
            ("conv2d_transpose", [v(1, 3, 3, 2), v(2, 3, 3, 2)], TRANSPOSE),
            ("avg_pool2d", [v(1, 5, 5, 2)], pool_attrs((3, 2), 2, 1, 1, True,
                                                       count_boundary=True)),
            ("avg_pool2d", [v(1, 5, 5, 2)], pool_attrs((2, 3), (1, 2), 1, ((2, 0), (0, 1)),
                                                       count_boundary=False))]


@pytest.mark.spec("TOL-1", "REDUCE-6")
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_bound_is_the_spec_formula_its_edge_passes_and_one_step_more_fails(
        dtype: np.dtype[Any]) -> None:
    seen = set()
    for name, ops, a in regular_cases(dtype):
        op = get_op(name)
        expected = ref(name, ops, a)
        want = spec_bound(name, ops, a, expected)
        np.testing.assert_allclose(op.tolerance.bound(ops, a, expected), want, rtol=1e-12,
                                   err_msg=name)
        for d in (1, -1):
            edge = farthest(expected, want, d)
            assert compare_op(op, ops, a, [expected], [edge]) is None, (name, d)
            m = compare_op(op, ops, a, [expected], [step(edge, d)])
            finite = int(np.isfinite(expected.astype(np.float64)).sum())  # NaN: 0 / 0
            assert m is not None and m.bad == finite, (name, d, m)
        seen.add(name)
    assert seen == TOLERANCE_OPS


@pytest.mark.spec("TOL-4", "REDUCE-6")
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_special_values_compare_exactly(dtype: np.dtype[Any]) -> None:
    row = np.array([NAN, 1, INF, -INF, 2, INF, 1, 1], dtype).reshape(1, 1, 8, 1)
    ones = np.ones((1, 2, 1, 1), dtype)
    cases: list[Case] = [("conv2d", [row, ones], conv_attrs(2, (1, 2))),
                         ("conv3d", [row.reshape(1, 1, 1, 8, 1), ones.reshape(1, 1, 2, 1, 1)],
                          conv_attrs(3, (1, 1, 2))),
                         ("conv2d_transpose", [row, np.ones((1, 1, 1, 1), dtype)],
                          {"stride": (1, 1), "dilation": (1, 1), "paddings": ((0, 0), (0, 0)),
                           "output_paddings": (0, 0)}),
                         ("avg_pool2d", [row], pool_attrs((1, 2), (1, 2), count_boundary=True))]
    for name, ops, a in cases:
        op, expected = get_op(name), ref(name, ops, a)
        flat = expected.astype(np.float64).reshape(-1)
        assert np.isnan(flat).any() and np.isinf(flat).any(), name
        for i in np.flatnonzero(~np.isfinite(flat)):
            for wrong in ([0.0, 3.0, INF] if np.isnan(flat[i]) else [-flat[i], NAN, 0.0]):
                got = expected.copy().reshape(-1)
                got[i] = wrong
                m = compare_op(op, ops, a, [expected], [got.reshape(expected.shape)])
                assert m is not None and m.bad == 1, (name, i, wrong)


# -- adversarial inputs and the legal controls ----------------------------------------------
def unit(dtype: np.dtype[Any]) -> float:
    return float(ml_dtypes.finfo(dtype).eps) / 2


def adversarial(name: str, family: str, dtype: np.dtype[Any]) -> Case:
    """One output element (the middle one) whose terms, in the order the loops list them,
    are ``many``: 1, then u (each lost by an accumulator in the dtype: 1 + u ties to even);
    ``cancel``: 64, then 64 u (lost), then -64 (the result is their sum alone); or
    ``subnormal``: products (quotients) below half the smallest subnormal."""
    u, tiny = unit(dtype), float(ml_dtypes.finfo(dtype).smallest_subnormal)
    c = 64 if dtype.itemsize >= 4 else 2  # many terms, while n * u stays small
    k = (5, 5) if name == "avg_pool2d" else (3,) * (3 if name == "conv3d" else 2)
    n = math.prod(k) * (1 if name == "avg_pool2d" else c)
    terms = {"many": [1.0] + [u] * (n - 1), "cancel": [64.0] + [64 * u] * (n - 2) + [-64.0],
             "subnormal": [12 * tiny] * n}[family]  # 12 tiny / 25 rounds to 0
    if name == "avg_pool2d":
        return name, [np.array(terms).reshape(1, *k, 1).astype(dtype)], pool_attrs(
            k, count_boundary=True)
    x, w = np.ones((1, *k, c)), np.array(terms).reshape(*k, c, 1)
    if family == "subnormal":  # x * w = tiny / 4: a product in the dtype rounds to 0
        below = math.ldexp(1.0, math.frexp(tiny)[1] - 3)
        half = math.ldexp(1.0, math.frexp(below)[1] // 2)
        x, w = np.full(x.shape, half), np.full(w.shape, below / half)
    if name == "conv2d_transpose":  # the middle element of the output gets every term
        return name, [x.astype(dtype), np.swapaxes(w, -1, -2).astype(dtype)], {
            "stride": (1, 1), "dilation": (1, 1), "paddings": ((2, 2), (2, 2)),
            "output_paddings": (0, 0)}
    return name, [x.astype(dtype), w.astype(dtype)], conv_attrs(len(k))


def controls(name: str, ops: list[np.ndarray], a: dict[str, Any], shape: tuple[int, ...]
             ) -> dict[str, np.ndarray]:
    """Legal results: the terms (products rounded to the dtype) summed in the dtype forward
    and backward, and in float64 rounded once; avg_pool2d also divides each term first."""
    dtype = ops[0].dtype
    found, divisor = terms_of(name, ops, a)
    out = {k: np.zeros(shape, dtype) for k in ("dtype forward", "dtype backward", "float64")}
    if name == "avg_pool2d":
        out["dtype, terms divided first"] = np.zeros(shape, dtype)
    for idx, t in found.items():
        d = divisor or len(t)
        rounded = [np.asarray(v).astype(dtype) for v in t]
        for key, seq in (("dtype forward", rounded), ("dtype backward", rounded[::-1])):
            acc = np.zeros((), dtype)
            for v in seq:
                acc = (acc + v).astype(dtype)
            out[key][idx] = (acc / np.asarray(d, dtype)).astype(dtype)
        out["float64"][idx] = np.asarray(math.fsum(t) / (d or 1)).astype(dtype)
        if name == "avg_pool2d":
            acc = np.zeros((), dtype)
            for v in rounded:
                acc = (acc + (v / np.asarray(d, dtype)).astype(dtype)).astype(dtype)
            out["dtype, terms divided first"][idx] = acc
    return out


FAMILIES = ("many", "cancel", "subnormal")
RATIOS: dict[tuple[str, str, str], float] = {}


@pytest.mark.spec("REDUCE-2", "REDUCE-6")
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("family", FAMILIES)
def test_legal_controls_pass_on_adversarial_inputs(dtype: np.dtype[Any], family: str) -> None:
    for name in sorted(TOLERANCE_OPS):
        _, ops, a = adversarial(name, family, dtype)
        op, expected = get_op(name), ref(name, ops, a)
        found, divisor = terms_of(name, ops, a)
        exact = np.zeros(expected.shape)
        for idx, t in found.items():
            exact[idx] = math.fsum(t) / (divisor or len(t) or 1)
        bound = op.tolerance.bound(ops, a, expected)
        worst = 0.0
        for key, got in controls(name, ops, a, expected.shape).items():
            assert compare_op(op, ops, a, [expected], [got]) is None, (name, key)
            worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - exact))))
        at = np.unravel_index(np.argmax(bound), bound.shape)
        RATIOS[(name, family, str(dtype))] = float(bound[at]) / worst if worst else math.inf
        limit = 10.0 if family == "cancel" else 5.0  # see the module docstring
        assert worst > 0 and RATIOS[(name, family, str(dtype))] <= limit, (name, RATIOS)


@pytest.mark.spec("REDUCE-6")
def test_measured_ratios() -> None:
    """bound / the worst control's error at the adversarial element (run with -s)."""
    for family in FAMILIES:
        for dtype in DTYPES:
            test_legal_controls_pass_on_adversarial_inputs(dtype, family)
    for (name, family, dtype), r in sorted(RATIOS.items()):
        print(f"REDUCE-6 ratio {name:17s} {family:9s} {dtype:9s} {r:8.2f}")
    assert all(r >= 1 for r in RATIOS.values())
