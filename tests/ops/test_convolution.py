"""conv2d, conv3d and conv2d_transpose against python loops (spec/ops/conv2d.md, conv3d.md,
conv2d_transpose.md; REDUCE-2/5/6).

Expected values come from loops over every output element and every term (``math.fsum`` in
float64, python ints wrapped by hand); the transposed convolution's loops *gather* the terms
of each output element, where the kernel scatters them.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from conformance.strategies import RngArgSource
from interpreter.dtype import DType
from interpreter.errors import GraphShapeError, GraphTypeError
from interpreter.experimental import functional as F
from interpreter.experimental.tensor import Tensor
from interpreter.graph import DeviceRef, TensorType, ops
from interpreter.graph.ops.staging import stage
from interpreter.registry import get_op
from interpreter.testing import assert_same, build, run
from tests.ops.test_reduction import FLOATS, assert_within, ids, random_ints, unspecified, wrap

NAN, INF = float("nan"), float("inf")
CONV_INTS: list[np.dtype[Any]] = [np.dtype(np.int32), np.dtype(np.int64)]
Attrs = dict[str, Any]


def attrs(rank: int, stride: Any = 1, dilation: Any = 1, paddings: Any = 0, groups: int = 1
          ) -> Attrs:
    def per_axis(v: Any) -> tuple[Any, ...]:
        return tuple(v) if isinstance(v, tuple) else (v,) * rank

    pads = per_axis(paddings)
    return {"stride": per_axis(stride), "dilation": per_axis(dilation),
            "paddings": tuple(p if isinstance(p, tuple) else (p, p) for p in pads),
            "groups": groups}


# -- the oracles ------------------------------------------------------------------------------
def conv_terms(x: np.ndarray, w: np.ndarray, a: Attrs) -> dict[tuple[int, ...], list[Any]]:
    """Output index -> the products x * w of its receptive field (padding: no term)."""
    rank = x.ndim - 2
    xs, ws = x.tolist(), w.tolist()
    cg, f_all = w.shape[-2], w.shape[-1]
    per_group = f_all // a["groups"]
    outs = [(n + lo + hi - d * (k - 1) - 1) // s + 1 for n, k, s, d, (lo, hi) in zip(
        x.shape[1:-1], w.shape[:rank], a["stride"], a["dilation"], a["paddings"], strict=True)]
    terms: dict[tuple[int, ...], list[Any]] = {}
    for n, *o, f in itertools.product(range(x.shape[0]), *map(range, outs), range(f_all)):
        g, out = f // per_group, []
        for k in itertools.product(*map(range, w.shape[:rank])):
            pos = [oi * s - lo + ki * d for oi, ki, s, d, (lo, _) in zip(
                o, k, a["stride"], a["dilation"], a["paddings"], strict=True)]
            if all(0 <= p < size for p, size in zip(pos, x.shape[1:-1], strict=True)):
                row, wk = xs[n], ws
                for p in pos:
                    row = row[p]
                for ki in k:
                    wk = wk[ki]
                out += [row[g * cg + c] * wk[c][f] for c in range(cg)]
        terms[(n, *o, f)] = out
    return terms


def transpose_terms(x: np.ndarray, w: np.ndarray, a: Attrs) -> dict[tuple[int, ...], list[Any]]:
    """Output index -> the products gathered there: input i meets kernel offset k where
    ``i * stride + k * dilation == o + before`` (full coordinates)."""
    xs, ws = x.tolist(), w.tolist()
    full = [(n - 1) * s + d * (k - 1) + 1 + e for n, k, s, d, e in zip(
        x.shape[1:3], w.shape[:2], a["stride"], a["dilation"], a["output_paddings"], strict=True)]
    outs = [n - lo - hi for n, (lo, hi) in zip(full, a["paddings"], strict=True)]
    terms: dict[tuple[int, ...], list[Any]] = {}
    for n, i, j, f in itertools.product(range(x.shape[0]), range(outs[0]), range(outs[1]),
                                        range(w.shape[2])):
        out = []
        for r, s in itertools.product(range(w.shape[0]), range(w.shape[1])):
            src = [o + lo - k * d for o, (lo, _), k, d in zip(
                (i, j), a["paddings"], (r, s), a["dilation"], strict=True)]
            at = [p // st for p, st in zip(src, a["stride"], strict=True)]
            if all(p >= 0 and p % st == 0 and q < size for p, st, q, size in zip(
                    src, a["stride"], at, x.shape[1:3], strict=True)):
                out += [xs[n][at[0]][at[1]][c] * ws[r][s][f][c] for c in range(x.shape[3])]
        terms[(n, i, j, f)] = out
    return terms


def collect(terms: dict[tuple[int, ...], list[Any]], shape: tuple[int, ...], fn: Any,
            dtype: Any = np.float64) -> np.ndarray:
    out = np.zeros(shape, dtype=object)
    for idx, t in terms.items():
        out[idx] = fn(t)
    return out.astype(dtype)


def as64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64)


def check_float(name: str, x: np.ndarray, w: np.ndarray, a: Attrs, terms_fn: Any) -> None:
    got = get_op(name).kernel(x, w, **a)
    terms = terms_fn(as64(x), as64(w), a)
    exact = collect(terms, got.shape, math.fsum)
    mag = collect(terms, got.shape, lambda t: math.fsum(abs(v) for v in t))
    n = w.shape[-1 if name == "conv2d_transpose" else -2] * math.prod(w.shape[:-2])
    assert_within(got, exact, n, mag, x.dtype, 2)


# -- values -----------------------------------------------------------------------------------
CONV2D_CASES = [  # x shape, w shape, attrs
    ((1, 4, 5, 2), (2, 3, 2, 3), attrs(2, (2, 1), (1, 2), ((1, 0), (0, 2)))),
    ((2, 3, 3, 4), (3, 3, 2, 6), attrs(2, groups=2)),
    ((1, 5, 4, 3), (2, 2, 1, 3), attrs(2, 2, 1, ((0, 1), (2, 1)), groups=3)),  # depthwise
    ((1, 3, 3, 2), (3, 3, 2, 1), attrs(2)),  # the kernel is the input
    ((2, 2, 3, 3), (1, 1, 3, 2), attrs(2, (1, 2))),  # 1x1
    ((1, 1, 2, 1), (3, 3, 1, 2), attrs(2, 1, 1, ((1, 1), (2, 0)))),  # padding-made windows
]
CONV3D_CASES = [
    ((1, 4, 5, 6, 2), (2, 3, 2, 2, 3), attrs(3, (1, 2, 1), (1, 1, 2), ((0, 1), (1, 0), (2, 2)))),
    ((1, 2, 3, 3, 4), (2, 1, 2, 1, 4), attrs(3, 1, (2, 1, 1), ((1, 0), (0, 0), (0, 1)), 4)),
]
TRANSPOSE_CASES = [  # x shape, w shape [kh, kw, F, C], attrs
    ((1, 3, 4, 2), (2, 3, 5, 2), {"stride": (2, 3), "dilation": (1, 2),
                                  "paddings": ((1, 0), (0, 2)), "output_paddings": (1, 2)}),
    ((2, 2, 2, 3), (3, 3, 2, 3), {"stride": (1, 1), "dilation": (2, 1),
                                  "paddings": ((0, 0), (2, 1)), "output_paddings": (0, 0)}),
    ((1, 2, 3, 1), (1, 1, 1, 1), {"stride": (3, 2), "dilation": (1, 1),
                                  "paddings": ((0, 0), (0, 0)), "output_paddings": (2, 1)}),
]


def _float(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return rng.uniform(-4, 4, size=shape).astype(dtype)


@pytest.mark.spec("REDUCE-2", "REDUCE-6", "conv2d.C2", "conv2d.C6", "conv3d.C6")
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_float_convolutions_match_fsum(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(19)
    for name, cases in (("conv2d", CONV2D_CASES), ("conv3d", CONV3D_CASES)):
        for sx, sw, a in cases:
            check_float(name, _float(rng, sx, dtype), _float(rng, sw, dtype), a, conv_terms)


@pytest.mark.spec("REDUCE-2", "REDUCE-6", "conv2d_transpose.C6")
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_float_transposed_convolution_matches_gathered_fsum(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(20)
    for sx, sw, a in TRANSPOSE_CASES:
        check_float("conv2d_transpose", _float(rng, sx, dtype), _float(rng, sw, dtype), a,
                    transpose_terms)


@pytest.mark.spec("REDUCE-2", "conv2d.C6", "conv3d.C6", "conv2d_transpose.C6")
@pytest.mark.parametrize("dtype", CONV_INTS, ids=ids(CONV_INTS))
def test_integer_convolutions_keep_dtype_and_wrap(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(21)
    cases = [("conv2d", c, conv_terms) for c in CONV2D_CASES] + [
        ("conv3d", c, conv_terms) for c in CONV3D_CASES] + [
        ("conv2d_transpose", c, transpose_terms) for c in TRANSPOSE_CASES]
    for name, (sx, sw, a), terms_fn in cases:
        x, w = random_ints(rng, dtype, sx), random_ints(rng, dtype, sw)
        got = get_op(name).kernel(x, w, **a)
        expected = collect(terms_fn(x.astype(object), w.astype(object), a), got.shape,
                           lambda t: wrap(sum(int(v) for v in t), dtype), dtype)
        assert_same(got, expected, msg=name)


@pytest.mark.spec("conv2d.C2")
def test_padding_lands_on_its_own_side() -> None:
    """(top, bottom, left, right): each side alone, the odd total both ways."""
    x = np.arange(1, 7, dtype=np.float64).reshape(1, 2, 3, 1)
    w = np.array([[1.0, 10.0], [100.0, 1000.0]]).reshape(2, 2, 1, 1)
    for padding in [(1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1), (2, 1, 0, 3)]:
        a = attrs(2, paddings=((padding[0], padding[1]), (padding[2], padding[3])))
        got = run(lambda x, w, p=padding: ops.conv2d(x, w, padding=p), x, w)
        expected = collect(conv_terms(x, w, a), got.shape, math.fsum)
        assert_same(got, expected, msg=str(padding))


@pytest.mark.spec("REDUCE-5", "TOL-2", "conv2d.C1")
def test_special_values_and_unspecified_elements() -> None:
    x = np.array([[NAN, 1.0, INF], [-0.0, -INF, 2.0]], np.float32).reshape(1, 2, 3, 1)
    w = np.array([[1.0, 0.0]], np.float32).reshape(1, 2, 1, 1)
    assert_same(run(lambda x, w: ops.conv2d(x, w), x, w),  # NaN*1, 1*1 + inf*0 = NaN, ...
                np.array([[NAN, NAN], [-0.0 * 1 + -INF * 0, -INF]], np.float32).reshape(
                    1, 2, 2, 1))
    # padding meets a non-finite weight: unspecified (a kernel may skip or multiply it)
    ones = np.ones((1, 2, 2, 1), np.float32)
    inf_w = np.array([[INF, 1.0], [1.0, 1.0]], np.float32).reshape(2, 2, 1, 1)
    a = attrs(2, paddings=((1, 0), (0, 1)))
    mask = unspecified("conv2d")(ones, inf_w, **a)
    # windows (rows -1..0 | 0..1) x (cols 0..1 | 1..2): inf sits at the window's top left
    assert mask[0, :, :, 0].tolist() == [[True, True], [False, False]]
    big = float(np.finfo(np.float32).max)
    over = unspecified("conv2d")(np.full((1, 1, 2, 1), big, np.float32),
                                        np.ones((1, 2, 1, 1), np.float32), **attrs(2))
    assert over.tolist() == [[[[True]]]]
    assert not unspecified("conv2d")(np.full((1, 1, 2, 1), 2**30, np.int32),
                                            np.ones((1, 2, 1, 1), np.int32), **attrs(2)).any()


@pytest.mark.spec("TOL-2", "conv2d_transpose.C1")
def test_transpose_gaps_meeting_non_finite_weights_are_unspecified() -> None:
    x = np.ones((1, 1, 2, 1), np.float32)
    w = np.array([1.0, INF], np.float32).reshape(1, 2, 1, 1)
    a = {"stride": (1, 3), "dilation": (1, 1), "paddings": ((0, 0), (0, 0)),
         "output_paddings": (0, 1)}
    got = get_op("conv2d_transpose").kernel(x, w, **a)
    assert_same(got, np.array([1, INF, 0, 1, INF, 0], np.float32).reshape(1, 1, 6, 1))
    # inf (offset 1) pairs with column o - 1: a real input only for o = 1 and o = 4
    assert unspecified("conv2d_transpose")(x, w, **a)[0, 0, :, 0].tolist() == [
        True, False, True, True, False, True]


@pytest.mark.spec("conv2d.C3", "REDUCE-3")
def test_empty_batch_channels_and_filters() -> None:
    for sx, sw, groups in [((0, 3, 3, 2), (2, 2, 2, 3), 1), ((1, 3, 3, 0), (2, 2, 0, 4), 1),
                           ((2, 3, 3, 2), (2, 2, 1, 0), 2)]:
        x, w = np.ones(sx, np.float32), np.ones(sw, np.float32)
        got = run(lambda x, w, g=groups: ops.conv2d(x, w, groups=g), x, w)
        assert_same(got, np.zeros((sx[0], 2, 2, sw[-1]), np.float32))
    t = run(lambda x, w: ops.conv2d_transpose(x, w), np.ones((2, 1, 1, 0), np.int64),
            np.ones((2, 2, 3, 0), np.int64))
    assert_same(t, np.zeros((2, 2, 2, 3), np.int64))


@pytest.mark.spec("REDUCE-2")
def test_half_precision_accumulates_in_float32() -> None:
    w16 = np.ones((1, 3, 1, 1), np.float16)
    assert_same(run(lambda x, w: ops.conv2d(x, w),
                    np.array([2048, 1, 1], np.float16).reshape(1, 1, 3, 1), w16),
                np.full((1, 1, 1, 1), 2050, np.float16))
    bf = ml_dtypes.bfloat16
    assert_same(run(lambda x, w: ops.conv2d_transpose(x, w),
                    np.array([256], bf).reshape(1, 1, 1, 1), np.ones((1, 1, 1, 1), bf)),
                np.full((1, 1, 1, 1), 256, bf))
    t = np.array([256, 1, 1], bf).reshape(1, 1, 3, 1)
    assert_same(run(lambda x, w: ops.conv3d(x, w), t.reshape(1, 1, 1, 3, 1),
                    np.ones((1, 1, 3, 1, 1), bf)), np.full((1, 1, 1, 1, 1), 258, bf))


# -- staging ------------------------------------------------------------------------------------
@pytest.mark.spec("conv2d.C1", "conv2d.C2", "conv2d.C3", "conv2d.C4", "conv2d.C5", "conv3d.C1",
                  "conv3d.C4", "conv2d_transpose.C2", "conv2d_transpose.C3",
                  "conv2d_transpose.C4", "LOWER-1", "OPDT-1")
def test_errors_name_op_types_and_rule() -> None:
    x, w = np.zeros((1, 4, 4, 2), np.float32), np.zeros((3, 3, 2, 4), np.float32)
    with pytest.raises(GraphShapeError, match=r"^conv2d: input and filter must have rank 4, "
                       r"got 3 and 4 \[conv2d.C1\]; operands: \(tensor<f32\[4,4,2\] cpu:0>"):
        build(lambda x, w: ops.conv2d(x, w), x[0], w)
    bad = [({"stride": (0, 1)}, r"stride.*ints >= 1.*conv2d.C2"),
           ({"padding": (1, 1, 1)}, r"padding must be 4 ints.*conv2d.C2"),
           ({"padding": (-1, 0, 0, 0)}, r"paddings.*>= 0.*conv2d.C2"),
           ({"groups": 0}, r"groups must be an int >= 1.*conv2d.C2"),
           ({"groups": 2}, r"input channels 2 must be groups \(2\) \* filter in-channels "
                           r"\(2\).*conv2d.C3"),
           ({"dilation": (2, 2)}, r"output spatial dims \[0, 0\] must be positive.*conv2d.C4"),
           ({"input_layout": "NCHW"}, r"only the NHWC/RSCF layouts.*conv2d.C5"),
           ({"bias": np.zeros(3, np.float32)}, r"bias must be rank 1.*\(4,\).*conv2d.C5")]
    for kwargs, pattern in bad:
        with pytest.raises(GraphShapeError, match=pattern):
            build(lambda x, w, kw=kwargs: ops.conv2d(x, w, **kw), x, w)
    with pytest.raises(GraphShapeError, match=r"conv3d.*rank 5.*conv3d.C1"):
        build(lambda x, w: ops.conv3d(x, w), x, w)
    with pytest.raises(GraphShapeError, match=r"conv3d.*must be positive.*conv3d.C4"):
        build(lambda x, w: ops.conv3d(x, w), np.zeros((1, 1, 1, 1, 1), np.float32),
              np.zeros((2, 1, 1, 1, 1), np.float32))
    t = np.zeros((2, 2, 4, 2), np.float32)  # filter [kh, kw, F, C]
    for kwargs, pattern in [({"output_paddings": (0, 1)}, r"output_paddings.*\[0, "
                             r"stride\).*conv2d_transpose.C2"),
                            ({"padding": (2, 2, 0, 0)}, r"must be positive.*conv2d_transpose.C4")]:
        with pytest.raises(GraphShapeError, match=pattern):
            build(lambda x, w, kw=kwargs: ops.conv2d_transpose(x, w, **kw),
                  np.zeros((1, 1, 1, 2), np.float32), t)
    with pytest.raises(GraphShapeError, match=r"in-channels 2 must equal input channels 3"
                       r".*conv2d_transpose.C3"):
        build(lambda x, w: ops.conv2d_transpose(x, w), np.zeros((1, 1, 1, 3), np.float32), t)
    conv = get_op("conv2d")  # the primitive rule (staging promotes first)
    with pytest.raises(GraphTypeError, match=r"conv2d.*LOWER-1"):
        conv.infer(conv, [TensorType(DType.float32, x.shape, DeviceRef.CPU()),
                          TensorType(DType.float64, w.shape, DeviceRef.CPU())], attrs(2))
    with pytest.raises(GraphTypeError, match=r"conv2d.*OPDT-1"):
        build(lambda x, w: ops.conv2d(x, w), x.astype(np.int8), w.astype(np.int8))


@pytest.mark.spec("PROMO-1", "conv2d.C5", "conv3d.C5", "conv2d_transpose.C5")
def test_builders_promote_take_flat_padding_and_add_bias() -> None:
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3, 1)
    w = np.ones((1, 1, 1, 2), np.float64)
    stride: Any = (np.int64(1), 2)  # numpy ints become Python ints
    g = build(lambda x, w: ops.conv2d(x, w, stride=stride, padding=(0, 1, 1, 0),
                                      bias=np.array([0.5, -1.0], np.float64)), x, w)
    node = next(n for n in g.nodes if n.op.name == "conv2d")
    assert node.attrs["paddings"] == ((0, 1), (1, 0)) and type(node.attrs["stride"][0]) is int
    got = run(lambda x, w: ops.conv2d(x, w, bias=np.array([0.5, -1.0])), x, w)
    assert got.dtype == np.float64  # promoted (PROMO-1)
    assert_same(got[..., 0], x[..., 0].astype(np.float64) + 0.5)
    assert_same(got[..., 1], x[..., 0].astype(np.float64) - 1.0)
    t = run(lambda x, w: ops.conv2d_transpose(x, w, bias=np.array([2.0], np.float32)), x,
            np.ones((1, 1, 1, 1), np.float32))
    assert_same(t, x + 2)
    v = run(lambda x, w: ops.conv3d(x, w, bias=np.array([1.0], np.float32)),
            x.reshape(1, 1, 2, 3, 1), np.ones((1, 1, 1, 1, 1), np.float32))
    assert_same(v, x.reshape(1, 1, 2, 3, 1) + 1)


@pytest.mark.spec("REAL-19")
def test_tensor_level_functions_mirror_max() -> None:
    x = Tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32).reshape(1, 2, 2, 1))
    w = Tensor(np.ones((2, 2, 1, 1), np.float32))
    assert F.conv2d(x, w).to_numpy().tolist() == [[[[10.0]]]]
    assert F.conv2d_transpose(F.conv2d(x, w), w).to_numpy()[0, :, :, 0].tolist() == [
        [10.0, 10.0], [10.0, 10.0]]
    assert F.conv3d(Tensor(np.ones((1, 1, 1, 1, 1), np.float32)),
                    Tensor(np.full((1, 1, 1, 1, 2), 3.0, np.float32))
                    ).to_numpy().tolist() == [[[[[3.0, 3.0]]]]]


# -- the sampler --------------------------------------------------------------------------------
@pytest.mark.spec("CONF-86", "conv2d.C2")
def test_sampler_reaches_strides_dilations_each_padding_side_groups_and_kernel_shapes() -> None:
    seen: set[str] = set()
    for name in ("conv2d", "conv3d", "conv2d_transpose"):
        op = get_op(name)
        assert op.sample is not None
        for seed in range(300):
            call = op.sample(RngArgSource(seed, DType.float32, "general"))
            x, w, a = call.operands[0], call.operands[1], call.attrs
            build(lambda x, w, c=call, o=name: stage(o, (x, w), c.attrs), x, w)  # it stages
            rank = x.ndim - 2
            seen |= {f"{name} stride" for s in a["stride"] if s > 1}
            seen |= {f"{name} dilation" for d in a["dilation"] if d > 1}
            seen |= {f"{name} before" for lo, _ in a["paddings"] if lo > 0}
            seen |= {f"{name} after" for _, hi in a["paddings"] if hi > 0}
            if name != "conv2d_transpose":
                seen |= {f"{name} groups"} if a["groups"] > 1 else set()
                seen |= {f"{name} depthwise"} if a["groups"] > 1 and w.shape[-2] == 1 else set()
                if all(k == n and lo == hi == 0 for k, n, (lo, hi) in zip(
                        w.shape[:rank], x.shape[1:-1], a["paddings"], strict=True)):
                    seen.add(f"{name} kernel is the input")
            if all(k == 1 for k in w.shape[:rank]):
                seen.add(f"{name} 1x1")
    want = {f"{n} {f}" for n in ("conv2d", "conv3d", "conv2d_transpose")
            for f in ("stride", "dilation", "before", "after", "1x1")}
    want |= {f"{n} {f}" for n in ("conv2d", "conv3d")
             for f in ("groups", "depthwise", "kernel is the input")}
    assert want <= seen, sorted(want - seen)


@pytest.mark.spec("CONF-86")
@pytest.mark.parametrize("name", ["conv2d", "conv3d", "conv2d_transpose"])
def test_reach_source_makes_a_spatial_axis_long(name: str) -> None:
    op = get_op(name)
    assert op.sample is not None
    call = op.sample(RngArgSource(3, DType.float32, reach=4097))
    x = call.operands[0]
    assert 4097 in x.shape[1:-1] and x.shape[0] == x.shape[-1] == 1
    assert x.size <= 5000
