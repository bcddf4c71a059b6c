"""max_pool2d and avg_pool2d against python loops (spec/ops/max_pool2d.md, avg_pool2d.md).

Expected values come from loops over every window position: python ``max`` with NaN and the
empty-window identity handled by hand, ``math.fsum`` in float64 divided by the divisor the
spec names; never from the interpreter's kernels.
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
from interpreter.graph import ops
from interpreter.registry import get_op
from interpreter.testing import assert_same, build, run
from tests.ops.test_reduction import FLOATS, INTS, assert_within, ids, unspecified

NAN, INF = float("nan"), float("inf")
ORDERED = [np.dtype(bool), *INTS, *FLOATS]
Attrs = dict[str, Any]


def attrs(k: tuple[int, ...], stride: Any = 1, dilation: Any = 1, paddings: Any = 0,
          ceil_mode: bool = False, **more: Any) -> Attrs:
    def pair(v: Any) -> tuple[Any, Any]:
        return tuple(v) if isinstance(v, tuple) else (v, v)

    pads = pair(paddings)
    return {"kernel_size": k, "stride": pair(stride), "dilation": pair(dilation),
            "paddings": tuple(p if isinstance(p, tuple) else (p, p) for p in pads),
            "ceil_mode": ceil_mode, **more}


def window_values(x: np.ndarray, a: Attrs) -> dict[tuple[int, ...], list[Any]]:
    """Output index -> the input elements of its window (python values, float64 for
    floats); the window count by the spec's floor/ceil formula."""
    xs = x.astype(np.float64).tolist() if x.dtype.kind in "fV" else x.tolist()
    outs = []
    for n, k, s, d, (lo, hi) in zip(x.shape[1:3], a["kernel_size"], a["stride"],
                                    a["dilation"], a["paddings"], strict=True):
        span = n + lo + hi - d * (k - 1) - 1
        outs.append((math.ceil(span / s) if a["ceil_mode"] else span // s) + 1)
    found: dict[tuple[int, ...], list[Any]] = {}
    for n, i, j, c in itertools.product(range(x.shape[0]), *map(range, outs),
                                        range(x.shape[3])):
        vals = []
        for r, t in itertools.product(*map(range, a["kernel_size"])):
            p = i * a["stride"][0] - a["paddings"][0][0] + r * a["dilation"][0]
            q = j * a["stride"][1] - a["paddings"][1][0] + t * a["dilation"][1]
            if 0 <= p < x.shape[1] and 0 <= q < x.shape[2]:
                vals.append(xs[n][p][q][c])
        found[(n, i, j, c)] = vals
    return found


def out_shape(found: dict[tuple[int, ...], list[Any]]) -> tuple[int, ...]:
    return tuple(m + 1 for m in map(max, zip(*found, strict=True)))


def py_max(vals: list[Any], dtype: np.dtype[Any]) -> Any:
    if not vals:
        return False if dtype.kind == "b" else np.iinfo(dtype).min if dtype.kind in "iu" else -INF
    return NAN if any(v != v for v in vals) else max(vals)


MAX_CASES = [  # x shape, attrs
    ((2, 4, 5, 3), attrs((2, 2), 2)),
    ((1, 5, 5, 1), attrs((2, 2), 2, paddings=1, ceil_mode=True)),  # a window past the padding
    ((1, 5, 5, 2), attrs((2, 2), 1, paddings=3)),  # windows wholly in the padding
    ((1, 4, 4, 1), attrs((2, 2), 2, 2, 1, True)),
    ((1, 6, 7, 2), attrs((3, 2), (2, 3), (1, 2), ((2, 0), (1, 2)))),  # each side its own
    ((1, 3, 3, 1), attrs((3, 3))),  # the kernel is the input
    ((2, 2, 3, 2), attrs((1, 1), 2)),  # 1x1
]


@pytest.mark.spec("max_pool2d.C2", "max_pool2d.C4", "REDUCE-4")
@pytest.mark.parametrize("dtype", ORDERED, ids=ids(ORDERED))
def test_max_pool_matches_loops(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(30)
    op = get_op("max_pool2d")
    for shape, a in MAX_CASES:
        if dtype.kind == "b":
            x = rng.integers(0, 2, size=shape).astype(bool)
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            x = rng.integers(int(info.min), int(info.max), size=shape, dtype=dtype, endpoint=True)
        else:
            x = rng.uniform(-100, 100, size=shape).astype(dtype)
        found = window_values(x, a)
        expected = np.zeros(out_shape(found), dtype=object)
        for idx, vals in found.items():
            expected[idx] = py_max(vals, dtype)
        assert_same(op.kernel(x, **a), expected.astype(np.float64).astype(dtype)
                    if dtype.kind in "fV" else expected.astype(dtype), msg=str(a))


@pytest.mark.spec("REDUCE-4", "NUM-8", "TOL-2")
def test_max_pool_nan_propagates_and_mixed_zero_signs_are_unspecified() -> None:
    x = np.array([[NAN, 1.0, 2.0, NAN], [-0.0, 0.0, -INF, -INF]], np.float32).reshape(1, 2, 4, 1)
    a = attrs((1, 2), (1, 2))
    got = get_op("max_pool2d").kernel(x, **a)
    assert_same(got[0, 0, :, 0], np.array([NAN, NAN], np.float32))
    assert_same(got[0, 1, 1, 0], np.float32(-INF))
    assert unspecified("max_pool2d")(x, **a)[0, :, :, 0].tolist() == [[False, False],
                                                                      [True, False]]
    assert not unspecified("max_pool2d")(np.array([[[[-0.0], [-0.0]]]], np.float32),
                                         **attrs((1, 2))).any()


@pytest.mark.spec("REDUCE-2", "REDUCE-6", "avg_pool2d.C4")
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
@pytest.mark.parametrize("count_boundary", [True, False])
def test_avg_pool_matches_fsum(dtype: np.dtype[Any], count_boundary: bool) -> None:
    rng = np.random.default_rng(31)
    op = get_op("avg_pool2d")
    for shape, a in MAX_CASES:
        a = {**a, "count_boundary": count_boundary}
        x = rng.uniform(-100, 100, size=shape).astype(dtype)
        found = window_values(x, a)
        shape_out = out_shape(found)
        exact, mag, count = (np.zeros(shape_out) for _ in range(3))
        size = math.prod(a["kernel_size"])
        for idx, vals in found.items():
            div = size if count_boundary else len(vals)
            with np.errstate(invalid="ignore"):
                exact[idx] = np.float64(math.fsum(vals)) / div
                mag[idx] = np.float64(math.fsum(abs(v) for v in vals)) / div
            count[idx] = len(vals)
        assert_within(op.kernel(x, **a), exact, count + 1, np.nan_to_num(mag), dtype, 2)


@pytest.mark.spec("avg_pool2d.C2", "REDUCE-3", "REDUCE-5")
def test_avg_pool_divisors_empty_windows_and_overflow() -> None:
    x = np.array([3.0, 6.0], np.float32).reshape(1, 1, 2, 1)
    a = attrs((1, 2), (1, 2), paddings=((0, 0), (2, 2)))
    op = get_op("avg_pool2d")
    assert_same(op.kernel(x, **a, count_boundary=True)[0, 0, :, 0],
                np.array([0.0, 4.5, 0.0], np.float32))
    assert_same(op.kernel(x, **a, count_boundary=False)[0, 0, :, 0],
                np.array([NAN, 4.5, NAN], np.float32))
    big = float(np.finfo(np.float16).max)
    h = np.array([big, big, 1.0, 1.0], np.float16).reshape(1, 1, 4, 1)
    mask = unspecified("avg_pool2d")(h, **attrs((1, 2), (1, 2)), count_boundary=True)
    assert mask[0, 0, :, 0].tolist() == [True, False]
    assert_same(op.kernel(np.array([INF, -INF, INF, 1.0], np.float32).reshape(1, 1, 4, 1),
                          **attrs((1, 2), (1, 2)), count_boundary=True)[0, 0, :, 0],
                np.array([NAN, INF], np.float32))


@pytest.mark.spec("REDUCE-2")
def test_avg_pool_half_precision_sums_in_float32() -> None:
    x = np.array([2048, 1, 1, 0], np.float16).reshape(1, 1, 4, 1)
    assert_same(run(lambda x: ops.avg_pool2d(x, (1, 4)), x),
                np.full((1, 1, 1, 1), 512.5, np.float16))
    b = np.array([256, 1], ml_dtypes.bfloat16).reshape(1, 1, 2, 1)
    assert_same(run(lambda x: ops.avg_pool2d(x, (1, 2)), b),
                np.full((1, 1, 1, 1), 128.5, ml_dtypes.bfloat16))


@pytest.mark.spec("max_pool2d.C1", "max_pool2d.C2", "max_pool2d.C3", "avg_pool2d.C1",
                  "avg_pool2d.C2", "avg_pool2d.C3", "OPDT-1")
def test_errors_name_op_types_and_rule() -> None:
    x = np.zeros((1, 4, 4, 2), np.float32)
    with pytest.raises(GraphShapeError, match=r"^max_pool2d: input must have rank 4 \(NHWC\), "
                       r"got 3 \[max_pool2d.C1\]; operands: \(tensor<f32\[4,4,2\] cpu:0>\)"):
        build(lambda x: ops.max_pool2d(x, (2, 2)), x[0])
    for kwargs, pattern in [({"kernel_size": (0, 2)}, r"kernel_size.*ints >= 1.*{op}.C2"),
                            ({"kernel_size": (2, 2), "stride": 0}, r"stride.*{op}.C2"),
                            ({"kernel_size": (2, 2), "padding": -1}, r"paddings.*>= 0.*{op}.C2"),
                            ({"kernel_size": (2, 2), "ceil_mode": 1},
                             r"ceil_mode must be a bool.*{op}.C2"),
                            ({"kernel_size": (5, 1)}, r"\[0, 4\] must be positive.*{op}.C3")]:
        for name, fn in (("max_pool2d", ops.max_pool2d), ("avg_pool2d", ops.avg_pool2d)):
            with pytest.raises(GraphShapeError, match=f"^{name}: .*" + pattern.format(op=name)):
                build(lambda x, f=fn, kw=kwargs: f(x, **kw), x)
    with pytest.raises(GraphShapeError, match=r"count_boundary must be a bool.*avg_pool2d.C2"):
        build(lambda x: ops.avg_pool2d(x, (2, 2), count_boundary=None), x)  # type: ignore
    with pytest.raises(GraphTypeError, match=r"avg_pool2d: .*int32.*OPDT-1"):
        build(lambda x: ops.avg_pool2d(x, (2, 2)), x.astype(np.int32))
    with pytest.raises(GraphTypeError, match=r"max_pool2d: .*float8_e5m2.*OPDT-1"):
        build(lambda x: ops.max_pool2d(x, (2, 2)), x.astype(ml_dtypes.float8_e5m2))


@pytest.mark.spec("max_pool2d.C2", "REAL-19")
def test_builders_take_ints_or_pairs_and_pad_both_sides() -> None:
    x = np.arange(20, dtype=np.float32).reshape(1, 4, 5, 1)
    kernel: Any = (np.int64(2), 2)  # numpy ints become Python ints
    g = build(lambda x: ops.max_pool2d(x, kernel, stride=(1, 2), dilation=2,
                                       padding=(1, 0)), x)
    node = g.nodes[-1]
    assert node.attrs == {"kernel_size": (2, 2), "stride": (1, 2), "dilation": (2, 2),
                          "paddings": ((1, 1), (0, 0)), "ceil_mode": False}
    assert type(node.attrs["kernel_size"][0]) is int
    g = build(lambda x: ops.avg_pool2d(x, (1, 1), padding=2, count_boundary=False), x)
    assert g.nodes[-1].attrs["paddings"] == ((2, 2), (2, 2))
    assert g.nodes[-1].attrs["count_boundary"] is False
    t = Tensor(np.arange(4, dtype=np.float32).reshape(1, 2, 2, 1))
    assert F.max_pool2d(t, (2, 2)).to_numpy().tolist() == [[[[3.0]]]]
    assert F.avg_pool2d(t, (2, 2)).to_numpy().tolist() == [[[[1.5]]]]


@pytest.mark.spec("CONF-86")
def test_samplers_reach_ceil_mode_each_padding_side_and_a_long_spatial_axis() -> None:
    for name in ("max_pool2d", "avg_pool2d"):
        op = get_op(name)
        assert op.sample is not None
        seen: set[str] = set()
        for seed in range(200):
            a = op.sample(RngArgSource(seed, DType.float32, "general")).attrs
            seen |= {"ceil"} if a["ceil_mode"] else set()
            seen |= {"before" for lo, _ in a["paddings"] if lo}
            seen |= {"after" for _, hi in a["paddings"] if hi}
            seen |= {"stride" for s in a["stride"] if s > 1}
            seen |= {"dilation" for d in a["dilation"] if d > 1}
            seen |= {"1x1"} if a["kernel_size"] == (1, 1) else set()
            seen |= {f"boundary {a['count_boundary']}"} if "count_boundary" in a else set()
        want = {"ceil", "before", "after", "stride", "dilation", "1x1"}
        assert want | ({"boundary True", "boundary False"} if name == "avg_pool2d" else set()
                       ) <= seen, seen
        x = op.sample(RngArgSource(5, DType.float32, reach=4097)).operands[0]
        assert 4097 in x.shape[1:3] and x.size <= 5000
