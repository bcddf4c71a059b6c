"""relu, atanh and gelu's quick form against independent references (spec/ops/relu.md,
atanh.md, gelu.md; NUM-7): Python ``math`` rounded once by ``round_exact`` of
``test_elementwise``, the mpmath oracle for float64, and literals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.graph import ops
from interpreter.registry import REGISTRY
from interpreter.testing import assert_same, run
from tests.ops.test_elementwise import FLOATS, floats_for, pyf, round_exact, ulp_distance

nan, inf = math.nan, math.inf


@pytest.mark.spec("NUM-7")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_relu_is_x_where_positive_else_plus_zero(dtype: DType) -> None:
    x = floats_for(dtype, 80, seed=5)
    got = run(lambda v: ops.relu(v), x)
    want = np.array([v if v > 0 else 0.0 for v in pyf(x)]).astype(x.dtype)
    assert_same(got, want)
    assert not np.signbit(got.astype(np.float64)).any()  # never -0.0, never a negative NaN
    assert not np.isnan(got.astype(np.float64)).any()  # relu(NaN) = +0.0 (MAX's ReluOp)


@pytest.mark.spec("NUM-7")
def test_relu_literals() -> None:
    x = np.array([-0.0, nan, -nan, -inf, inf, -1e-45, 1e-45, 3.5], np.float32)
    assert_same(run(lambda v: ops.relu(v), x),
                np.array([0.0, 0.0, 0.0, 0.0, inf, 0.0, 1e-45, 3.5], np.float32))
    assert run(lambda v: ops.relu(v), np.float64(-2.0)).tolist() == 0.0  # rank 0


def _atanh(v: float) -> float:
    """C99 Annex F: +-1 -> +-inf, |x| > 1 -> NaN, NaN -> NaN."""
    if math.isnan(v) or abs(v) > 1:
        return nan
    if abs(v) == 1:
        return math.copysign(inf, v)
    return math.atanh(v)


@pytest.mark.spec("NUM-7", "NUM-14")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_atanh_within_its_budget(dtype: DType) -> None:
    x = np.concatenate([floats_for(dtype, 40, seed=6, scale=2.0),
                        np.linspace(-1, 1, 201).astype(dtype.to_numpy()),
                        (1 - np.logspace(-1, -7, 40)).astype(dtype.to_numpy())])
    got = run(lambda v: ops.atanh(v), x)
    if dtype is DType.float64:  # math.atanh is itself up to an ulp off: the oracle
        from tests.ops.oracle import exact, round_mpf
        want = np.array([round_mpf(exact("atanh", [v]), np.dtype(np.float64))
                         for v in pyf(x)])
    else:
        want = np.array([round_exact(_atanh(v), dtype) for v in pyf(x)]).astype(x.dtype)
    dist = ulp_distance(got, want)
    assert dist.max() <= REGISTRY["atanh"].tolerance.ulps, (x[dist.argmax()], got[dist.argmax()])


@pytest.mark.spec("NUM-7")
def test_atanh_literals() -> None:
    x = np.array([0.0, -0.0, 1.0, -1.0, 1.0000001, -2.0, inf, -inf, nan], np.float32)
    assert_same(run(lambda v: ops.atanh(v), x),
                np.array([0.0, -0.0, inf, -inf, nan, nan, nan, nan, nan], np.float32))
    got = run(lambda v: ops.atanh(v), np.array([0.5, 1e-30], np.float32))
    assert got.tolist() == [np.float32(0.5493061443340548).item(), np.float32(1e-30).item()]


def _gelu_quick(v: float) -> float:
    """x * sigmoid(1.702 x) with no overflow or cancellation for either sign; -0.0 at -inf."""
    if math.isnan(v) or v == -inf:
        return nan if math.isnan(v) else -0.0
    if v >= 0:
        return v / (1 + math.exp(-1.702 * v))
    e = math.exp(1.702 * v)
    return v * e / (1 + e)


@pytest.mark.spec("NUM-7", "gelu.C1")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_gelu_quick_within_its_budget(dtype: DType) -> None:
    x = np.concatenate([floats_for(dtype, 150, seed=7, scale=12.0),
                        np.linspace(-60, 8, 137).astype(dtype.to_numpy())])
    got = run(lambda v: ops.gelu(v, approximate="quick"), x)
    if dtype is DType.float64:  # 1.702 * x rounds in float64: the oracle
        from tests.ops.oracle import exact, round_mpf
        want = np.array([round_mpf(exact("gelu", [v], {"approximate": "quick"}),
                                   np.dtype(np.float64)) for v in pyf(x)])
    else:  # the float64 formula's error (~|1.702 x| * 2**-53) is far below a float32 ulp
        want = np.array([round_exact(_gelu_quick(v), dtype) for v in pyf(x)]).astype(x.dtype)
    dist = ulp_distance(got, want)
    assert dist.max() <= REGISTRY["gelu"].tolerance.ulps, (x[dist.argmax()], got[dist.argmax()])


@pytest.mark.spec("NUM-7", "gelu.C1")
def test_gelu_quick_literals_and_limits() -> None:
    x = np.array([-inf, -0.0, 0.0, inf, nan, -1e30, 1e30], np.float32)
    assert_same(run(lambda v: ops.gelu(v, approximate="quick"), x),
                np.array([-0.0, -0.0, 0.0, inf, nan, -0.0, 1e30], np.float32))
    # x = -10: -10 / (1 + e**17.02) = -4.0579613e-07 in float32 (MAX 26.7: -4.0579593e-07)
    got = run(lambda v: ops.gelu(v, approximate="quick"), np.array([-10.0, 1.0], np.float32))
    assert got.tolist() == [np.float32(-4.057961294855310e-07).item(),
                            np.float32(0.8457957659328213).item()]
