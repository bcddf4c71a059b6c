"""layer_norm, rms_norm and group_norm against independent formulas (REDUCE-8, spec/ops/).

Expected values come from Python loops over each group with ``math.fsum`` in float64 (or
hand-written literals), never from the interpreter's kernels; they are compared within the
op's REDUCE-6 bound written out in ``tests/ops/test_tolerance_normalization.py``.
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import GraphShapeError, GraphTypeError
from interpreter.experimental import functional as F
from interpreter.experimental.tensor import Tensor
from interpreter.graph import ops
from interpreter.registry import get_op
from interpreter.testing import assert_same, build, run
from interpreter.testing.sampling import RandomArgSource
from tests.ops.test_tolerance_normalization import spec_bound

FLOATS = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32),
          np.dtype(np.float64)]
nan, inf = math.nan, math.inf


# -- independent references (Python floats, one group at a time) ---------------------------
def _standardize(vals: list[float], eps: float) -> list[float]:
    """(v - mean) / sqrt(var + eps), population variance; a non-finite value: all NaN."""
    if not all(math.isfinite(v) for v in vals):
        return [nan] * len(vals)
    n = len(vals)
    mean = math.fsum(vals) / n
    var = math.fsum((v - mean) ** 2 for v in vals) / n
    sd = math.sqrt(var + eps)
    return [(v - mean) / sd if sd else nan for v in vals]


def ref_layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    out = np.zeros(x.shape)
    e = float(np.float32(eps))
    for idx in np.ndindex(x.shape[:-1]):
        z = _standardize([float(v) for v in x[idx]], e)
        out[idx] = [zj * float(g[j]) + float(b[j]) for j, zj in enumerate(z)]
    return out


def ref_group_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, groups: int, eps: float
                   ) -> np.ndarray:
    out = np.zeros(x.shape)
    e = float(np.float32(eps))
    per = x.shape[1] // groups
    for s in range(x.shape[0]):
        for k in range(groups):
            chans = range(k * per, (k + 1) * per)
            vals = [float(v) for c in chans for v in x[s, c].reshape(-1)]
            z = iter(_standardize(vals, e))
            for c in chans:
                for pos in np.ndindex(x.shape[2:]):
                    out[(s, c, *pos)] = next(z) * float(g[c]) + float(b[c])
    return out


def ref_rms_norm(x: np.ndarray, w: np.ndarray, eps: float, offset: float) -> np.ndarray:
    out = np.zeros(x.shape)
    e, o = float(np.float32(eps)), float(np.float32(offset))
    for idx in np.ndindex(x.shape[:-1]):
        vals = [float(v) for v in x[idx]]
        if any(math.isnan(v) for v in vals):
            out[idx] = nan
            continue
        ms = math.fsum(v * v for v in vals) / len(vals)  # inf when a value is
        rms = math.sqrt(ms + e)
        out[idx] = [v / rms * (float(w[j]) + o) for j, v in enumerate(vals)]
    return out


def assert_close(name: str, ops_: list[np.ndarray], attrs: dict[str, Any], got: np.ndarray,
                 want: np.ndarray) -> None:
    """Same dtype and shape; NaN where NaN; within the REDUCE-6 bound elsewhere (the
    unspecified elements of the op excluded)."""
    x = ops_[0]
    assert got.dtype == x.dtype and got.shape == x.shape
    g = got.astype(np.float64)
    with np.errstate(all="ignore"):
        mask = np.asarray(get_op(name).unspecified(*ops_, **attrs), bool)
    keep = ~mask
    assert np.array_equal(np.isnan(g[keep]), np.isnan(want[keep])), (got, want)
    fin = keep & np.isfinite(want)
    bound = spec_bound(name, ops_, attrs, got)
    assert np.all(np.abs(g[fin] - want[fin]) <= bound[fin]), (got, want)


def _rand(rng: np.random.Generator, dtype: np.dtype[Any], *shape: int, scale: float = 4.0
          ) -> np.ndarray:
    return rng.uniform(-scale, scale, size=shape).astype(dtype)


# -- values against the references -----------------------------------------------------------
@pytest.mark.spec("REDUCE-8", "REDUCE-6")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 7), (1, 1)])
def test_layer_norm_matches_the_formula(dtype: np.dtype[Any], shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(sum(shape))
    x, g, b = _rand(rng, dtype, *shape), _rand(rng, dtype, shape[-1]), _rand(rng, dtype, shape[-1])
    for eps in (1e-5, 0.5):
        got = run(lambda x, g, b, e=eps: ops.layer_norm(x, g, b, e), x, g, b)
        assert_close("layer_norm", [x, g, b], {"epsilon": eps}, got,
                     ref_layer_norm(x, g, b, eps))


@pytest.mark.spec("REDUCE-8", "REDUCE-6")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize(("shape", "groups"), [((2, 4), 2), ((2, 6, 3), 3), ((1, 4, 2, 3), 1),
                                               ((3, 2, 5), 2)])
def test_group_norm_matches_the_formula(dtype: np.dtype[Any], shape: tuple[int, ...],
                                        groups: int) -> None:
    rng = np.random.default_rng(len(shape) + groups)
    x = _rand(rng, dtype, *shape)
    g, b = _rand(rng, dtype, shape[1]), _rand(rng, dtype, shape[1])
    for eps in (0.0, 1e-5):
        attrs = {"num_groups": groups, "epsilon": eps}
        got = run(lambda x, g, b, a=attrs: ops.group_norm(x, g, b, **a), x, g, b)
        assert_close("group_norm", [x, g, b], attrs, got,
                     ref_group_norm(x, g, b, groups, eps))


@pytest.mark.spec("REDUCE-8", "REDUCE-6")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(6,), (3, 5), (2, 2, 8)])
def test_rms_norm_matches_the_formula(dtype: np.dtype[Any], shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(len(shape))
    x, w = _rand(rng, dtype, *shape), _rand(rng, dtype, shape[-1])
    for eps, offset, before in [(1e-6, 0.0, False), (0.0, 1.0, True), (0.5, 1.0, False)]:
        attrs = {"epsilon": eps, "weight_offset": offset, "multiply_before_cast": before}
        got = run(lambda x, w, a=attrs: ops.rms_norm(x, w, **a), x, w)
        assert_close("rms_norm", [x, w], attrs, got, ref_rms_norm(x, w, eps, offset))


@pytest.mark.spec("REDUCE-8")
def test_the_variance_is_the_population_one() -> None:
    """[1, 3]: mean 2, sum of squared deviations 2, divided by n = 2 (not n - 1 = 1)."""
    x = np.array([[1.0, 3.0]])
    got = run(lambda x, g, b: ops.layer_norm(x, g, b, 1e-300), x, np.ones(2), np.zeros(2))
    assert got.tolist() == [[-1.0, 1.0]]  # unbiased: -0.7071..., 0.7071...
    x4 = np.array([[[[0.0]], [[4.0]]]])  # group_norm, one group of 2 channels: var 4
    got = run(lambda x, g, b: ops.group_norm(x, g, b, 1, 0.0), x4, np.ones(2), np.zeros(2))
    assert got.reshape(-1).tolist() == [-1.0, 1.0]


# -- special values, zeros, empty and rank edges ---------------------------------------------
@pytest.mark.spec("REDUCE-8", "TOL-2")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_special_values(dtype: np.dtype[Any]) -> None:
    x = np.array([[nan, 1, 2, 3], [inf, 1, 2, 3], [-inf, inf, 0, 0], [5, 5, 5, 5],
                  [-0.0, 0.0, -0.0, 0.0]], np.float64).astype(dtype)
    one, zero = np.ones(4, dtype), np.zeros(4, dtype)
    beta = np.array([0.5, -0.0, -inf, nan], dtype)
    got = run(lambda x, g, b: ops.layer_norm(x, g, b, 1e-5), x, one, beta)
    want = np.array([[nan] * 4, [nan] * 4, [nan] * 4, [0.5, 0.0, -inf, nan],
                     [0.5, 0.0, -inf, nan]], dtype)
    assert_same(got, want)  # a constant group gives beta: 0 * 1 + -0.0 = +0.0
    # rms_norm: an infinity zeroes the finite elements (their sign kept), a NaN poisons
    w = np.array([1.0, -2.0, 1.0, 1.0], dtype)
    got = run(lambda x, w: ops.rms_norm(x, w, 1e-5), x, w)
    assert_same(got[:3], np.array([[nan] * 4, [nan, -0.0, 0.0, 0.0],
                                   [nan, nan, 0.0, 0.0]], dtype))
    assert_same(got[4], np.array([-0.0, -0.0, -0.0, 0.0], dtype))  # zeros: x * w / sqrt(eps)
    # parameters: a NaN gamma poisons its column, -0 * z + -0 keeps the sign, a subnormal
    # gamma scales exactly (z = +-1)
    sub = float(ml_dtypes.finfo(dtype).smallest_subnormal)
    x2 = np.array([[1.0, 3.0], [3.0, 1.0]], dtype)
    got = run(lambda x, g, b: ops.layer_norm(x, g, b, 1e-30), x2,
              np.array([nan, -0.0], dtype), np.array([0.0, -0.0], dtype))
    assert_same(got, np.array([[nan, -0.0], [nan, 0.0]], dtype))
    got = run(lambda x, g, b: ops.group_norm(x, g, b, 1, 0.0), x2,
              np.array([sub, -sub], dtype), np.array([-0.0, inf], dtype))
    assert_same(got, np.array([[-sub, inf], [sub, inf]], dtype))
    # group_norm: the NaN group only
    xg = np.array([[nan, 1.0, 2.0, 4.0]], dtype)
    got = run(lambda x, g, b: ops.group_norm(x, g, b, 2, 0.0), xg, one, zero)
    assert_same(got, np.array([[nan, nan, -1.0, 1.0]], dtype))


@pytest.mark.spec("REDUCE-8", "TOL-2")
def test_unspecified_elements() -> None:
    """Overflowing sums, squares that underflow (0/0 with epsilon = 0 included), an infinite
    gamma; the rest of the tensor stays specified."""
    f32 = np.float32
    big = float(np.finfo(f32).max)
    x = np.array([[big, big / 2, 1, 1], [1, 2, 3, 4], [2, 2, 2, 2], [1e-30, 0, 0, 0]], f32)
    ln = get_op("layer_norm").unspecified
    g = np.array([1, 1, 1, 1], f32)
    # epsilon 1e-45 (a float32 subnormal): the constant and the tiny groups underflow
    assert ln(x, g, g, epsilon=1e-45).tolist() == [[True] * 4, [False] * 4, [True] * 4,
                                                    [True] * 4]
    assert ln(x, g, g, epsilon=1e-30).tolist() == [[True] * 4] + [[False] * 4] * 3
    assert ln(x, np.array([1, inf, 1, 1], f32), g, epsilon=0.5)[1].tolist() == [
        False, True, False, False]
    rms = get_op("rms_norm").unspecified
    zero = np.zeros((2, 3), f32)
    attrs = {"weight_offset": 0.0, "multiply_before_cast": False}
    assert rms(zero, g[:3], epsilon=0.0, **attrs).all()
    assert not rms(zero, g[:3], epsilon=1e-5, **attrs).any()
    assert rms(np.array([[3e19, 1, 1]], f32), g[:3], epsilon=1e-5, **attrs).all()  # 9e38
    w = np.array([1, -inf, 1], f32)  # an infinite weight: its column
    assert rms(np.ones((2, 3), f32), w, epsilon=1e-5, **attrs).tolist() == [
        [False, True, False]] * 2


@pytest.mark.spec("REDUCE-8", "EXEC-4")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_empty_and_size_one_groups(dtype: np.dtype[Any]) -> None:
    e = np.zeros((3, 0), dtype)
    assert run(lambda x, g, b: ops.layer_norm(x, g, b, 1e-5), e, e[0], e[0]).shape == (3, 0)
    assert run(lambda x, w: ops.rms_norm(x, w, 1e-5), e, e[0]).shape == (3, 0)
    eg = np.zeros((0, 4, 2), dtype)
    one = np.ones(4, dtype)
    assert run(lambda x, g, b: ops.group_norm(x, g, b, 2, 0.0), eg, one, one).shape == (0, 4, 2)
    # a group of one element: z = 0 exactly, the result is beta
    x = np.array([[7.0], [-3.0]], dtype)
    b = np.array([0.25], dtype)
    assert_same(run(lambda x, g, b: ops.layer_norm(x, g, b, 1e-5), x, b, b),
                np.array([[0.25], [0.25]], dtype))


# -- staging errors (MAX-style messages with the rule) ---------------------------------------
F32 = np.zeros((2, 4), np.float32)
V4, V3 = np.ones(4, np.float32), np.ones(3, np.float32)


@pytest.mark.spec("layer_norm.C1", "layer_norm.C2", "layer_norm.C3")
def test_layer_norm_errors() -> None:
    with pytest.raises(GraphShapeError, match=r"rank >= 1.*layer_norm\.C1"):
        build(lambda x, g, b: ops.layer_norm(x, g, b, 1e-5), np.float32(1), V4, V4)
    with pytest.raises(GraphShapeError, match=r"beta shape \[3\] does not match dimension "
                       r"of reduction \[4\].*layer_norm\.C2"):
        build(lambda x, g, b: ops.layer_norm(x, g, b, 1e-5), F32, V4, V3)
    with pytest.raises(GraphTypeError, match=r"gamma dtype float64 differs .*layer_norm\.C2"):
        build(lambda x, g, b: ops.layer_norm(x, g, b, 1e-5), F32, V4.astype(np.float64), V4)
    for eps in (0.0, -1.0, inf, "1e-5"):
        with pytest.raises(GraphShapeError, match=r"layer_norm\.C3"):
            build(lambda x, g, b, e=eps: ops.layer_norm(x, g, b, e), F32, V4, V4)
    with pytest.raises(GraphTypeError, match=r"OPDT-1"):
        build(lambda x, g, b: ops.layer_norm(x, g, b, 1e-5), F32.astype(np.int32),
              V4.astype(np.int32), V4.astype(np.int32))
    # an int epsilon is a float to the builder (MAX: epsilon: float)
    g = build(lambda x, g, b: ops.layer_norm(x, g, b, 1), F32, V4, V4)
    assert [n.attrs["epsilon"] for n in g.nodes if n.op.name == "layer_norm"] == [1.0]


@pytest.mark.spec("rms_norm.C1", "rms_norm.C2", "rms_norm.C3")
def test_rms_norm_errors() -> None:
    with pytest.raises(GraphShapeError, match=r"rms_norm\.C1"):
        build(lambda x, w: ops.rms_norm(x, w, 1e-5), np.float32(1), V4)
    with pytest.raises(GraphShapeError, match=r"weight shape \[3\] does not match the final "
                       r"input dimension \[4\].*rms_norm\.C2"):
        build(lambda x, w: ops.rms_norm(x, w, 1e-5), F32, V3)
    for kwargs in ({"epsilon": -1e-5}, {"epsilon": nan}, {"epsilon": 1e-5, "weight_offset": inf},
                   {"epsilon": 1e-5, "multiply_before_cast": 1}):
        with pytest.raises(GraphShapeError, match=r"rms_norm\.C3"):
            build(lambda x, w, k=kwargs: ops.rms_norm(x, w, **k), F32, V4)


@pytest.mark.spec("group_norm.C1", "group_norm.C2", "group_norm.C3", "group_norm.C4")
def test_group_norm_errors() -> None:
    with pytest.raises(GraphShapeError, match=r"expected input tensor with >=2 dimensions, "
                       r"got shape \[4\].*group_norm\.C1"):
        build(lambda x, g, b: ops.group_norm(x, g, b, 1, 1e-5), V4, V4, V4)
    with pytest.raises(GraphShapeError, match=r"gamma shape \[3\] does not match the channel "
                       r"axis \(axis 1\) \[4\].*group_norm\.C2"):
        build(lambda x, g, b: ops.group_norm(x, g, b, 1, 1e-5), F32, V3, V4)
    for groups in (0, 3, 2.0, True):
        with pytest.raises(GraphShapeError, match=r"group_norm\.C3"):
            build(lambda x, g, b, k=groups: ops.group_norm(x, g, b, k, 1e-5), F32, V4, V4)
    with pytest.raises(GraphShapeError, match=r"epsilon=-0.5 must be a finite float >= 0.*C4"):
        build(lambda x, g, b: ops.group_norm(x, g, b, 2, -0.5), F32, V4, V4)


# -- the front end and the samplers ----------------------------------------------------------
@pytest.mark.spec("REAL-19")
def test_functional_front_end_mirrors_max() -> None:
    x = Tensor(np.array([[3.0, 4.0]], np.float32))
    w = Tensor(np.ones(2, np.float32))
    got = F.rms_norm(x, w, 1e-6, weight_offset=1.0, multiply_before_cast=True).to_numpy()
    assert np.allclose(got, [[1.697056, 2.262742]], atol=1e-5)  # MAX's docstring values
    got = F.layer_norm(x, w, Tensor(np.zeros(2, np.float32)), epsilon=1e-5).to_numpy()
    assert np.allclose(got, [[-1.0, 1.0]], atol=1e-4)
    xg = Tensor(np.array([1.0, 3.0, 1.0, 3.0], np.float32).reshape(1, 4, 1, 1))
    got = F.group_norm(xg, Tensor(np.ones(4, np.float32)), Tensor(np.zeros(4, np.float32)),
                       num_groups=2, epsilon=1e-5).to_numpy()
    assert np.allclose(got.reshape(-1), [-1.0, 1.0, -1.0, 1.0], atol=1e-3)


@pytest.mark.spec("EXEC-4", "TOL-2")
@pytest.mark.parametrize("name", ["layer_norm", "rms_norm", "group_norm"])
def test_samples_build_and_execute(name: str) -> None:
    op = get_op(name)
    assert op.sample is not None
    src = RandomArgSource(seed=len(name))
    seen = set()
    for _ in range(40):
        call = op.sample(src)
        out = run(lambda *v, a=call.attrs: v[0].graph.stage(op, v, a)[0], *call.operands)
        assert out.shape == call.operands[0].shape and out.dtype == call.operands[0].dtype
        with np.errstate(all="ignore"):
            mask = op.unspecified(*call.operands, **call.attrs)
        assert np.shape(mask) == out.shape
        seen.add(DType.from_numpy(out.dtype))
    assert len(seen) >= 3

