"""Elementwise ops: binary arithmetic, comparisons, logic, unary math, cast (spec/ops/).

Numerics are defined in spec/numerics.md (NUM-n). Floats narrower than float64 that are not
IEEE-exact in numpy are evaluated in float64 and rounded once to the result dtype
(``round_to``), so the reference is as accurate as float64 allows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

from ..dtype import DType
from ..promotion import promote_dtypes
from ..rounding import round_to
from ..types import ValueType
from . import accurate
from .core import EXACT, ArgSource, Attrs, OpCall, OpDef, Tolerance, register, ulp
from .dtypesets import ALL, BOOL, FLOATS, NUMERIC, SIGNED_NUMERIC
from .rules import elementwise, predicate

__all__: list[str] = []  # importing the module registers its ops

Array = Any  # numpy array or numpy scalar (rank-0 results)

def _via_f64(fn: Callable[..., Array]) -> Callable[..., Array]:
    """Evaluate ``fn`` in float64 for narrower floats, then round once to the input dtype."""

    def kernel(*xs: Array, **attrs: Any) -> Array:
        dtype = np.asarray(xs[0]).dtype
        if dtype == np.float64 or dtype.kind not in "fV":
            return fn(*xs, **attrs)
        return round_to(fn(*(np.asarray(x, np.float64) for x in xs), **attrs), dtype)

    kernel.__name__ = getattr(fn, "__name__", "kernel")
    return kernel


# -- sampling (ArgSource protocol) --------------------------------------------------------
Sampler = Callable[[ArgSource, frozenset[DType]], OpCall]


def _sorted(dtypes: frozenset[DType]) -> list[DType]:
    return sorted(dtypes, key=lambda d: d.value)


def _binary_sampler(kinds: Sequence[str] = ("any",), rhs_kinds: Sequence[str] | None = None,
                    ) -> Sampler:
    """Two operands: same or promotable dtypes, equal or broadcastable shapes."""

    def sample(src: ArgSource, dtypes: frozenset[DType]) -> OpCall:
        lhs_t = rhs_t = src.dtype(_sorted(dtypes), data=True)
        if src.integer(0, 3) == 0:  # a dtype that promotes to lhs_t (PROMO-1)
            rhs_t = src.dtype([d for d in DType if promote_dtypes([lhs_t, d]) is lhs_t])
        shape = rhs_shape = src.shape(max_rank=3)
        how = src.integer(0, 5)
        if how == 0 and shape:  # a size-1 dim stretches
            i = src.integer(0, len(shape) - 1)
            rhs_shape = (*shape[:i], 1, *shape[i + 1:])
        elif how == 1:  # trailing dims only
            rhs_shape = shape[src.integer(0, len(shape)):]
        lhs = src.values(lhs_t, shape, src.choice(list(kinds)))
        rhs = src.values(rhs_t, rhs_shape, src.choice(list(rhs_kinds or kinds)))
        return OpCall([rhs, lhs] if src.boolean() else [lhs, rhs])

    return sample


def _unary_sampler(kinds: Sequence[str] = ("any",)) -> Sampler:
    def sample(src: ArgSource, dtypes: frozenset[DType]) -> OpCall:
        dtype = src.dtype(_sorted(dtypes), data=True)
        return OpCall([src.values(dtype, src.shape(), src.choice(list(kinds)))])

    return sample


def _bind(sample: Sampler, dtypes: frozenset[DType]) -> Callable[[ArgSource], OpCall]:
    return lambda src: sample(src, dtypes)


def _traits(tolerance: Tolerance) -> frozenset[str]:
    """Elementwise ops fuse (COMP-2); one with an ulp budget is computed by approximation
    (NUM-7)."""
    return frozenset({"fusable", "transcendental"} if tolerance.kind == "ulp" else {"fusable"})


def _binary(name: str, kernel: Callable[..., Array], dtypes: frozenset[DType], summary: str,
            infer: Any = elementwise, tolerance: Tolerance = EXACT,
            unspecified: Any = None, sample: Sampler | None = None,
            traits: frozenset[str] = frozenset(),
            variants: Mapping[str, Callable[..., Array]] | None = None) -> None:
    traits |= _traits(tolerance)
    register(OpDef(name, summary=summary, category="elementwise-binary", operands=("lhs", "rhs"),
                   attrs=(), infer=infer, kernel=kernel, dtypes=dtypes, tolerance=tolerance,
                   promote=(0, 1), broadcast=True, unspecified=unspecified,
                   sample=_bind(sample or _binary_sampler(), dtypes),
                   result_dtypes=BOOL if infer is predicate else None, traits=traits,
                   variants=variants or {}))


def _unary(name: str, kernel: Callable[..., Array], dtypes: frozenset[DType], summary: str,
           infer: Any = elementwise, tolerance: Tolerance = EXACT,
           attrs: tuple[str, ...] = (), sample: Sampler | None = None,
           variants: Mapping[str, Callable[..., Array]] | None = None) -> None:
    traits = _traits(tolerance)
    register(OpDef(name, summary=summary, category="elementwise-unary", operands=("x",),
                   attrs=attrs, infer=infer, kernel=kernel, dtypes=dtypes, tolerance=tolerance,
                   sample=_bind(sample or _unary_sampler(), dtypes),
                   result_dtypes=BOOL if infer is predicate else None, traits=traits,
                   variants=variants or {}))


# -- variants: what a backend breaking a rule computes (OpDef.variants, the diagnosis) -----
def _saturating(fn: Callable[..., Array]) -> Callable[..., Array]:
    """``fn`` on integers, clamped to the dtype's range instead of wrapping (NUM-2)."""

    def kernel(*xs: Array) -> Array:
        dtype = np.asarray(xs[0]).dtype
        info = np.iinfo(dtype)
        exact = fn(*[np.asarray(x).astype(object) for x in xs])
        return np.asarray(np.clip(exact, int(info.min), int(info.max))).astype(dtype)

    return kernel


def _fma_exact(a: float, b: float, c: float) -> float:
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        return a * b + c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return a * b + c  # the sign of an exact zero follows IEEE addition
    try:
        return float(exact)
    except OverflowError:
        return float("inf") if exact > 0 else float("-inf")


_FMA = np.frompyfunc(_fma_exact, 3, 1)


def _fused_multiply_add(x: Array, y: Array, other: Array) -> Array:
    """``x * y + other`` rounded once to ``other``'s float dtype (an FMA, NUM-12)."""
    dtype = np.asarray(other).dtype
    x, y, other = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (x, y, other)))
    if dtype == np.float64:
        return np.asarray(_FMA(x, y, other)).astype(np.float64)
    return round_to(x * y + other, dtype)  # exact product; one rounding to float64 first


def _add_fused(x: Array, y: Array, other: Array, *, product_first: bool) -> Array:
    return _fused_multiply_add(x, y, other)


def _sub_fused(x: Array, y: Array, other: Array, *, product_first: bool) -> Array:
    """``x * y - other``, or ``other - x * y``, rounded once."""
    if product_first:
        return _fused_multiply_add(x, y, -np.asarray(other))
    return _fused_multiply_add(-np.asarray(x), y, other)


def _nan_dropped(pick: Callable[[Array, Array], Array]) -> Callable[[Array, Array], Array]:
    """``pick`` (the op's kernel) with a NaN operand losing to the other one, as C
    ``fmax``/``fmin`` (NUM-8); NaN where both are NaN. Equal to ``pick`` where neither is
    NaN, signed zeros included (``np.fmax`` returns either operand of a ``+0``/``-0`` tie,
    by its position in numpy's SIMD or scalar loop)."""

    def kernel(lhs: Array, rhs: Array) -> Array:
        out = np.asarray(pick(lhs, rhs))
        if out.dtype.kind not in "fV":
            return out
        lhs, rhs = np.asarray(lhs), np.asarray(rhs)
        return np.where(np.isnan(lhs), rhs, np.where(np.isnan(rhs), lhs, out)).astype(out.dtype)

    return kernel


def _half_away(x: Array) -> Array:
    """round() with ties away from zero (NUM-3)."""
    x = np.asarray(x)
    w = x.astype(np.float64)
    return (np.sign(w) * np.floor(np.abs(w) + 0.5)).astype(x.dtype)


def _trunc_div(lhs: Array, rhs: Array) -> Array:
    """Division rounded toward zero, as C's ``/`` (NUM-3)."""
    a, b = np.asarray(lhs), np.asarray(rhs)
    if a.dtype.kind in "iu":
        q = np.trunc(np.true_divide(a.astype(np.float64), np.where(b == 0, 1, b)))
        return q.astype(a.dtype)
    return np.trunc(a.astype(np.float64) / b.astype(np.float64)).astype(a.dtype)


def _trunc_mod(lhs: Array, rhs: Array) -> Array:
    """Remainder with the sign of the dividend, as C's ``%``/``fmod`` (NUM-3)."""
    a, b = np.asarray(lhs), np.asarray(rhs)
    if a.dtype.kind in "iu":
        return np.fmod(a, np.where(b == 0, 1, b)).astype(a.dtype)
    return np.fmod(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


def _subnormal_quotient(lhs: Array, rhs: Array) -> tuple[Array, Array]:
    """Where the float quotient ``lhs / rhs``, rounded to the dtype, is subnormal (an FTZ
    backend dividing in that dtype flushes it to a zero of its sign, NUM-11), and that sign."""
    a = np.asarray(lhs)
    if a.dtype.kind not in "fV":
        return np.zeros(np.broadcast_shapes(a.shape, np.shape(rhs)), bool), np.zeros(())
    with np.errstate(all="ignore"):
        q = round_to(a.astype(np.float64) / np.asarray(rhs, np.float64), a.dtype)
    q64 = np.asarray(q, np.float64)
    tiny = float(ml_dtypes.finfo(a.dtype).smallest_normal)
    return (q64 != 0) & (np.abs(q64) < tiny), np.copysign(0.0, q64)


def _ftz_floor_div(lhs: Array, rhs: Array) -> Array:
    """floor_div whose float quotient was flushed when subnormal: ``floor(+-0) = +-0``
    where the reference gives -1 or 0 (FTZ inside the op, NUM-11)."""
    out = np.asarray(_via_f64(np.floor_divide)(lhs, rhs))
    sub, zero = _subnormal_quotient(lhs, rhs)
    return np.where(sub, zero, out).astype(out.dtype) if sub.any() else out


def _ftz_mod(lhs: Array, rhs: Array) -> Array:
    """mod as ``lhs - rhs * floor(q)`` with a subnormal float quotient ``q`` flushed:
    ``lhs`` there (FTZ inside the op, NUM-11)."""
    out = np.asarray(_via_f64(np.mod)(lhs, rhs))
    sub, _ = _subnormal_quotient(lhs, rhs)
    if not sub.any():
        return out
    return np.where(sub, np.broadcast_to(np.asarray(lhs), out.shape), out).astype(out.dtype)


# -- binary arithmetic --------------------------------------------------------------------
def _int_zero_divisor(lhs: Array, rhs: Array) -> Array:
    """Integer division/modulo by zero gives an unspecified value (NUM-3)."""
    if np.dtype(lhs.dtype).kind in "iu":
        return np.asarray(rhs) == 0
    return np.zeros(np.shape(lhs), bool)


def _pow(base: Array, exp: Array) -> Array:
    """Float: C ``pow`` (NUM-7). Integer: wraps; negative exponents truncate (NUM-6)."""
    if np.dtype(base.dtype).kind not in "iu":
        return np.power(base, exp)
    neg = exp < 0
    out = np.asarray(np.power(base, np.where(neg, 0, exp).astype(base.dtype)))
    if np.any(neg):
        one, zero = np.ones_like(out), np.zeros_like(out)
        odd = (exp % 2) == 1
        trunc = np.where(base == 1, one, np.where(base == -1, np.where(odd, -one, one), zero))
        out = np.where(neg, trunc, out).astype(base.dtype)
    return out


def _pow_unspecified(base: Array, exp: Array) -> Array:
    if np.dtype(base.dtype).kind in "iu":
        return (np.asarray(base) == 0) & (np.asarray(exp) < 0)
    return np.zeros(np.shape(base), bool)


def _signed_zero_extreme(pick: Callable[[Array, Array], Array], positive_wins: bool
                         ) -> Callable[[Array, Array], Array]:
    """numpy maximum/minimum, except that +0 and -0 are ordered -0 < +0 (NUM-8)."""

    def kernel(lhs: Array, rhs: Array) -> Array:
        out = pick(lhs, rhs)
        if np.dtype(out.dtype).kind in "fV":
            both_zero = (lhs == 0) & (rhs == 0)
            lhs_wins = np.signbit(rhs) if positive_wins else np.signbit(lhs)
            out = np.where(both_zero, np.where(lhs_wins, lhs, rhs), out)
        return out

    return kernel


_max = _signed_zero_extreme(np.maximum, positive_wins=True)  # NaN propagates; +0 > -0
_min = _signed_zero_extreme(np.minimum, positive_wins=False)  # NaN propagates; -0 < +0


_divisor = _binary_sampler(("any",), ("any", "nonzero", "nonzero"))
_binary("add", np.add, NUMERIC, "Elementwise sum; integers wrap around (NUM-2).",
        variants={"int-saturation": _saturating(np.add), "fma": _add_fused})
_binary("sub", np.subtract, NUMERIC, "Elementwise difference; integers wrap around (NUM-2).",
        variants={"int-saturation": _saturating(np.subtract), "fma": _sub_fused})
_binary("mul", np.multiply, NUMERIC, "Elementwise product; integers wrap around (NUM-2).",
        traits=frozenset({"product"}), variants={"int-saturation": _saturating(np.multiply)})
_binary("div", np.divide, FLOATS, "IEEE true division (floats only; use floor_div for ints).")
_binary("floor_div", _via_f64(np.floor_divide), NUMERIC,
        "Division rounded toward -inf, as Python's // (NUM-3).", unspecified=_int_zero_divisor,
        sample=_divisor, variants={"rounding-mode": _trunc_div, "ftz": _ftz_floor_div})
_binary("mod", _via_f64(np.mod), NUMERIC,
        "Remainder with the sign of the divisor, as Python's % (NUM-3).",
        unspecified=_int_zero_divisor, sample=_divisor,
        variants={"rounding-mode": _trunc_mod, "ftz": _ftz_mod})
_binary("pow", _via_f64(_pow), NUMERIC, "Elementwise power (integer negative exponents: NUM-6).",
        tolerance=ulp(2), unspecified=_pow_unspecified,
        sample=_binary_sampler(("any", "small"), ("small", "small", "any")))
_binary("max", _max, NUMERIC | BOOL, "Elementwise maximum; NaN propagates (NUM-8).",
        variants={"nan-dropped": _nan_dropped(_max)})
_binary("min", _min, NUMERIC | BOOL, "Elementwise minimum; NaN propagates (NUM-8).",
        variants={"nan-dropped": _nan_dropped(_min)})

# -- comparisons (IEEE: every comparison with NaN is False except not_equal, NUM-1) ------
_binary("equal", np.equal, ALL, "Elementwise ==, bool result.", predicate)
_binary("not_equal", np.not_equal, ALL, "Elementwise !=, bool result.", predicate)
_binary("greater", np.greater, NUMERIC | BOOL, "Elementwise >, bool result.", predicate)
_binary("greater_equal", np.greater_equal, NUMERIC | BOOL, "Elementwise >=, bool result.",
        predicate)

# -- logic (bool only) --------------------------------------------------------------------
_binary("logical_and", np.logical_and, BOOL, "Elementwise AND of bools.")
_binary("logical_or", np.logical_or, BOOL, "Elementwise OR of bools.")
_binary("logical_xor", np.logical_xor, BOOL, "Elementwise XOR of bools.")
_unary("logical_not", np.logical_not, BOOL, "Elementwise NOT of bools.")

# -- unary arithmetic and math (float64 formulas, NUM-7) ----------------------------------
_erf = np.frompyfunc(math.erf, 1, 1)


def _erf_kernel(x: Array) -> Array:
    return np.asarray(_erf(x), dtype=np.float64)


#: gelu's forms: x * Phi(x) (erfc form, no cancellation for x << 0), the tanh form and the
#: quick form x * sigmoid(1.702 x), both as x * sigmoid(t) with t in double-double
_GELU_FORMS = {"none": accurate.gelu_erfc, "tanh": accurate.gelu_tanh,
               "quick": accurate.gelu_quick}


def _gelu(x: Array, approximate: str) -> Array:
    return _GELU_FORMS[approximate](x)


def _gelu_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    if attrs.get("approximate") not in _GELU_FORMS:
        op.fail(types, "gelu.C1", f"attribute approximate={attrs.get('approximate')!r}; "
                "expected 'none', 'tanh' or 'quick'")
    return elementwise(op, types, attrs)


def _sample_gelu(src: ArgSource, dtypes: frozenset[DType]) -> OpCall:
    dtype = src.dtype(_sorted(dtypes), data=True)
    return OpCall([src.values(dtype, src.shape())],
                  {"approximate": src.choice(list(_GELU_FORMS))})


def _relu(x: Array) -> Array:
    """``x > 0 ? x : +0`` (a NaN compares false: +0, as MAX's ReluOp)."""
    return np.where(x > 0, x, np.zeros((), x.dtype))


def _rsqrt(x: Array) -> Array:
    return 1 / np.sqrt(x)


_positive = _unary_sampler(("any", "positive"))
_unary("negate", np.negative, SIGNED_NUMERIC, "Elementwise -x; integers wrap around.",
       variants={"int-saturation": _saturating(np.negative)})
_unary("abs", np.abs, NUMERIC, "Elementwise |x|; the most negative integer maps to itself.",
       variants={"int-saturation": _saturating(np.abs)})
_unary("exp", _via_f64(np.exp), FLOATS, "e**x.", tolerance=ulp(2))
_unary("log", _via_f64(np.log), FLOATS, "Natural logarithm; log(0) = -inf, log(x<0) = NaN.",
       tolerance=ulp(2), sample=_positive)
_unary("log1p", _via_f64(np.log1p), FLOATS, "log(1 + x), accurate near 0.", tolerance=ulp(2),
       sample=_positive)
_unary("sqrt", _via_f64(np.sqrt), FLOATS, "Correctly rounded square root; sqrt(-0) = -0.",
       sample=_positive)
_unary("rsqrt", _via_f64(_rsqrt), FLOATS, "1 / sqrt(x).", tolerance=ulp(2), sample=_positive)
_unary("tanh", _via_f64(np.tanh), FLOATS, "Hyperbolic tangent.", tolerance=ulp(2))
_unary("sin", _via_f64(np.sin), FLOATS, "Sine (radians).", tolerance=ulp(2))
_unary("cos", _via_f64(np.cos), FLOATS, "Cosine (radians).", tolerance=ulp(2))
_unary("erf", _via_f64(_erf_kernel), FLOATS, "Gauss error function.", tolerance=ulp(2))
_unary("sigmoid", _via_f64(accurate.sigmoid), FLOATS, "1 / (1 + exp(-x)).", tolerance=ulp(4))
_unary("silu", _via_f64(accurate.silu), FLOATS, "x * sigmoid(x).", tolerance=ulp(4))
_unary("gelu", _via_f64(_gelu), FLOATS, "Gaussian error linear unit (erf, tanh or quick form).",
       infer=_gelu_infer, tolerance=ulp(4), attrs=("approximate",), sample=_sample_gelu)
_unary("floor", np.floor, FLOATS, "Round toward -inf.")
_unary("ceil", np.ceil, FLOATS, "Round toward +inf.")
_unary("round", np.rint, FLOATS, "Round to nearest integer, ties to even.",
       sample=_unary_sampler(("any", "halfway")), variants={"rounding-mode": _half_away})
_unary("trunc", np.trunc, FLOATS, "Round toward zero.")
_unary("is_nan", np.isnan, FLOATS, "True where x is NaN.", infer=predicate)
_unary("is_inf", np.isinf, FLOATS, "True where x is +inf or -inf.", infer=predicate)

# -- issue 19: activations --
_unary("relu", _relu, FLOATS, "x where x > 0, else +0 (NaN and -0 give +0, as MAX).")
_unary("atanh", _via_f64(np.arctanh), FLOATS, "Inverse hyperbolic tangent; atanh(+-1) = +-inf.",
       tolerance=ulp(2), sample=_unary_sampler(("any", "small", "small")))


# -- cast ---------------------------------------------------------------------------------
def _cast(x: Array, dtype: DType) -> Array:
    """Round to nearest even between floats, truncate float -> int, x != 0 to bool (NUM-4)."""
    return round_to(x, dtype.to_numpy())


def _cast_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    dtype = attrs.get("dtype")
    if not isinstance(dtype, DType):
        op.fail(types, "cast.C1", f"attribute dtype must be a DType, got {dtype!r}")
    return (t.with_(dtype=dtype),)


def _cast_unspecified(x: Array, dtype: DType) -> Array:
    """NaN, inf and floats whose truncation is out of range of an integer dtype (NUM-4)."""
    if np.dtype(x.dtype).kind not in "fV" or not dtype.is_integral():
        return np.zeros(np.shape(x), bool)
    info = np.iinfo(dtype.to_numpy())
    t = np.trunc(np.asarray(x, dtype=np.float64))
    return ~np.isfinite(t) | (t < float(info.min)) | (t >= float(info.max) + 1.0)


def _cast_via_float32(x: Array, dtype: DType) -> Array:
    """The conversion rounded through float32 first (double rounding, NUM-4)."""
    return np.asarray(x).astype(np.float32).astype(dtype.to_numpy())


def _sample_cast(src: ArgSource, dtypes: frozenset[DType]) -> OpCall:
    """Half the draws are ``"edges:<target>"``: the target's boundaries, ties and specials
    (NUM-20), so unsigned targets meet values >= 2**(bits-1) and every target its max."""
    dtype = src.dtype(_sorted(dtypes), data=True)
    target = src.dtype(_sorted(ALL))
    kind = src.choice(["any", "finite", "small", f"edges:{target.value}",
                       f"edges:{target.value}", f"edges:{target.value}"])
    return OpCall([src.values(dtype, src.shape(), kind)], {"dtype": target})


register(OpDef("cast", summary="Convert each element to another dtype (round to nearest even).",
               category="elementwise-unary", operands=("x",), attrs=("dtype",), infer=_cast_infer,
               kernel=_cast, dtypes=ALL, tolerance=EXACT, unspecified=_cast_unspecified,
               sample=_bind(_sample_cast, ALL),
               traits=frozenset({"lowering-cast", "fusable", "conversion"}),
               variants={"double-rounding": _cast_via_float32}))
