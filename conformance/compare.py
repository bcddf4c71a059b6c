"""Comparing an executor's results with the reference, per the op's tolerance class (TOL-n).

* ``exact``: same bits (NaN matches NaN whatever its payload; -0.0 differs from +0.0).
* ``ulp(n)``: within n units in the last place of the result dtype (bfloat16, float16 and
  float8 included, via their bit patterns); +-0 are 0 ULP apart. random_normal also accepts
  ``|got - expected| <= n * ulp(|std * z|)`` (RNG-8).
* ``reduction(u)``: ``|got - expected| <= u * n * eps * M + n * tiny`` (REDUCE-6) with the
  op's own n and M; integer results are exact.

The allowed absolute error is the registry's ``op.tolerance.bound(operands, attrs,
expected)``, the same function the spec tables are generated from. Special values (TOL-4):
in every class a NaN matches only a NaN; an infinity matches only the same infinity, except
that ``ulp(n)`` counts +-inf as one ULP beyond +-max (NUM-10).

Elements the op marks unspecified (``OpDef.unspecified``) are not compared. Dtype and shape
are checked first. With ``perturb_ulps > 0`` (operands that came out of inexact upstream ops)
a mismatch is accepted where the result is consistent with the operands perturbed by that
many ULP: this makes round/floor/comparisons/argmax of nearly-equal values robust.

A failure is reported as a :class:`Mismatch` whose ``message`` names the op, dtype, shape,
the worst elements (index, expected, got, ULP distance) and a histogram of ULP errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from interpreter.registry import OpDef, Tolerance
from interpreter.registry.core import EXACT

__all__ = [
    "Mismatch",
    "as_numpy",
    "compare_arrays",
    "compare_op",
    "from_ordered",
    "same_bits",
    "to_ordered",
    "ulp_distance",
]

WORST = 5
_HIST_EDGES = (0, 1, 2, 4, 16, 256)


@dataclass
class Mismatch:
    """Why a result is not accepted; ``message`` is ready to print."""

    message: str
    index: int = 0          # which result/buffer
    bad: int = 0            # number of mismatching elements
    kind: str = "values"    # "values", "dtype", "shape" or "type"

    def __str__(self) -> str:
        return self.message


def as_numpy(x: Any) -> np.ndarray:
    """An executor's result as a host numpy array (``.get()`` for device arrays)."""
    if isinstance(x, np.ndarray):
        return x
    get = getattr(x, "get", None)
    if callable(get) and not isinstance(x, dict):
        return np.asarray(get())
    return np.asarray(x)


def _is_float(dt: np.dtype[Any]) -> bool:
    return dt.kind in "fV" and dt.itemsize > 0 and dt.names is None


def _bits(a: np.ndarray) -> np.ndarray:
    """The unsigned-integer bit pattern of ``a``, same shape (rank 0 included)."""
    c = a if a.flags.c_contiguous else np.array(a, order="C")
    return c.view(f"u{a.dtype.itemsize}").reshape(a.shape)


def to_ordered(a: np.ndarray) -> np.ndarray:
    """Float bits mapped to int64 so that adjacent floats differ by 1 (+0 and -0 both 0)."""
    n = a.dtype.itemsize
    u = _bits(a)
    sign = 1 << (8 * n - 1)
    mag = (u & np.array(sign - 1, u.dtype)).astype(np.int64)
    neg = (u & np.array(sign, u.dtype)) != 0
    return np.where(neg, -mag, mag)


def from_ordered(o: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """Inverse of :func:`to_ordered` (0 maps to +0)."""
    n = dtype.itemsize
    sign = np.uint64(1) << np.uint64(8 * n - 1)
    mag = np.abs(o).astype(np.uint64)
    bits = np.where(o < 0, mag | sign, mag).astype(f"u{n}")
    return bits.view(dtype)


def ulp_distance(expected: np.ndarray, got: np.ndarray) -> np.ndarray:
    """Elementwise ULP distance (float64; inf where exactly one side is NaN, 0 for NaN/NaN)."""
    e = to_ordered(expected)
    g = to_ordered(got)
    d = np.where(e >= g, e - g, g - e).view(np.uint64).astype(np.float64)
    with np.errstate(all="ignore"):
        en, gn = np.isnan(expected.astype(np.float32)), np.isnan(got.astype(np.float32))
    d[en & gn] = 0.0
    d[en ^ gn] = np.inf
    return d


def same_bits(expected: np.ndarray, got: np.ndarray) -> np.ndarray:
    """Elementwise exact equality: NaN == NaN (any payload), -0.0 != +0.0."""
    if _is_float(expected.dtype):
        eb, gb = _bits(expected), _bits(got)
        with np.errstate(all="ignore"):
            nan = np.isnan(expected.astype(np.float32)) & np.isnan(got.astype(np.float32))
        return np.asarray((eb == gb) | nan)
    return np.asarray(expected == got)


def _within(expected: np.ndarray, got: np.ndarray, tol: Tolerance,
            bound: np.ndarray | None) -> np.ndarray:
    """Elementwise acceptance under ``tol`` (not counting masks and perturbation).

    Special values (TOL-4): a NaN matches only a NaN in every class; the ``ulp`` class
    measures infinities by NUM-10 (one step beyond the largest finite value), and the
    absolute ``bound`` (REDUCE-6, RNG-8) only applies where both values are finite, so an
    infinity there matches only the same infinity."""
    ok = same_bits(expected, got)
    if tol.kind == "exact" or not _is_float(expected.dtype) or ok.all():
        return ok
    if tol.kind == "ulp":
        ok = ok | (ulp_distance(expected, got) <= tol.ulps)
    if bound is not None:
        with np.errstate(all="ignore"):
            e64, g64 = expected.astype(np.float64), got.astype(np.float64)
            finite = np.isfinite(e64) & np.isfinite(g64)
            ok = ok | (finite & (np.abs(e64 - g64) <= np.broadcast_to(bound, e64.shape)))
    return np.asarray(ok)


def _fmt(x: Any) -> str:
    if isinstance(x, np.floating | float) or (hasattr(x, "dtype") and _is_float(x.dtype)):
        return repr(float(x))
    return repr(x.item() if hasattr(x, "item") else x)


def _describe(label: str, expected: np.ndarray, got: np.ndarray, bad: np.ndarray,
              tol: Tolerance, compared: int) -> str:
    """The failure message; any rank (0 included), size and dtype (CONF-22)."""
    bad = np.broadcast_to(np.asarray(bad, bool), expected.shape)
    n_bad = int(bad.sum())
    head = (f"{label}: {n_bad} of {compared} compared elements differ "
            f"(dtype {expected.dtype}, shape {list(expected.shape)}, tolerance {tol})")
    idx = [tuple(int(v) for v in row) for row in np.argwhere(bad).reshape(n_bad, -1)]
    lines = [head]
    if _is_float(expected.dtype):
        dist = ulp_distance(expected, got)
        worst = np.asarray(dist[bad], np.float64).reshape(-1)  # argwhere (C) order
        order = np.argsort(-worst, kind="stable")[:WORST]
        lines.append("  worst elements (index: expected -> got, ULP distance):")
        for k in order:
            i = idx[int(k)]
            d = float(dist[i])
            lines.append(f"    {list(i)}: {_fmt(expected[i])} -> {_fmt(got[i])}  "
                         f"({'NaN mismatch' if np.isinf(d) else f'{d:.0f} ulp'})")
        hist = []
        finite = worst[np.isfinite(worst)]
        for lo, hi in zip(_HIST_EDGES, (*_HIST_EDGES[1:], None), strict=True):
            c = int(((finite >= lo) & (finite < hi)).sum()) if hi else int((finite >= lo).sum())
            hist.append(f"{lo}{'' if hi == lo + 1 else (f'-{hi - 1}' if hi else '+')}: {c}")
        hist.append(f"NaN mismatch: {int(np.isinf(worst).sum())}")
        lines.append("  ULP histogram of differing elements: " + ", ".join(hist))
    else:
        lines.append("  first differing elements (index: expected -> got):")
        for i in idx[:WORST]:
            lines.append(f"    {list(i)}: {_fmt(expected[i])} -> {_fmt(got[i])}")
    return "\n".join(lines)


def compare_arrays(expected: np.ndarray, got: Any, tol: Tolerance = EXACT, *,
                   label: str = "result", mask: np.ndarray | None = None,
                   bound: np.ndarray | None = None,
                   alternatives: Sequence[np.ndarray] = ()) -> Mismatch | None:
    """Compare one result; None when accepted.

    ``mask``: True where the result is unspecified (not compared). ``bound``: the allowed
    ``|got - expected|`` per element (``Tolerance.bound``; none: only bits and, for ``ulp``,
    the ULP count). ``alternatives``: other acceptable expected arrays (e.g. the kernel on
    perturbed operands); an element passes if it matches ``expected`` or any alternative
    within ``tol``.
    """
    try:
        g = as_numpy(got)
    except Exception as e:
        return Mismatch(f"{label}: result is not an array ({type(got).__name__}: {e})",
                        kind="type")
    if g.dtype != expected.dtype:
        return Mismatch(f"{label}: dtype {g.dtype} != expected {expected.dtype} "
                        f"(shape {list(g.shape)} vs expected {list(expected.shape)})",
                        kind="dtype")
    if g.shape != expected.shape:
        return Mismatch(f"{label}: shape {list(g.shape)} != expected {list(expected.shape)} "
                        f"(dtype {expected.dtype})", kind="shape")
    ok = _within(expected, g, tol, bound)
    for alt in alternatives:
        if ok.all():
            break
        if alt.shape == expected.shape and alt.dtype == expected.dtype:
            ok = ok | _within(alt, g, tol, bound)
    compared = expected.size
    if mask is not None:
        m = np.broadcast_to(np.asarray(mask, bool), expected.shape)
        ok = ok | m
        compared -= int(m.sum())
    if ok.all():
        return None
    bad = ~ok
    return Mismatch(_describe(label, expected, g, bad, tol, compared), bad=int(bad.sum()))


# -- op-aware comparison --------------------------------------------------------------------
def _perturbed(op: OpDef, operands: Sequence[np.ndarray], attrs: dict[str, Any], ulps: int,
               trials: int = 6) -> list[list[np.ndarray]]:
    """Kernel results on float operands moved by up to ``ulps`` ULP (all down, all up and a
    few random per-element sign patterns)."""
    floats = [i for i, a in enumerate(operands) if _is_float(a.dtype) and a.size]
    if not floats or ulps <= 0:
        return []
    rng = np.random.default_rng(0)
    out: list[list[np.ndarray]] = []
    patterns: list[Any] = [-1, 1] + [None] * trials
    for p in patterns:
        ops = [np.array(a, copy=True) for a in operands]
        for i in floats:
            a = operands[i]
            sign = (np.full(a.shape, p) if p is not None
                    else rng.choice([-1, 0, 1], size=a.shape))
            o = to_ordered(a) + sign.astype(np.int64) * ulps
            moved = from_ordered(o, a.dtype).reshape(a.shape)
            with np.errstate(all="ignore"):
                keep = ~np.isfinite(a.astype(np.float32))
            ops[i] = np.where(keep, a, moved).astype(a.dtype)
        try:
            with np.errstate(all="ignore"):
                res = op.apply(*ops, **attrs)
        except Exception:
            continue
        out.append([np.asarray(r) for r in res])
    return out


def compare_op(op: OpDef, operands: Sequence[np.ndarray], attrs: dict[str, Any],
               expected: Sequence[np.ndarray], got: Sequence[Any], *, label: str = "",
               perturb_ulps: int = 0) -> Mismatch | None:
    """Compare the results of one use of ``op`` on ``operands`` (the arrays the op itself
    received, after lowering). ``label`` prefixes messages (default: ``op[dtype]``)."""
    if len(got) != len(expected):
        return Mismatch(f"{label or op.name}: {len(got)} results, expected {len(expected)}")
    mask: np.ndarray | None = None
    if op.unspecified is not None:
        try:
            mask = np.asarray(op.unspecified(*operands, **attrs), bool)
        except Exception:
            mask = None
    alts: list[list[np.ndarray]] | None = None
    for k, e in enumerate(expected):
        e = np.asarray(e)
        name = label or f"{op.name}[{e.dtype}]"
        where = f"{name} result {k}" if len(expected) > 1 else name
        m = mask if mask is not None and mask.size and _fits(mask, e) else None
        bound = op.tolerance.bound(operands, attrs, e)
        kwargs: dict[str, Any] = {"label": where, "mask": m, "bound": bound}
        bad = compare_arrays(e, got[k], op.tolerance, **kwargs)
        if bad is not None and perturb_ulps > 0 and bad.kind == "values":
            if alts is None:
                alts = _perturbed(op, operands, attrs, perturb_ulps)
            others = [a[k] for a in alts if k < len(a)]
            bad = compare_arrays(e, got[k], op.tolerance, alternatives=others, **kwargs)
            if bad is not None:
                bad.message += (f"\n  (also compared against the kernel on operands perturbed "
                                f"by up to {perturb_ulps} ulp)")
        if bad is not None:
            bad.index = k
            if bad.kind == "values" and bound.size and bound.max() > 0:
                bad.message += (f"\n  allowed |got - expected| per element: "
                                f"{_bound_range(bound)} ({op.tolerance.formula()})")
            return bad
    return None


def _bound_range(bound: np.ndarray) -> str:
    lo, hi = float(bound.min()), float(bound.max())
    return f"{lo:.3g}" if lo == hi else f"{lo:.3g} to {hi:.3g}"


def _fits(a: np.ndarray, like: np.ndarray) -> bool:
    try:
        np.broadcast_shapes(a.shape, like.shape)
    except ValueError:
        return False
    return np.broadcast_shapes(a.shape, like.shape) == like.shape
