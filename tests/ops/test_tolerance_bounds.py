"""Tolerances are the spec's, exactly (TOL-1, TOL-4, REDUCE-6, RNG-8).

For every op of a non-exact class: the registry's ``Tolerance.bound`` equals the spec formula
(written out again here, independently), a result moved to exactly the edge of the allowed
error passes the suite's comparison and one representable step further fails, in float32 and
in the 16-bit floats. Special values (NaN, +-inf) are compared exactly in every class, and a
``reduce_sum`` that skips NaN fails the conformance suite.
"""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from conformance.compare import compare_op, from_ordered, to_ordered
from interpreter.dtype import DType
from interpreter.registry import REGISTRY, get_op
from tests.ops.test_devices import reducescatter_n_m
from tests.ops.test_vision import roi_align_loops
from tests.suite.suite_runner import run_suite

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]
DT_IDS = ["float32", "float16", "bfloat16"]
Case = tuple[str, list[np.ndarray], dict[str, Any]]


def step(a: np.ndarray, k: Any) -> np.ndarray:
    """``a`` moved by ``k`` representable values (elementwise; +-0 count as one point)."""
    moved = to_ordered(a) + np.asarray(k, np.int64)
    return from_ordered(moved, a.dtype).reshape(a.shape)


def farthest(e: np.ndarray, bound: np.ndarray, d: int) -> np.ndarray:
    """The representable value farthest from ``e`` in direction ``d`` with |v - e| <= bound."""
    e64 = e.astype(np.float64)
    r = (e64 + d * bound).astype(e.dtype)
    over = np.abs(r.astype(np.float64) - e64) > bound
    return np.where(over, step(r, -d), r).astype(e.dtype)


def ref(name: str, ops: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """The reference result of one call (special values make numpy warn)."""
    with np.errstate(all="ignore"):
        return np.asarray(get_op(name).kernel(*ops, **attrs))


def non_exact_ops() -> set[str]:
    return {n for n, op in REGISTRY.items() if op.tolerance.kind != "exact"}


def family_ops() -> frozenset[str]:
    """The ops whose bounds a family module ``tests/ops/test_tolerance_<family>.py`` checks
    the same way (its ``TOLERANCE_OPS``)."""
    found: set[str] = set()
    for path in sorted(Path(__file__).parent.glob("test_tolerance_*.py")):
        module = importlib.import_module(f"tests.ops.{path.stem}")
        found |= getattr(module, "TOLERANCE_OPS", frozenset())
    return frozenset(found)


# -- REDUCE-6, written out from the spec table ---------------------------------------------
def _prefix(x: np.ndarray, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    """Inclusive/exclusive, forward/reverse running sums in float64, element by element."""
    moved = np.moveaxis(np.asarray(x, np.float64), axis, -1)
    out = np.zeros_like(moved)
    size = moved.shape[-1]
    for j in range(size):
        terms = range(j, size) if reverse else range(j + 1)
        terms = [t for t in terms if not (exclusive and t == j)]
        out[..., j] = sum((moved[..., t] for t in terms), np.zeros(moved.shape[:-1]))
    return np.moveaxis(out, -1, axis)


def spec_n_m(name: str, ops: list[np.ndarray], attrs: dict[str, Any], expected: np.ndarray
             ) -> tuple[Any, Any, int]:
    """(n, M, u) of REDUCE-6 for one call."""
    x = np.abs(np.asarray(ops[0], np.float64))
    axis = attrs.get("axis", -1)
    size = ops[0].shape[axis] if ops[0].ndim else 1
    if name == "reduce_sum":
        return size, x.sum(axis=axis, keepdims=True), 2
    if name == "reduce_mean":
        return size + 1, x.sum(axis=axis, keepdims=True) / size, 2
    if name == "reduce_prod":
        return size, x.prod(axis=axis, keepdims=True), 2
    if name == "cumsum":
        flags = (attrs["exclusive"], attrs["reverse"])
        return _prefix(np.ones(x.shape), axis, *flags), _prefix(x, axis, *flags), 2
    if name == "matmul":
        return ops[0].shape[-1], np.abs(ops[0].astype(np.float64)) @ np.abs(
            ops[1].astype(np.float64)), 2
    if name == "softmax":
        return size, 1.0, 4
    if name == "logsoftmax":
        return size, 1.0 + np.abs(expected.astype(np.float64)), 4
    if name == "reducescatter_sum":
        return (*reducescatter_n_m(ops, attrs, expected), 1)
    if name == "roi_align":
        with np.errstate(all="ignore"):
            _, n, m = roi_align_loops(ops[0], ops[1], *(attrs[k] for k in (
                "output_height", "output_width", "spatial_scale", "sampling_ratio", "aligned",
                "mode")))
        return n, m, 1
    raise AssertionError(f"{name} is not in the REDUCE-6 table")


def spec_reduction_bound(name: str, ops: list[np.ndarray], attrs: dict[str, Any],
                         expected: np.ndarray) -> np.ndarray:
    n, m, u = spec_n_m(name, ops, attrs, expected)
    info = ml_dtypes.finfo(expected.dtype)
    b = u * np.asarray(n) * float(info.eps) * np.asarray(m) + np.asarray(n) * float(
        info.smallest_subnormal)
    return np.broadcast_to(b, expected.shape)


def reduction_cases(dtype: np.dtype[Any]) -> list[Case]:
    rng = np.random.default_rng(7)

    def v(*shape: int, lo: float = -4.0, hi: float = 4.0) -> np.ndarray:
        return rng.uniform(lo, hi, size=shape).astype(dtype)

    cases: list[Case] = []
    for name in ("reduce_sum", "reduce_mean", "softmax", "logsoftmax"):
        cases += [(name, [v(3, 5)], {"axis": 1}), (name, [v(4, 2)], {"axis": 0})]
    cases += [("reduce_prod", [v(3, 4, lo=0.5, hi=2.0)], {"axis": 1}),
              ("reduce_prod", [v(3, 4, lo=-2.0, hi=-0.5)], {"axis": 0})]
    for exclusive in (False, True):
        for reverse in (False, True):
            cases.append(("cumsum", [v(2, 6)],
                          {"axis": 1, "exclusive": exclusive, "reverse": reverse}))
    cases += [("matmul", [v(3, 4), v(4, 2)], {}), ("matmul", [v(2, 2, 5), v(2, 5, 3)], {})]
    cases.append(("softmax", [np.array([3, -50, 1], dtype)], {"axis": 0}))
    cases.append(("logsoftmax", [np.array([3, -50, 1], dtype)], {"axis": 0}))
    # one operand (one result: the edge test compares one array); more in test_tolerance_devices
    cases.append(("reducescatter_sum", [v(3, 5)], {"axis": 1}))
    rois = np.array([[0, 0.5, 0.25, 3.0, 2.75], [0, -1.5, -0.5, 2.25, 5.5]], dtype)
    for mode in ("AVG", "MAX") if dtype.itemsize == 2 else ("AVG",):  # MAX: exact in f32
        cases.append(("roi_align", [v(1, 4, 5, 2, lo=0.5), rois],
                      {"output_height": 2, "output_width": 2, "spatial_scale": 1.0,
                       "sampling_ratio": 0.0, "aligned": False, "mode": mode}))
    return cases


REDUCTION_OPS = {"reduce_sum", "reduce_mean", "reduce_prod", "cumsum", "matmul", "softmax",
                 "logsoftmax", "reducescatter_sum", "roi_align"}


@pytest.mark.spec("TOL-1", "REDUCE-6")
def test_reduction_class_is_exactly_the_reduce6_table() -> None:
    assert {n for n, op in REGISTRY.items() if op.tolerance.kind == "reduction"} == (
        REDUCTION_OPS | family_ops())
    assert {n for n in REDUCTION_OPS if str(get_op(n).tolerance) == "reduction(4)"} == {
        "softmax", "logsoftmax"}


@pytest.mark.spec("TOL-1", "REDUCE-6")
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_reduction_bound_edge_passes_and_one_step_more_fails(dtype: np.dtype[Any]) -> None:
    seen = set()
    for name, ops, attrs in reduction_cases(dtype):
        op = get_op(name)
        expected = ref(name, ops, attrs)
        want = spec_reduction_bound(name, ops, attrs, expected)
        got_bound = op.tolerance.bound(ops, attrs, expected)
        np.testing.assert_allclose(got_bound, want, rtol=1e-12, atol=0, err_msg=name)
        for d in (1, -1):
            edge = farthest(expected, want, d)
            assert np.all((edge != expected) | (want == 0)), (name, "no step allowed")
            assert compare_op(op, ops, attrs, [expected], [edge]) is None, (name, d, attrs)
            m = compare_op(op, ops, attrs, [expected], [step(edge, d)])
            assert m is not None and m.bad == expected.size, (name, d, attrs, m)
            assert "allowed |got - expected|" in m.message and "REDUCE-6" in m.message
        seen.add(name)
    assert seen == REDUCTION_OPS


@pytest.mark.spec("REDUCE-6")
def test_softmax_8_ulp_on_the_issue_example_is_accepted() -> None:
    """M = 1 for softmax (not the kernel on |x|): 8 ULP on x = [3, -50, 1] is inside the
    bound 4 * 3 * eps(float32) ~= 1.43e-6."""
    x = np.array([3, -50, 1], np.float32)
    op = get_op("softmax")
    e = op.kernel(x, axis=0)
    assert float(op.tolerance.bound([x], {"axis": 0}, e)[0]) == pytest.approx(1.43e-6, rel=1e-2)
    assert compare_op(op, [x], {"axis": 0}, [e], [step(e, np.array([8, 0, 8]))]) is None


@pytest.mark.spec("REDUCE-6")
def test_n_tiny_admits_products_underflowing_in_a_float16_accumulator() -> None:
    a = np.full((1, 8), 1.58e-4, np.float16)
    op = get_op("matmul")
    e = op.kernel(a, a.T)
    assert float(e[0, 0]) == 3 * float(ml_dtypes.finfo(np.float16).smallest_subnormal)
    assert compare_op(op, [a, a.T], {}, [e], [np.zeros_like(e)]) is None  # 3 tiny <= 8 tiny


@pytest.mark.spec("REDUCE-2", "REDUCE-6")
def test_integer_reductions_stay_exact() -> None:
    x = np.array([[1, 2, 3]], np.int32)
    op = get_op("reduce_sum")
    assert not op.tolerance.bound([x], {"axis": 1}, np.array([[6]], np.int32)).any()
    assert compare_op(op, [x], {"axis": 1}, [np.array([[6]], np.int32)],
                      [np.array([[7]], np.int32)]) is not None


# -- ulp(n) ----------------------------------------------------------------------------------
def ulp_cases(dtype: np.dtype[Any]) -> list[Case]:
    rng = np.random.default_rng(3)
    x = rng.uniform(-3.0, 3.0, size=16).astype(dtype)
    pos = rng.uniform(0.1, 4.0, size=16).astype(dtype)
    cases: list[Case] = []
    for name in ("exp", "tanh", "sin", "cos", "erf", "sigmoid", "silu"):
        cases.append((name, [x], {}))
    for name in ("log", "log1p", "rsqrt"):
        cases.append((name, [pos], {}))
    cases += [("gelu", [x], {"approximate": "none"}), ("gelu", [x], {"approximate": "tanh"}),
              ("pow", [pos, x], {})]
    cases += [("gelu", [x], {"approximate": "quick"}), ("atanh", [x / 4], {})]  # issue 19
    return cases


@pytest.mark.spec("TOL-1")
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_ulp_budget_edge_passes_and_one_step_more_fails(dtype: np.dtype[Any]) -> None:
    seen = set()
    for name, ops, attrs in ulp_cases(dtype):
        op = get_op(name)
        expected = ref(name, ops, attrs)
        assert expected.dtype == dtype and np.isfinite(expected.astype(np.float64)).all()
        assert not op.tolerance.bound(ops, attrs, expected).any(), name  # the ULP count only
        n = op.tolerance.ulps
        for d in (1, -1):
            edge = step(expected, d * n)
            assert compare_op(op, ops, attrs, [expected], [edge]) is None, (name, d)
            m = compare_op(op, ops, attrs, [expected], [step(edge, d)])
            assert m is not None and m.bad == expected.size, (name, d, m)
        seen.add(name)
    assert seen | {"random_normal"} == {
        n for n, op in REGISTRY.items() if op.tolerance.kind == "ulp"} - family_ops()


# -- RNG-8 -------------------------------------------------------------------------------------
def _spec_ulp(v: float, dtype: np.dtype[Any]) -> float:
    """ULP of ``dtype`` at |v|: the spacing of its binade (the subnormal spacing below)."""
    info = ml_dtypes.finfo(dtype)
    e = math.frexp(abs(v))[1] - 1 if v else int(info.minexp)
    return math.ldexp(1.0, max(e, int(info.minexp)) - int(info.nmant))


@pytest.mark.spec("RNG-8", "TOL-1")
@pytest.mark.parametrize("dtype", [*DTYPES, np.dtype(np.float64)],
                         ids=[*DT_IDS, "float64"])
@pytest.mark.parametrize(("mean", "std"), [(-2.0, 3.0), (1.5, 0.25), (0.0, 1.0)])
def test_random_normal_near_zero_is_relative_to_std_z(dtype: np.dtype[Any], mean: float,
                                                      std: float) -> None:
    op = get_op("random_normal")
    seed = np.array([42], np.uint64)
    shape = (512,)
    attrs = {"shape": shape, "dtype": DType.from_numpy(dtype), "mean": mean, "std": std}
    z = op.kernel(seed, shape=shape, dtype=DType.float64, mean=0.0, std=1.0)
    expected = op.kernel(seed, **attrs)
    allowance = np.array([4 * _spec_ulp(std * float(v), dtype) for v in z])
    np.testing.assert_array_equal(op.tolerance.bound([seed], attrs, expected), allowance)
    for d in (1, -1):
        by_ulp, by_abs = step(expected, 4 * d), farthest(expected, allowance, d)
        edge = np.where(d * (by_abs.astype(np.float64) - by_ulp.astype(np.float64)) > 0,
                        by_abs, by_ulp).astype(expected.dtype)
        assert compare_op(op, [seed], attrs, [expected], [edge]) is None, d
        m = compare_op(op, [seed], attrs, [expected], [step(edge, d)])
        assert m is not None and m.bad == expected.size, (d, m)
    if mean == -2.0:  # cancellation happens here: the RNG-8 allowance decides somewhere
        cancel = np.abs(expected.astype(np.float64)) < np.abs(std * z) / 4
        assert cancel.any()


@pytest.mark.spec("RNG-8")
def test_random_normal_one_float64_ulp_in_z_is_accepted_where_it_cancels() -> None:
    op = get_op("random_normal")
    seed = np.array([42], np.uint64)
    attrs = {"shape": (4096,), "dtype": DType.float64, "mean": -2.0, "std": 3.0}
    z = op.kernel(seed, shape=(4096,), dtype=DType.float64, mean=0.0, std=1.0)
    expected = op.kernel(seed, **attrs)
    got = -2.0 + 3.0 * np.nextafter(z, np.inf)  # another libm: z one ULP up
    assert compare_op(get_op("exp"), [z], {}, [expected], [got]) is not None  # > 4 ULP
    assert compare_op(op, [seed], attrs, [expected], [got]) is None


# -- TOL-4: special values exact in every class ------------------------------------------------
NAN, INF = float("nan"), float("inf")


def special_cases(dtype: np.dtype[Any]) -> list[Case]:
    s = np.array([NAN, INF, -INF, 0.5, -1.0, 0.0], dtype)
    rows = np.array([[NAN, 1, 2], [INF, 1, 2], [-INF, 1, 2], [INF, -INF, 1], [1, 2, 3]], dtype)
    cases: list[Case] = [(n, [s], {}) for n in (
        "exp", "log", "log1p", "rsqrt", "tanh", "sin", "cos", "erf", "sigmoid", "silu")]
    cases += [("gelu", [s], {"approximate": "none"}), ("gelu", [s], {"approximate": "tanh"}),
              ("pow", [np.array([NAN, 2, INF, 2, 0, -INF], dtype),
                       np.array([1, NAN, 2, INF, -1, 3], dtype)], {})]
    for n in ("reduce_sum", "reduce_mean", "reduce_prod", "softmax", "logsoftmax"):
        cases.append((n, [rows], {"axis": 1}))
    cases.append(("cumsum", [rows], {"axis": 1, "exclusive": False, "reverse": False}))
    cases.append(("matmul", [rows, np.ones((3, 2), dtype)], {}))
    far = np.array([NAN, 1, 2, 3, 4, 5, 6, 7, 8, INF], dtype)  # unspecified near the ends
    cases.append(("resize_linear", [far], {"shape": (15,), "coordinate_transform_mode":
                                           "half_pixel"}))
    cases.append(("resize_bicubic", [far.reshape(1, 1, 1, -1)], {"shape": (1, 1, 1, 17)}))
    cases.append(("reducescatter_sum", [rows], {"axis": 1}))
    image = np.resize(np.array([1.0, NAN, INF, -INF, -0.0, 2.0], dtype), (1, 3, 3, 2))
    image[0, 0, 0] = 1.0  # finite at (0, 0): out-of-image samples stay specified
    cases.append(("roi_align", [image, np.array([[0, -1, 0, 2, 2], [0, 0.5, 0.5, 2, 2]], dtype)],
                  {"output_height": 2, "output_width": 2, "spatial_scale": 1.0,
                   "sampling_ratio": 2.0, "aligned": False, "mode": "AVG"}))
    cases.append(("random_normal", [np.array([1], np.uint64)],
                  {"shape": (6,), "dtype": DType.from_numpy(dtype), "mean": 0.0, "std": 1.0}))
    # issue 19: atanh, gelu's quick form, the normalizations (rows as groups)
    ones, zeros = np.ones(3, dtype), np.zeros(3, dtype)
    cases += [("atanh", [s], {}), ("gelu", [s], {"approximate": "quick"}),
              ("layer_norm", [rows, ones, zeros], {"epsilon": 1e-5}),
              ("group_norm", [rows, ones, zeros], {"num_groups": 1, "epsilon": 1e-5}),
              ("rms_norm", [rows, ones], {"epsilon": 1e-5, "weight_offset": 0.0,
                                          "multiply_before_cast": False})]
    return cases


def _variants(e: float, dtype: np.dtype[Any], kind: str) -> list[float]:
    """Wrong results for a reference value ``e``: other special values, or a finite value
    (in the ulp class +-max is one ULP from +-inf, NUM-10, so it is not wrong there)."""
    big = float(ml_dtypes.finfo(dtype).max)
    if math.isnan(e):
        return [0.0, 3.0, INF, -INF]
    if math.isinf(e):
        return [-e, NAN, 0.0] + ([math.copysign(big, e)] if kind == "reduction" else [])
    return [NAN, INF, -INF]


@pytest.mark.spec("TOL-4", "TOL-2")
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_special_values_are_exact_in_every_class(dtype: np.dtype[Any]) -> None:
    seen: set[str] = set()
    kinds: set[str] = set()
    for name, ops, attrs in special_cases(dtype):
        op = get_op(name)
        expected = ref(name, ops, attrs)
        with np.errstate(all="ignore"):
            mask = (np.zeros(expected.shape, bool) if op.unspecified is None else
                    np.broadcast_to(op.unspecified(*ops, **attrs), expected.shape))
        payload = expected.copy()  # another NaN payload still matches
        nan = np.isnan(expected.astype(np.float32))
        payload[nan] = -np.abs(payload[nan])
        assert compare_op(op, ops, attrs, [expected], [payload]) is None, name
        flat = expected.reshape(-1)
        for i in np.flatnonzero(~mask.reshape(-1)):
            e = float(flat[i])
            kinds.add("nan" if math.isnan(e) else "inf" if math.isinf(e) else "finite")
            for wrong in _variants(e, dtype, op.tolerance.kind):
                got = flat.copy()
                got[i] = wrong
                m = compare_op(op, ops, attrs, [expected], [got.reshape(expected.shape)])
                assert m is not None and m.bad == 1, (name, attrs, i, e, wrong)
        seen.add(name)
    assert seen | family_ops() == non_exact_ops()
    assert kinds == {"nan", "inf", "finite"}


@pytest.mark.spec("TOL-4", "NUM-10")
def test_ulp_class_counts_infinity_one_step_beyond_max() -> None:
    x = np.array([1000.0, -1000.0], np.float32)
    op, big = get_op("exp"), float(np.finfo(np.float32).max)
    e = ref("exp", [x], {})
    assert compare_op(op, [x], {}, [e], [np.array([big, 0.0], np.float32)]) is None
    m = compare_op(op, [x], {}, [e], [np.array([-np.inf, 0.0], np.float32)])
    assert m is not None and m.bad == 1


@pytest.mark.spec("TOL-4", "REDUCE-6", "CONF-18")
def test_nan_skipping_reduce_sum_fails_the_suite(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "NaNSkippingSum", ["test_ops.py"],
                    "test_op and reduce_sum-float32 and not allreduce")
    assert run.outcomes, "nothing ran"
    assert run.code == pytest.ExitCode.TESTS_FAILED and run.failed(), run.outcomes
    assert "NaN mismatch" in run.text() and "reduce_sum" in run.text(), run.text()


@pytest.mark.spec("TOL-4")
def test_nan_skipping_sum_direct_verdict() -> None:
    x = np.array([[NAN, 1, 2]], np.float32)
    op = get_op("reduce_sum")
    m = compare_op(op, [x], {"axis": 1}, [op.kernel(x, axis=1)], [np.array([[3.0]], np.float32)])
    assert m is not None and "NaN mismatch" in m.message


