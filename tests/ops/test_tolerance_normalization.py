"""The normalizations' REDUCE-6 bounds (REDUCE-8) against a float64 oracle on adversarial
inputs, with the legal-but-different controls of ``tests/ops/normalization_controls.py``.

For every op, dtype (float32, float16, bfloat16) and adversarial input (large n with a
large mean: cancellation; a large first element followed by terms that each round the
running sum up by half an ulp: the worst case of a sequential sum; a variance just above
the smallest normal, whose squares are subnormal; tiny groups), every legal control is
within the bound of the float64 oracle and passes the suite's comparison against the
reference. The measured ratio bound / observed error (the smallest over the elements) is
reported per op, dtype and input; for each op and dtype some input brings a control to
within 4x of its bound (the bound is not looser than needed by more than 4x).
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from conformance.compare import compare_op
from interpreter.registry import get_op
from tests.ops import normalization_controls as controls
from tests.ops.test_tolerance_bounds import DT_IDS, DTYPES, farthest, step

OPS = ("layer_norm", "rms_norm", "group_norm")
TOLERANCE_OPS = frozenset(OPS)  # collected by tests/ops/test_tolerance_bounds.family_ops
#: group size per dtype where a sequential sum can stay in one binade (n * eps < 1)
LONG = {np.dtype(np.float32): 4096, np.dtype(np.float16): 512, np.dtype(ml_dtypes.bfloat16): 64}
Case = tuple[str, list[np.ndarray], dict[str, Any]]


# -- the float64 oracle ----------------------------------------------------------------------
def oracle(name: str, ops: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """The op in float64 on the exact operands (two passes; for float32 and narrower
    operands its error is ~n * 2**-53, far below every bound here)."""
    f = [np.asarray(a, np.float64) for a in ops]
    eps = float(np.float32(attrs["epsilon"]))
    with np.errstate(all="ignore"):
        if name == "rms_norm":
            x, w = f
            ms = np.mean(x * x, axis=-1, keepdims=True)
            return x / np.sqrt(ms + eps) * (w + float(np.float32(attrs["weight_offset"])))
        x, g, b = f
        shape = x.shape
        if name == "group_norm":
            c, k = shape[1], attrs["num_groups"]
            x = x.reshape(shape[0], k, -1)
            g, b = (np.repeat(p.reshape(k, -1), x.shape[-1] // (c // k), axis=1) for p in (g, b))
        d = x - x.mean(axis=-1, keepdims=True)
        z = d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + eps)
        return (z * g + b).reshape(shape)


def control(name: str, ops: list[np.ndarray], attrs: dict[str, Any], how: str, acc: Any
            ) -> np.ndarray:
    if how == "reference":  # the registry kernel: legal too
        return get_op(name).apply(*ops, **attrs)[0]
    return getattr(controls, name)(*ops, **attrs, how=how, acc=acc)


# -- adversarial inputs ----------------------------------------------------------------------
def _ulp(v: float, dtype: np.dtype[Any]) -> float:
    info = ml_dtypes.finfo(dtype)
    return math.ldexp(1.0, max(math.frexp(v)[1] - 1, int(info.minexp)) - int(info.nmant))


def big_first(dtype: np.dtype[Any], n: int, square: bool = False) -> np.ndarray:
    """One row: a first element B (``square``: B**2) just above a power of two, then terms
    (``square``: whose squares are) just above half an ulp of B, so that a sequential sum
    rounds up by nearly half an ulp at each of its n - 1 adds."""
    big = 1.0 + 2.0 * float(ml_dtypes.finfo(dtype).eps)  # B, just above 1
    half = _ulp(big, dtype) / 2
    if not square:
        small = np.nextafter(np.array(half, dtype), np.array(np.inf, dtype))
        return np.concatenate([[np.array(big, dtype)], np.full(n - 1, small, dtype)])
    s = np.array(math.sqrt(half), dtype)
    while float((s * s).astype(dtype)) <= half:
        s = np.nextafter(s, np.array(np.inf, dtype))
    return np.concatenate([[np.sqrt(np.array(big, dtype))], np.full(n - 1, s, dtype)])


def adversarial(name: str, dtype: np.dtype[Any]) -> list[tuple[str, Case]]:
    """(label, (op, operands, attrs)) for op ``name`` in ``dtype``."""
    rng = np.random.default_rng(19)
    n = LONG[dtype]
    tiny = float(ml_dtypes.finfo(dtype).smallest_normal)
    room = float(ml_dtypes.finfo(dtype).max) / (4 * n)  # the sums stay finite
    mean = min(1000.0, math.sqrt(room) if name == "rms_norm" else room)
    rows: dict[str, np.ndarray] = {
        "cancellation": (mean + rng.standard_normal((2, n))).astype(dtype),
        "big-first": np.stack([big_first(dtype, n, square=name == "rms_norm")]),
        "subnormal-variance": (2 * math.sqrt(tiny) * rng.standard_normal((2, n))).astype(dtype),
        "tiny-groups": rng.uniform(-4, 4, (64, 2)).astype(dtype),
        "large-n": rng.standard_normal((2, n)).astype(dtype),
    }
    out = []
    for label, x in rows.items():
        m = x.shape[-1]
        ones = np.ones(m, dtype)
        if name == "rms_norm":
            attrs: dict[str, Any] = {"epsilon": 0.0, "weight_offset": 0.0,
                                     "multiply_before_cast": True}
            out.append((label, (name, [x, ones], attrs)))
        elif name == "layer_norm":
            out.append((label, (name, [x, ones, np.zeros(m, dtype)], {"epsilon": 1e-45})))
        else:  # one group of two channels with the row's elements as spatial positions
            xg = x.reshape(x.shape[0], 2, m // 2) if m % 2 == 0 else x[:, :, None]
            c = xg.shape[1]
            out.append((label, (name, [xg, np.ones(c, dtype), np.zeros(c, dtype)],
                                {"num_groups": 1, "epsilon": 0.0})))
    return out


# -- the measurement -------------------------------------------------------------------------
def used_fraction(name: str, ops: list[np.ndarray], attrs: dict[str, Any], got: np.ndarray
                  ) -> float:
    """max |got - oracle| / bound over the specified elements where both are finite."""
    op = get_op(name)
    ref = op.apply(*ops, **attrs)[0]
    bound = op.tolerance.bound(ops, attrs, ref)
    exact = oracle(name, ops, attrs)
    keep = ~np.asarray(op.unspecified(*ops, **attrs), bool)
    g = np.asarray(got, np.float64)
    keep &= np.isfinite(exact)
    assert keep.any(), (name, "nothing specified")
    with np.errstate(invalid="ignore"):  # a non-finite result is over any bound
        return float(np.max(np.where(np.isfinite(g[keep]), np.abs(g - exact)[keep], np.inf)
                            / bound[keep]))


def controls_for(dtype: np.dtype[Any]) -> list[tuple[str, Any]]:
    """(how, accumulator dtype): every legal control, in the operand dtype and wider."""
    wide = np.float32 if dtype != np.float32 else np.float64
    return [("reference", dtype)] + [(how, acc) for how in controls.HOWS
                                     for acc in (dtype, wide)]


@pytest.fixture(scope="module")
def table() -> dict[tuple[str, str, str], tuple[float, str]]:
    """(op, dtype, input) -> (the largest used fraction of the bound, by which control)."""
    out = {}
    for name in OPS:
        for dtype, did in zip(DTYPES, DT_IDS, strict=True):
            for label, (_, ops, attrs) in adversarial(name, dtype):
                worst = (-1.0, "")
                for how, acc in controls_for(dtype):
                    got = control(name, ops, attrs, how, acc)
                    used = used_fraction(name, ops, attrs, got)
                    worst = max(worst, (used, f"{how}/{np.dtype(acc).name}"))
                out[(name, did, label)] = worst
    return out


def render(table: dict[tuple[str, str, str], tuple[float, str]]) -> str:
    lines = [f"{'op':<11}{'dtype':<10}{'input':<20}{'bound/error':>12}  worst control"]
    for (name, did, label), (used, how) in table.items():
        ratio = math.inf if used == 0 else 1 / used
        lines.append(f"{name:<11}{did:<10}{label:<20}{ratio:>12.2f}  {how}")
    return "\n".join(lines)


@pytest.mark.spec("REDUCE-6", "REDUCE-8")
def test_every_legal_control_is_within_the_bound_of_the_oracle(
        table: dict[tuple[str, str, str], tuple[float, str]]) -> None:
    over = {k: v for k, v in table.items() if v[0] > 1}
    assert not over, f"legal controls over their REDUCE-6 bound:\n{render(table)}"


@pytest.mark.spec("REDUCE-6", "REDUCE-8")
def test_no_bound_is_looser_than_needed_by_more_than_4x(
        table: dict[tuple[str, str, str], tuple[float, str]], capsys: Any) -> None:
    with capsys.disabled():
        print("\n" + render(table))
    for name in OPS:
        for did in DT_IDS:
            best = max(used for (n, d, _), (used, _) in table.items() if (n, d) == (name, did))
            assert best >= 0.25, f"{name} {did}: bound/error >= {1 / best:.1f}\n{render(table)}"


@pytest.mark.spec("REDUCE-8", "TOL-2")
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", OPS)
def test_legal_controls_pass_the_comparison_against_the_reference(name: str,
                                                                  dtype: np.dtype[Any]) -> None:
    for label, (_, ops, attrs) in adversarial(name, dtype):
        ref = get_op(name).apply(*ops, **attrs)[0]
        for how, acc in controls_for(dtype):
            got = control(name, ops, attrs, how, acc)
            m = compare_op(get_op(name), ops, attrs, [ref], [got])
            assert m is None, (name, label, how, np.dtype(acc).name, m.message if m else "")


# -- the bound is the spec's formula (REDUCE-6 table), written out again ----------------------
def spec_bound(name: str, ops: list[np.ndarray], attrs: dict[str, Any], expected: np.ndarray
               ) -> np.ndarray:
    """u * n * eps * M + n * tiny with u = 1, group by group in Python floats."""
    info = ml_dtypes.finfo(expected.dtype)
    eps32 = float(np.float32(attrs["epsilon"]))
    out = np.zeros(expected.shape)
    x = ops[0].astype(np.float64)
    if name == "rms_norm":
        w = ops[1].astype(np.float64) + float(np.float32(attrs["weight_offset"]))
        for r in np.ndindex(x.shape[:-1]):
            row = list(x[r])
            n = len(row) / 2 + 8
            rms = math.sqrt(math.fsum(v * v for v in row) / len(row) + eps32)
            for j, v in enumerate(row):
                m = abs(v) * abs(w[j]) / rms
                out[(*r, j)] = n * float(info.eps) * m + n * float(info.smallest_subnormal)
        return out
    g, b = (p.astype(np.float64) for p in ops[1:])
    groups = attrs.get("num_groups", 1)
    for r in np.ndindex(x.shape[:1] if name == "group_norm" else x.shape[:-1]):
        block = x[r]
        size = block.size // groups
        flat = block.reshape(groups, size)
        for k in range(groups):
            vals = list(flat[k])
            mean = math.fsum(vals) / size
            var = math.fsum((v - mean) ** 2 for v in vals) / size
            mean_abs = math.fsum(abs(v) for v in vals) / size
            for i, v in enumerate(vals):
                spatial = block.size // block.shape[0]  # group_norm: elements per channel
                c = (k * size + i) // spatial if name == "group_norm" else i
                lead = max(mean_abs, float(info.smallest_normal), abs(v - mean))
                m = lead * abs(g[c]) / math.sqrt(var + eps32) + abs(b[c])
                n = size + 8
                idx = (*r, *np.unravel_index(k * size + i, block.shape))
                out[idx] = n * float(info.eps) * m + n * float(info.smallest_subnormal)
    return out


def bound_cases(dtype: np.dtype[Any]) -> list[Case]:
    rng = np.random.default_rng(8)

    def v(*shape: int) -> np.ndarray:
        return rng.uniform(-4, 4, size=shape).astype(dtype)

    return [("layer_norm", [v(3, 5), v(5), v(5)], {"epsilon": 1e-5}),
            ("group_norm", [v(2, 4, 3), v(4), v(4)], {"num_groups": 2, "epsilon": 0.5}),
            ("rms_norm", [v(3, 6), v(6)], {"epsilon": 1e-6, "weight_offset": 1.0,
                                           "multiply_before_cast": False})]


@pytest.mark.spec("TOL-1", "REDUCE-6")
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_bound_is_the_table_formula_edge_passes_one_step_more_fails(dtype: np.dtype[Any]
                                                                      ) -> None:
    for name, ops, attrs in bound_cases(dtype):
        op = get_op(name)
        expected = op.apply(*ops, **attrs)[0]
        want = spec_bound(name, ops, attrs, expected)
        np.testing.assert_allclose(op.tolerance.bound(ops, attrs, expected), want, rtol=1e-12,
                                   atol=0, err_msg=name)
        for d in (1, -1):
            edge = farthest(expected, want, d)
            assert compare_op(op, ops, attrs, [expected], [edge]) is None, (name, d)
            m = compare_op(op, ops, attrs, [expected], [step(edge, d)])
            assert m is not None and m.bad == expected.size, (name, d, m)
            assert "REDUCE-6" in m.message


# -- the controls as executors: the suite passes them ------------------------------------------
@pytest.mark.spec("REDUCE-8", "REDUCE-2")
@pytest.mark.parametrize("control", ["SequentialNormalizations", "ApproxRsqrtNormalizations"])
def test_legal_control_executors_pass_the_suite(control: str, tmp_path: Any) -> None:
    """Welford / sequential sums in the operand dtype, or a 2-ulp rsqrt, on every
    normalization cell of float32 and bfloat16 (accumulated in bfloat16)."""
    from tests.suite.suite_runner import VENDOR, run_suite

    run = run_suite(tmp_path, f"{VENDOR}:{control}", ["test_ops.py"],
                    "test_op and (layer_norm or rms_norm or group_norm) and "
                    "(float32 or bfloat16)")
    assert len(run.outcomes) == 18, run.outcomes
    assert run.code == 0 and not run.failed(), run.failures()


@pytest.mark.spec("TOL-2", "REDUCE-8")
def test_rms_norm_subnormal_normalized_value_times_a_large_weight_is_unspecified() -> None:
    """x0 / rms is about -1.3e-42, below bfloat16's smallest subnormal: an accumulation in
    bfloat16 (legal, REDUCE-8) rounds it to 0, and the weight 3.4e38 turns that into a
    difference of 4.5e-4, far past n * tiny; the reference (float32) keeps -4.5e-4."""
    op = get_op("rms_norm")
    bf = ml_dtypes.bfloat16
    x = np.array([[-9.18355e-41, -98.0]], bf)
    weight = np.array([3.38953e38, 62.25], bf)
    attrs = {"epsilon": 0.0, "weight_offset": 0.0, "multiply_before_cast": True}
    ref = np.asarray(op.kernel(x, weight, **attrs), np.float64)
    assert ref[0, 0] == pytest.approx(-4.5e-4, rel=0.01)
    with np.errstate(all="ignore"):
        mask = op.unspecified(x, weight, **attrs)
    assert mask.tolist() == [[True, False]]
    # a weight within n keeps the element specified
    small = np.array([1.0, 62.25], bf)
    with np.errstate(all="ignore"):
        assert op.unspecified(x, small, **attrs).tolist() == [[False, False]]
