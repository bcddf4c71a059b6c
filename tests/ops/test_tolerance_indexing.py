"""The REDUCE-6 bounds of the indexing family (scatter_add, scatter_mul, their nd forms,
gather_sum): the registry's bound is the spec formula written out again here, the edge of
the bound passes and one step more fails, special values are exact (TOL-4), and on
adversarial inputs (many duplicates, stagnating accumulators, cancellation, subnormals) a
legal implementation that combines in another order or precision passes, with the ratio
bound / observed error reported (``pytest -s`` prints it).
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from conformance.compare import compare_op
from interpreter.registry import get_op
from tests.ops.test_tolerance_bounds import DT_IDS, DTYPES, _variants, farthest, ref, step

#: the non-exact ops whose bound tests live here (``tests/ops/test_tolerance_bounds.py`` counts
#: them as covered)
TOLERANCE_OPS = frozenset({"scatter_add", "scatter_nd_add", "scatter_mul", "scatter_nd_mul",
                     "gather_sum"})
Case = tuple[str, list[np.ndarray], dict[str, Any]]


# -- the spec's n and M, element by element ---------------------------------------------------
def terms(name: str, ops: list[np.ndarray], attrs: dict[str, Any]
          ) -> dict[tuple[int, ...], list[float]]:
    """Result position -> the float64 values it combines: x's own first (scatters)."""
    out: dict[tuple[int, ...], list[float]] = {}
    if name == "gather_sum":
        x, idx = ops
        for i in range(idx.shape[0]):
            for d in range(x.shape[1]):
                out[(i, 0, d)] = [float(np.float64(x[int(j), d])) for j in idx[i]]
        return out
    x, upd, idx = ops
    for t in np.ndindex(x.shape):
        out[t] = [float(np.float64(x[t]))]
    if "axis" in attrs:
        axis = attrs["axis"] % x.ndim
        for p in np.ndindex(idx.shape):
            t = (*p[:axis], int(idx[p]) % x.shape[axis], *p[axis + 1:])
            out[t].append(float(np.float64(upd[p])))
    else:
        k = idx.shape[-1]
        for q in np.ndindex(idx.shape[:-1]):
            v = tuple(int(c) % x.shape[j] for j, c in enumerate(idx[q]))
            for f in np.ndindex(x.shape[k:]):
                out[(*v, *f)].append(float(np.float64(upd[(*q, *f)])))
    return out


def spec_bound(name: str, ops: list[np.ndarray], attrs: dict[str, Any], expected: np.ndarray
               ) -> np.ndarray:
    """REDUCE-6 with u = 2: n = updates combined (gather_sum: rows summed, less one), M =
    |x| + sum of |updates| (products: |x| * product of |updates|; gather_sum: sum of the
    |rows|); non-finite terms count as 0."""
    info = ml_dtypes.finfo(expected.dtype)
    out = np.zeros(expected.shape)
    for t, vals in terms(name, ops, attrs).items():
        n = len(vals) - 1  # the additions or multiplications
        mags = [abs(v) if math.isfinite(v) else 0.0 for v in vals]
        m = math.prod(mags) if name.endswith("mul") else math.fsum(mags)
        out[t] = 2 * n * float(info.eps) * m + n * float(info.smallest_subnormal)
    return out


def oracle(name: str, ops: list[np.ndarray], attrs: dict[str, Any], shape: tuple[int, ...]
           ) -> np.ndarray:
    """The exact result in float64 (fsum; products of float64 values, exact for these
    inputs' few significant bits)."""
    out = np.zeros(shape)
    for t, vals in terms(name, ops, attrs).items():
        out[t] = math.prod(vals) if name.endswith("mul") else math.fsum(vals)
    return out


def cases(dtype: np.dtype[Any]) -> list[Case]:
    rng = np.random.default_rng(11)

    def v(*shape: int, lo: float = -4.0, hi: float = 4.0) -> np.ndarray:
        return rng.uniform(lo, hi, size=shape).astype(dtype)

    i_axis = np.array([[0, 2, 2], [1, 2, 0], [0, 0, 0], [-1, 2, 1]], np.int64)
    i_nd = np.array([[0], [2], [0], [-3], [1]], np.int32)
    return [
        ("scatter_add", [v(3, 3), v(4, 3), i_axis], {"axis": 0}),
        ("scatter_mul", [v(3, 3, lo=0.5, hi=2.0), v(4, 3, lo=-2.0, hi=-0.5), i_axis],
         {"axis": 0}),
        ("scatter_nd_add", [v(3, 2), v(5, 2), i_nd], {}),
        ("scatter_nd_mul", [v(3, 2, lo=0.5, hi=2.0), v(5, 2, lo=0.5, hi=2.0), i_nd], {}),
        ("gather_sum", [v(4, 3), np.array([[0, 1, 1, 3], [2, 2, 2, -1]], np.int64)], {}),
    ]


@pytest.mark.spec("TOL-1", "REDUCE-6", "INDEX-7")
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_bound_is_the_spec_formula_edge_passes_one_step_more_fails(dtype: np.dtype[Any]
                                                                   ) -> None:
    seen = set()
    for name, ops, attrs in cases(dtype):
        op = get_op(name)
        expected = ref(name, ops, attrs)
        want = spec_bound(name, ops, attrs, expected)
        np.testing.assert_allclose(op.tolerance.bound(ops, attrs, expected), want, rtol=1e-12,
                                   atol=0, err_msg=name)
        for d in (1, -1):
            edge = farthest(expected, want, d)
            assert compare_op(op, ops, attrs, [expected], [edge]) is None, (name, d)
            m = compare_op(op, ops, attrs, [expected], [step(edge, d)])
            assert m is not None and m.bad == expected.size, (name, d, m)
            assert "REDUCE-6" in m.message
        seen.add(name)
    assert seen == TOLERANCE_OPS


@pytest.mark.spec("TOL-4", "TOL-2")
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_special_values_are_exact(dtype: np.dtype[Any]) -> None:
    nan, inf = float("nan"), float("inf")
    x = np.array([nan, inf, -inf, 0.5, inf, 1.0], dtype)
    u = np.array([1.0, 2.0, 3.0, nan, -inf, 4.0], dtype)
    i = np.arange(6, dtype=np.int64)
    calls: list[Case] = [
        ("scatter_add", [x, u, i], {"axis": 0}), ("scatter_mul", [x, u, i], {"axis": 0}),
        ("scatter_nd_add", [x, u, i[:, None]], {}), ("scatter_nd_mul", [x, u, i[:, None]], {}),
        ("gather_sum", [x.reshape(3, 2), np.array([[0, 1], [1, 2], [2, 2]], np.int64)], {})]
    kinds = set()
    for name, ops, attrs in calls:
        op = get_op(name)
        expected = ref(name, ops, attrs)
        flat = expected.reshape(-1)
        for k in range(flat.size):
            e = float(flat[k])
            kinds.add("nan" if math.isnan(e) else "inf" if math.isinf(e) else "finite")
            for wrong in _variants(e, dtype, "reduction"):
                got = flat.copy()
                got[k] = wrong
                m = compare_op(op, ops, attrs, [expected], [got.reshape(expected.shape)])
                assert m is not None and m.bad == 1, (name, k, e, wrong)
    assert kinds == {"nan", "inf", "finite"}


# -- adversarial inputs: legal implementations pass; how loose is the bound? --------------------
def implementation(name: str, ops: list[np.ndarray], attrs: dict[str, Any],
                   dtype: np.dtype[Any], reverse: bool, flush: bool) -> np.ndarray:
    """Another legal result: each element's values combined left to right (or right to left
    after x) in the operand dtype, rounding after every step (an executor accumulating in
    the dtype, in another order), optionally flushing subnormal partials to zero (which
    the n * tiny term admits)."""
    kind = "mul" if name.endswith("mul") else "add"
    found = terms(name, ops, attrs)
    keys = list(found)
    width = max(len(v) for v in found.values())
    pad = 1.0 if kind == "mul" else 0.0
    rows = np.full((len(keys), width), pad)
    for r, t in enumerate(keys):
        vals = found[t]
        head, rest = (vals[:0], vals) if name == "gather_sum" else (vals[:1], vals[1:])
        ordered = head + (rest[::-1] if reverse else rest)
        rows[r, :len(ordered)] = ordered
    small = float(ml_dtypes.finfo(dtype).smallest_normal)
    acc = rows[:, 0].astype(dtype)
    with np.errstate(all="ignore"):
        for j in range(1, width):
            step_ = rows[:, j].astype(dtype)
            acc = (acc * step_ if kind == "mul" else acc + step_).astype(dtype)
            if flush:
                acc = np.where(np.abs(acc.astype(np.float64)) < small, 0, acc).astype(dtype)
    out = ref(name, ops, attrs).copy()
    for r, t in enumerate(keys):
        out[t] = acc[r]
    return out


def stagnating(dtype: np.dtype[Any], kind: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    """x and k updates for one target where a dtype accumulator errs by about half an ulp
    at every step, always the same way: for sums x = 1 and updates of exactly half an ulp of
    1 (a tie that rounds back to 1 every time); for products x = 1.1 and, greedily, the
    factor in 1 + (1..32) eps whose product rounds down by the largest relative amount."""
    eps = float(ml_dtypes.finfo(dtype).eps)
    if kind == "add":
        return np.array([1.0], dtype), np.full(k, eps / 2, dtype)
    grid = 1.0 + eps * np.arange(1, 33)  # factors near 1 keep the product in one binade
    start = float(np.float64(np.array(1.1, dtype)))  # a factor with low bits set
    acc, picks = start, []
    for _ in range(k):
        exact = acc * grid
        rounded = exact.astype(dtype).astype(np.float64)
        best = int(np.argmax((exact - rounded) / exact))  # rounds down by the most
        picks.append(grid[best])
        acc = float(rounded[best])
    return np.array([start], dtype), np.array(picks, dtype)


def as_case(name: str, x: np.ndarray, u: np.ndarray) -> Case:
    """Row r of ``x`` (N, 1) combined with row r of ``u`` (N, k), in the op's own form."""
    n, k = u.shape
    if name == "gather_sum":  # rows of x: the N targets' first values, then the updates
        table = np.concatenate([x, u.reshape(-1, 1)])
        idx = np.concatenate([np.arange(n)[:, None], n + np.arange(n * k).reshape(n, k)], 1)
        return name, [table, idx.astype(np.int64)], {}
    if "_nd_" in name:
        return name, [x[:, 0], u.reshape(-1), np.repeat(np.arange(n), k)[:, None]], {}
    return name, [x, u, np.zeros((n, k), np.int64)], {"axis": 1}


def adversarial(dtype: np.dtype[Any]) -> list[tuple[str, Case]]:
    """Per op: a stagnating accumulator (64 updates), 4000 random rows of 2 updates (the
    reference and another order erring in opposite directions), and for sums 4096
    duplicates on one element, cancellation and subnormal partial sums."""
    rng = np.random.default_rng(5)
    tiny = float(ml_dtypes.finfo(dtype).smallest_subnormal)
    out: list[tuple[str, Case]] = []
    for name in sorted(TOLERANCE_OPS):
        kind = "mul" if name.endswith("mul") else "add"
        x, u = stagnating(dtype, kind, 64)
        out.append(("stagnation", as_case(name, x[:, None], u[None, :])))
        scale = 2.0 ** rng.integers(-3, 3, (4000, 3))
        signs = rng.choice([-1.0, 1.0], (4000, 3)) if kind == "add" else 1.0
        rows = (rng.uniform(1, 2, (4000, 3)) * (scale if kind == "add" else 1) * signs)
        out.append(("random, k=2", as_case(name, rows[:, :1].astype(dtype),
                                           rows[:, 1:].astype(dtype))))
    big = rng.uniform(1, 2, (1, 4096)).astype(dtype)
    out.append(("large n", as_case("scatter_add", np.zeros((1, 1), dtype), big)))
    cancel = (np.where(np.arange(64) % 2, -1.0, 1.0) * rng.uniform(1000, 1001, 64))
    out.append(("cancellation", as_case("scatter_nd_add", np.full((1, 1), 0.5, dtype),
                                        cancel[None, :].astype(dtype))))
    out.append(("subnormal", as_case("scatter_add", np.zeros((1, 1), dtype),
                                     np.full((1, 64), tiny, dtype))))
    return out


#: bound / observed error of the tightest adversarial input, per op: at most 4 (REDUCE-6's
#: u = 2 allows the reference and a legal order to err in opposite directions; a stagnating
#: sum errs by n * eps / 2 * M on its own, so 4 is the floor there, reached up to the
#: (|x| + n * eps / 2) / |x| of M)
TIGHTEST = 4.1


@pytest.mark.spec("REDUCE-6", "INDEX-7", "REDUCE-2")
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_legal_orders_pass_and_the_bound_is_tight_on_adversarial_inputs(
        dtype: np.dtype[Any]) -> None:
    ratios: dict[tuple[str, str], float] = {}
    for label, (name, ops, attrs) in adversarial(dtype):
        op = get_op(name)
        expected = ref(name, ops, attrs)
        bound = op.tolerance.bound(ops, attrs, expected)
        exact = oracle(name, ops, attrs, expected.shape)
        for reverse in (False, True):
            for flush in (False, True):
                got = implementation(name, ops, attrs, dtype, reverse, flush)
                assert compare_op(op, ops, attrs, [expected], [got]) is None, (
                    label, name, reverse, flush)
                for against, base in (("reference", expected), ("oracle", exact)):
                    err = np.abs(got.astype(np.float64) - base.astype(np.float64))
                    worst = float(np.nanmax(err / np.where(bound > 0, bound, np.inf)))
                    key = (name, label, against)
                    ratios[key] = min(ratios.get(key, math.inf), 1 / worst if worst else math.inf)
    print(f"\nREDUCE-6 bound / observed error of a legal order, {dtype}: against the "
          "reference | against the float64 oracle")
    for (name, label, against), r in sorted(ratios.items()):
        if against == "reference":
            print(f"  {name:15s} {label:13s} {r:8.2f} | {ratios[(name, label, 'oracle')]:8.2f}")
    for name in TOLERANCE_OPS:
        tightest = min(r for (n, _, against), r in ratios.items()
                       if n == name and against == "reference")
        assert tightest <= TIGHTEST, (name, tightest)
    # n * tiny admits a flushing accumulator, within 4x too
    assert ratios[("scatter_add", "subnormal", "reference")] <= TIGHTEST
