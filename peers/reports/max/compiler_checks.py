"""Independent checks of the divergences only MAX's compiler showed (stop 33's smoke run of
``MaxCompilingExecutor``), from the arrays MAX returned (``actual.npz`` in each class folder)
and numpy/IEEE 754 alone, without the suite's reference. Run:
``python peers/reports/max/compiler_checks.py`` (output: ``compiler_checks.out``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _load(cls: str) -> tuple[list[np.ndarray], np.ndarray]:
    ins = np.load(HERE / cls / "inputs.npz")
    act = np.load(HERE / cls / "actual.npz")
    return [ins[k] for k in sorted(ins)], act[sorted(act)[0]]


def argsort_unstable() -> None:
    (x,), got = _load("argsort-unstable")
    ordered = bool(np.all(np.diff(x[got].astype(np.int64)) >= 0))
    perm = sorted(got.tolist()) == list(range(x.size))
    stable = np.argsort(x, kind="stable")
    ties = [(int(a), int(b)) for a, b in zip(got[:-1], got[1:], strict=True)
            if x[a] == x[b] and a > b]
    print(f"argsort-unstable: MAX's result is a permutation: {perm}; sorts x ascending: "
          f"{ordered}; equals numpy's stable argsort: {np.array_equal(got, stable)}; "
          f"adjacent equal keys out of index order: {len(ties)} (first {ties[:3]}): a valid "
          f"but unstable sort (argsort.C3 requires ties in index order)")


def fma_contraction() -> None:
    (x0, x1), got = _load("fma-contraction")
    f32 = np.float32

    def rnd(v: np.ndarray) -> np.ndarray:
        return v.astype(f32)

    def fma(a: np.ndarray, b: float | np.ndarray, c: float | np.ndarray) -> np.ndarray:
        # a*b is exact in float64 for float32 a, b: one rounding of a*b+c, as fmaf does
        return rnd(a.astype(np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64))

    t5 = rnd(x0 * f32(0.25)) + f32(1)
    t10 = rnd(x1 * f32(3)) - f32(1)
    separate = rnd(t5.T * t10) + t10
    t5f, t10f = fma(x0, 0.25, 1.0), fma(x1, 3.0, -1.0)
    fused = fma(t5f.T, t10f, t10f)
    print(f"fma-contraction: graph (x0*0.25+1)^T * (x1*3-1) + (x1*3-1), float32: MAX differs "
          f"from each op rounded separately in {int((separate != got).sum())} of 64 "
          f"elements and from every mul fused into its add/sub (one rounding, fmaf) in "
          f"{int((fused != got).sum())}")


def constant_nan_payload() -> None:
    (_cond, _x), got = _load("constant-nan-payload")
    g = np.asarray(got).ravel()
    nan_bits = sorted({int(b) for b in g.view(np.uint32)[np.isnan(g)]})
    print(f"constant-nan-payload: select between x and a constant NaN 0x7fe00000 (quiet, "
          f"payload 0x200000): the NaNs MAX's compiled select returned have bits "
          f"{[hex(b) for b in nan_bits]} (0x7fc00000 is the canonical quiet NaN). IEEE 754 "
          f"(6.2.3) keeps a NaN operand's payload through copy-like operations; MAX's "
          f"interpreter passed the same test (payload kept)")


def mod_infinite_divisor() -> None:
    (a, b), got = _load("mod-infinite-divisor")
    idx = [i for i in range(a.size) if np.isnan(got[i]) and not np.isnan(a[i])
           and not np.isnan(b[i]) and not np.isinf(a[i]) and b[i] != 0]
    for i in idx[:3]:
        x, y = float(a[i]), float(b[i])
        print(f"mod-infinite-divisor: mod({x!r}, {y!r}): MAX {float(got[i])!r}; Python "
              f"{x % y!r}, numpy {float(np.mod(np.float32(x), np.float32(y)))!r}, C fmod "
              f"{math.fmod(x, y)!r} (floor mod: fmod then the divisor's sign; IEEE 754 "
              f"remainder of a finite x by an infinite y is x)")


def add_zero_folded() -> None:
    (x,), _ = _load("add-zero-folded")
    act = np.load(HERE / "add-zero-folded" / "actual.npz")
    got = act["out0"]  # out0 = x + (+0.0), a rank-0 constant broadcast (graph.txt)
    neg0 = np.signbit(x) & (x == 0)
    print(f"add-zero-folded: x + (+0.0) at the {int(neg0.sum())} elements where x = -0.0: MAX "
          f"{sorted({float(v) for v in got[neg0]})} (sign bits {sorted(set(np.signbit(got[neg0]).tolist()))}); "
          f"IEEE 754 6.3 (round to nearest): -0 + +0 = +0; numpy "
          f"{float(np.float32(-0.0) + np.float32(0.0))!r}: the compiler folded x + 0.0 to x")


def double_rounding_bf16() -> None:
    import ml_dtypes

    (x,), got = _load("double-rounding-bf16")
    bf = ml_dtypes.bfloat16
    direct = x.astype(bf)
    via32 = x.astype(np.float32).astype(bf)
    got = got.view(np.uint16).view(bf)  # the report stores bfloat16 as its bits
    bad = np.flatnonzero(got.view(np.uint16) != direct.view(np.uint16))
    same = bool(np.array_equal(got.view(np.uint16), via32.view(np.uint16)))
    print(f"double-rounding-bf16: cast float64 -> bfloat16 of {x.size} values: MAX differs from "
          f"one rounding (ml_dtypes float64 -> bfloat16) at {bad.size} element(s), e.g. "
          f"{float(x[bad[0]])!r} -> {float(got[bad[0]])!r} (one rounding: "
          f"{float(direct[bad[0]])!r}); MAX equals float64 -> float32 -> bfloat16 at every "
          f"element: {same}")


def tanh_f16_neg_inf() -> None:
    (x,), got = _load("tanh-f16-neg-inf")
    i = int(np.flatnonzero(np.isneginf(x))[0])
    print(f"tanh-f16-neg-inf: tanh(-inf) in float16: MAX {float(got[i])!r}; IEEE/C99 tanh(-inf) "
          f"= -1; numpy {float(np.tanh(np.float16(-np.inf)))!r}; MAX's float32 and float64 "
          f"tanh sweeps give -1 there")


def exp_f32_near_overflow() -> None:
    (x,), got = _load("exp-f32-near-overflow")
    cr = np.exp(x.astype(np.float64)).astype(np.float32)  # correctly rounded but for ties
    ulps = np.abs(got.view(np.int32).astype(np.int64) - cr.view(np.int32).astype(np.int64))
    ulps[np.abs(cr) < np.finfo(np.float32).tiny] = 0  # subnormal results: FTZ, declared
    i = np.unravel_index(int(np.argmax(ulps)), x.shape)
    print(f"exp-f32-near-overflow: exp({float(x[i])!r}) in float32: MAX {float(got[i])!r}, "
          f"float64 exp rounded once to float32 {float(cr[i])!r}: {int(ulps[i])} ULP (exp's "
          f"tolerance ulp(2), TOL-1); the suite's reference is {float(np.exp(x[i]))!r}")


if __name__ == "__main__":
    argsort_unstable()
    fma_contraction()
    constant_nan_payload()
    mod_infinite_divisor()
    add_zero_folded()
    double_rounding_bf16()
    tanh_f16_neg_inf()
    exp_f32_near_overflow()
