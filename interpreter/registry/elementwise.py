"""Elementwise ops: binary arithmetic, comparisons, logic, unary math, cast (spec/ops/)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..dtype import DType
from ..types import ValueType
from .core import EXACT, Attrs, OpDef, Tolerance, register, ulp
from .dtypesets import ALL, BOOL, FLOATS, INTS, NUMERIC, SIGNED_NUMERIC
from .rules import elementwise, predicate

Array = Any  # numpy array or numpy scalar (rank-0 results)


def _via_f32(fn: Callable[[Array], Array]) -> Callable[[Array], Array]:
    """Evaluate ``fn`` in float32 for 16-bit floats, then round once to the input dtype."""

    def kernel(x: Array) -> Array:
        if x.dtype.itemsize < 4:
            return fn(x.astype(np.float32)).astype(x.dtype)
        return fn(x)

    kernel.__name__ = getattr(fn, "__name__", "kernel")
    return kernel


def _binary(name: str, kernel: Callable[..., Array], dtypes: frozenset[DType], summary: str,
            infer: Any = elementwise, tolerance: Tolerance = EXACT,
            unspecified: Any = None) -> None:
    register(OpDef(name, summary, "elementwise-binary", ("lhs", "rhs"), (), infer, kernel,
                   dtypes, tolerance, promote=(0, 1), broadcast=True, unspecified=unspecified))


def _unary(name: str, kernel: Callable[..., Array], dtypes: frozenset[DType], summary: str,
           infer: Any = elementwise, tolerance: Tolerance = EXACT,
           attrs: tuple[str, ...] = ()) -> None:
    register(OpDef(name, summary, "elementwise-unary", ("x",), attrs, infer, kernel, dtypes,
                   tolerance))


# -- binary arithmetic --------------------------------------------------------------------
def _int_zero_divisor(lhs: Array, rhs: Array) -> Array:
    """Integer division/modulo by zero gives an unspecified value (NUM-3)."""
    if np.dtype(lhs.dtype).kind in "iu":
        return np.asarray(rhs) == 0
    return np.zeros(np.shape(lhs), bool)


def _float_div(lhs: Array, rhs: Array) -> Array:
    return np.divide(lhs, rhs)


def _pow(base: Array, exp: Array) -> Array:
    """numpy power, plus the integer rule for negative exponents (NUM-6)."""
    if np.dtype(base.dtype).kind not in "iu":
        return np.power(base, exp)
    neg = exp < 0
    out = np.asarray(np.power(base, np.where(neg, 0, exp).astype(base.dtype)))
    if np.any(neg):
        one = np.ones_like(out)
        parity = (exp % 2 == 1)
        trunc = np.where(base == 1, one,
                         np.where(base == -1, np.where(parity, -one, one), np.zeros_like(out)))
        out = np.where(neg, trunc, out).astype(base.dtype)
    return out


def _pow_unspecified(base: Array, exp: Array) -> Array:
    if np.dtype(base.dtype).kind in "iu":
        return (np.asarray(base) == 0) & (np.asarray(exp) < 0)
    return np.zeros(np.shape(base), bool)


_binary("add", np.add, NUMERIC, "Elementwise sum; integers wrap around (NUM-2).")
_binary("sub", np.subtract, NUMERIC, "Elementwise difference; integers wrap around (NUM-2).")
_binary("mul", np.multiply, NUMERIC, "Elementwise product; integers wrap around (NUM-2).")
_binary("div", _float_div, FLOATS, "IEEE true division (floats only; use floor_div for ints).")
_binary("floor_div", np.floor_divide, NUMERIC,
        "Division rounded toward -inf, as Python's // (NUM-3).", unspecified=_int_zero_divisor)
_binary("mod", np.mod, NUMERIC,
        "Remainder with the sign of the divisor, as Python's % (NUM-3).",
        unspecified=_int_zero_divisor)
_binary("pow", _pow, NUMERIC, "Elementwise power (integer negative exponents: NUM-6).",
        tolerance=ulp(2), unspecified=_pow_unspecified)
_binary("max", np.maximum, NUMERIC | BOOL, "Elementwise maximum; NaN propagates.")
_binary("min", np.minimum, NUMERIC | BOOL, "Elementwise minimum; NaN propagates.")

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

# -- unary arithmetic and math ------------------------------------------------------------
_erf = np.frompyfunc(math.erf, 1, 1)


def _erf_kernel(x: Array) -> Array:
    return np.asarray(_erf(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)


def _sigmoid(x: Array) -> Array:
    return 1 / (1 + np.exp(-x))


def _silu(x: Array) -> Array:
    return x / (1 + np.exp(-x))


def _gelu(x: Array, approximate: str) -> Array:
    xd = x.astype(np.float64)
    if approximate == "tanh":
        y = 0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd**3)))
    else:
        y = 0.5 * xd * (1 + np.asarray(_erf(xd / math.sqrt(2)), dtype=np.float64))
    return y.astype(x.dtype)


def _gelu_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    if attrs.get("approximate") not in ("none", "tanh"):
        op.fail(types, "gelu.C1", f"attribute approximate={attrs.get('approximate')!r}; "
                "expected 'none' or 'tanh'")
    return elementwise(op, types, attrs)


def _rsqrt(x: Array) -> Array:
    return 1 / np.sqrt(x)


_unary("negate", np.negative, SIGNED_NUMERIC, "Elementwise -x; integers wrap around.")
_unary("abs", np.abs, NUMERIC, "Elementwise |x|; the most negative integer maps to itself.")
_unary("exp", _via_f32(np.exp), FLOATS, "e**x.", tolerance=ulp(2))
_unary("log", _via_f32(np.log), FLOATS, "Natural logarithm; log(0) = -inf, log(x<0) = NaN.",
       tolerance=ulp(2))
_unary("log1p", _via_f32(np.log1p), FLOATS, "log(1 + x), accurate near 0.", tolerance=ulp(2))
_unary("sqrt", np.sqrt, FLOATS, "Correctly rounded square root; sqrt(-0) = -0.")
_unary("rsqrt", _via_f32(_rsqrt), FLOATS, "1 / sqrt(x).", tolerance=ulp(2))
_unary("tanh", _via_f32(np.tanh), FLOATS, "Hyperbolic tangent.", tolerance=ulp(2))
_unary("sin", _via_f32(np.sin), FLOATS, "Sine (radians).", tolerance=ulp(2))
_unary("cos", _via_f32(np.cos), FLOATS, "Cosine (radians).", tolerance=ulp(2))
_unary("erf", _erf_kernel, FLOATS, "Gauss error function.", tolerance=ulp(2))
_unary("sigmoid", _via_f32(_sigmoid), FLOATS, "1 / (1 + exp(-x)).", tolerance=ulp(4))
_unary("silu", _via_f32(_silu), FLOATS, "x * sigmoid(x).", tolerance=ulp(4))
_unary("gelu", _gelu, FLOATS, "Gaussian error linear unit (exact or tanh approximation).",
       infer=_gelu_infer, tolerance=ulp(4), attrs=("approximate",))
_unary("floor", np.floor, FLOATS, "Round toward -inf.")
_unary("ceil", np.ceil, FLOATS, "Round toward +inf.")
_unary("round", np.rint, FLOATS, "Round to nearest integer, ties to even.")
_unary("trunc", np.trunc, FLOATS, "Round toward zero.")
_unary("is_nan", np.isnan, FLOATS, "True where x is NaN.", infer=predicate)
_unary("is_inf", np.isinf, FLOATS, "True where x is +inf or -inf.", infer=predicate)


# -- cast ---------------------------------------------------------------------------------
def _cast(x: Array, dtype: DType) -> Array:
    target = dtype.to_numpy()
    src = np.dtype(x.dtype)
    if target.kind == "b":
        return np.not_equal(x, 0)
    if src.kind in "biu" and target.kind == "V" or src.itemsize == 1 and src.kind == "V":
        return x.astype(np.float32).astype(target)  # float8 <-> int via float32 (exact)
    return x.astype(target)


def _cast_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    dtype = attrs.get("dtype")
    if not isinstance(dtype, DType):
        op.fail(types, "cast.C1", f"attribute dtype must be a DType, got {dtype!r}")
    return (t.with_(dtype=dtype),)


def _cast_unspecified(x: Array, dtype: DType) -> Array:
    """NaN, inf and out-of-range floats cast to an integer are unspecified (NUM-4)."""
    if np.dtype(x.dtype).kind not in "fV" or not dtype.is_integral():
        return np.zeros(np.shape(x), bool)
    info = np.iinfo(dtype.to_numpy())
    xf = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(xf) | (np.trunc(xf) < info.min) | (np.trunc(xf) > info.max)


register(OpDef("cast", "Convert each element to another dtype (round to nearest even).",
               "elementwise-unary", ("x",), ("dtype",), _cast_infer, _cast, ALL, EXACT,
               unspecified=_cast_unspecified))

__all__: list[str] = []
_ = INTS  # re-exported set used by spec tooling
