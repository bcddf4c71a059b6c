"""The one C emitter: what each elementwise op computes, as one C expression in two dialects.

``ENTRIES`` has one entry per op the backends fuse (the registry's ``fusable`` ops):
``expression(dialect, node, args)`` writes the op's C expression over the C expressions
``args`` of its operands, for

- ``HOST``: C11 for the compiling executor's native tier (``compiling_native``), compiled
  by the system ``cc``; it has no libm (so gcc vectorizes the loop): besides C operators
  it knows only the instructions ``fabs``/``sqrt`` and ``HOST_PRELUDE``'s own ``exp``,
  and no float16, so an entry that needs anything else is outside the tier (None);
- ``CUDA``: device code for the GPU executor (``cuda_codegen``), compiled by NVRTC; every
  GPU dtype, libm and ``CUDA_PREAMBLE``'s helpers. A float16 value is held in a ``float``
  that is always exactly a float16 value (rounded back after every op).

The dialects differ only in spelling: a dialect's C type of ``bool``, its bit casts, which
functions it has and how it names them. Every rule is written once, here (spec/numerics.md):
integer +, -, *, negate and abs wrap in the unsigned type of the width (NUM-2, no signed
overflow); float arithmetic rounds to the dtype after every op; transcendentals and the
float ``floor_div``/``mod``/``pow`` are computed in double and rounded once (the registry's
``_via_f64``); max/min propagate NaN as numpy does and order -0 < +0 (NUM-8); casts follow
NUM-4. An entry may also carry the op's byte-exact numpy ``out=`` form for the compiling
executor's numpy tier (``numpy_out``), where the registry kernel is not a ufunc.

Adding an elementwise op to both backends is one entry here; ``python -m tools.golden
--update`` then writes its golden sources for review.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from interpreter.dtype import DType
from interpreter.graph.core import Node

from .c_preludes import CUDA_PREAMBLE, HOST_PRELUDE

__all__ = ["CTYPE", "CUDA", "ENTRIES", "FLOATS", "HOST", "RANDOM", "SIGNED", "Call", "Dialect",
           "Entry", "Unsupported", "cast_expr", "expression", "numpy_out", "round_double",
           "round_float", "wide"]

#: C type a value of each dtype is computed in (float16: a ``float`` holding it exactly;
#: ``bool``: the dialect's ``bool_type``).
CTYPE: dict[DType, str] = {
    DType.bool: "bool", DType.int8: "signed char", DType.int16: "short", DType.int32: "int",
    DType.int64: "long long", DType.uint8: "unsigned char", DType.uint16: "unsigned short",
    DType.uint32: "unsigned int", DType.uint64: "unsigned long long", DType.float16: "float",
    DType.float32: "float", DType.float64: "double"}
FLOATS = frozenset({DType.float16, DType.float32, DType.float64})
SIGNED = frozenset({DType.int8, DType.int16, DType.int32, DType.int64})


class Unsupported(Exception):
    """Raised inside an entry when its dialect cannot express it (the caller gets None)."""


@dataclass(frozen=True)
class Dialect:
    """How one C-family target spells what the entries say."""

    name: str
    #: dtypes it computes
    dtypes: frozenset[DType]
    #: C type of a bool value
    bool_type: str
    #: float bit casts by compute type: (to unsigned bits, from bits)
    bit_casts: Mapping[DType, tuple[str, str]]
    #: C functions it has (libm or its prelude's): the name an entry writes -> its spelling;
    #: None: every name as written
    functions: Mapping[str, str] | None
    #: ``(function, dtype) -> spelling`` of a function computed in the dtype itself that
    #: equals the function computed in double and rounded once to the dtype
    direct: Mapping[tuple[str, DType], str]
    #: C text before the kernels (helper functions)
    prelude: str

    def ctype(self, d: DType) -> str:
        """The C type a value of ``d`` is computed in."""
        return self.bool_type if d is DType.bool else CTYPE[d]

    def call(self, fn: str, *args: str) -> str:
        """``fn(args)``, spelled for this dialect; ``Unsupported`` when it lacks ``fn``."""
        spelled = fn if self.functions is None else self.functions.get(fn)
        if spelled is None:
            raise Unsupported(fn)
        return f"{spelled}({', '.join(args)})"

    def rounded(self, fn: str, d: DType, *args: str) -> str:
        """``fn`` of the ``args`` evaluated in double and rounded once to float dtype ``d``
        (the registry's ``_via_f64``)."""
        direct = self.direct.get((fn, d))
        if direct is not None:
            return f"{direct}({', '.join(args)})"
        return round_double(d, self.call(fn, *(f"(double){a}" for a in args)))

    def bits(self, d: DType) -> tuple[str, str]:
        """The bit casts of float dtype ``d``'s compute type."""
        return self.bit_casts[DType.float64 if d is DType.float64 else DType.float32]


HOST = Dialect(
    "host", frozenset(CTYPE) - {DType.float16}, "unsigned char",
    {DType.float32: ("ec_bits32", "ec_from32"), DType.float64: ("ec_bits", "ec_from")},
    {"fabsf": "__builtin_fabsf", "fabs": "__builtin_fabs"},
    {("exp", DType.float32): "ec_expf", ("exp", DType.float64): "ec_exp",
     ("sqrt", DType.float32): "__builtin_sqrtf", ("sqrt", DType.float64): "__builtin_sqrt"},
    HOST_PRELUDE)
CUDA = Dialect(
    "cuda", frozenset(CTYPE), "bool",
    {DType.float32: ("__float_as_uint", "__uint_as_float"),
     DType.float64: ("__double_as_longlong", "__longlong_as_double")},
    None, {}, CUDA_PREAMBLE)


# -- rules shared by the entries -------------------------------------------------------------
def wide(d: DType) -> str:
    """The unsigned type integer arithmetic of ``d`` wraps in (no UB, NUM-2)."""
    return "unsigned long long" if d.size_in_bytes == 8 else "unsigned int"


def round_float(d: DType, expr: str) -> str:
    """A float-typed (compute type) expression rounded to float dtype ``d``."""
    return f"ec_rh({expr})" if d is DType.float16 else expr


def round_double(d: DType, expr: str) -> str:
    """A double expression rounded once to float dtype ``d`` (float16: ``ec_dh``, through
    float rounded to odd)."""
    if d is DType.float16:
        return f"ec_dh({expr})"
    if d is DType.float32:
        return f"(float)({expr})"
    return f"({expr})"


def cast_expr(dialect: Dialect, src: DType, dst: DType, x: str) -> str:
    """``x`` (compute type of ``src``) converted to ``dst`` (NUM-4)."""
    if dst is DType.bool:
        return f"({x} != 0)"
    if src is DType.bool:
        return f"({x} ? ({dialect.ctype(dst)})1 : ({dialect.ctype(dst)})0)"
    if dst is DType.float16:
        if src is DType.float64:
            return f"ec_dh({x})"
        if src is DType.float16:
            return x
        # float and every integer: (float) is exact below 2^24, and anything larger is
        # beyond float16's range either way, so this rounds once
        return f"ec_rh((float){x})"
    if src == dst:
        return x
    return f"({dialect.ctype(dst)}){x}"


@dataclass(frozen=True)
class Call:
    """One use of an op, what its entry reads: the dialect, the data operand's dtype ``d``,
    the result dtype ``r``, the operands' C expressions ``args`` and the node's attributes."""

    dialect: Dialect
    d: DType
    r: DType
    args: list[str]
    attrs: Mapping[str, Any]


Emit = Callable[[Call], str]


def _arith(sym: str) -> Emit:
    """+, -, *: floats in the dtype, integers wrapping (NUM-2)."""
    def emit(c: Call) -> str:
        if c.d in FLOATS:
            return round_float(c.d, f"{c.args[0]} {sym} {c.args[1]}")
        u = wide(c.d)
        return f"({c.dialect.ctype(c.d)})(({u}){c.args[0]} {sym} ({u}){c.args[1]})"

    return emit


def _int_helper(c: Call, signed: str, unsigned: str) -> str:
    """An integer helper of the preamble (in long long or unsigned long long), cast back."""
    fn, t = (signed, "long long") if c.d in SIGNED else (unsigned, "unsigned long long")
    return f"({c.dialect.ctype(c.d)})" + c.dialect.call(fn, *(f"({t}){x}" for x in c.args))


def _divlike(fn: str, float_fn: str) -> Emit:
    """floor_div / mod: Python's semantics (NUM-3): floats in double, integers by a helper
    (a zero divisor gives 0)."""
    def emit(c: Call) -> str:
        if c.d in FLOATS:
            return c.dialect.rounded(float_fn, c.d, *c.args)
        return _int_helper(c, f"ec_{fn}_s", f"ec_{fn}_u")

    return emit


def _pow(c: Call) -> str:
    """Floats: C ``pow`` in double (NUM-7); integers wrap, negative exponents truncate (NUM-6)."""
    if c.d in FLOATS:
        return c.dialect.rounded("pow", c.d, *c.args)
    return _int_helper(c, "ec_ipow_s", "ec_ipow")


def _extreme(gt: str, combine: str) -> Emit:
    """NUM-8: numpy's NaN propagation (a NaN ``a`` wins; else ``b`` unless ``a`` wins the
    comparison); equal operands (both zeros, or equal bits) combine their bits: max clears a
    differing sign bit (+0 wins, ``&``), min sets it (-0 wins, ``|``). Non-short-circuit
    conditions, so gcc vectorizes it."""
    def emit(c: Call) -> str:
        a, b = c.args
        if c.d not in FLOATS:
            return f"({a} {gt} {b} ? {a} : {b})"
        to, frm = c.dialect.bits(c.d)
        return (f"({a} == {b} ? {frm}({to}({a}) {combine} {to}({b})) : "
                f"((({a} {gt} {b}) | ({a} != {a})) ? {a} : {b}))")

    return emit


def _infix(sym: str) -> Emit:
    """A comparison or bool operator: 0 or 1."""
    return lambda c: f"({c.args[0]} {sym} {c.args[1]})"


def _negate(c: Call) -> str:
    if c.d in FLOATS:
        return f"(-{c.args[0]})"
    u = wide(c.d)
    return f"({c.dialect.ctype(c.d)})(({u})0 - ({u}){c.args[0]})"


def _abs(c: Call) -> str:
    if c.d in FLOATS:
        return c.dialect.call("fabs" if c.d is DType.float64 else "fabsf", c.args[0])
    if c.d in SIGNED:  # the most negative integer maps to itself
        u, x = wide(c.d), c.args[0]
        return f"({c.dialect.ctype(c.d)})({x} < 0 ? ({u})0 - ({u}){x} : ({u}){x})"
    return c.args[0]


def _via_double(fn: str) -> Emit:
    """A float function evaluated in double and rounded once (NUM-7)."""
    return lambda c: c.dialect.rounded(fn, c.d, *c.args)


def _exact(fn: str) -> Emit:
    """floor/ceil/rint/trunc: exact in the dtype (a float16 value's floor is a float16)."""
    return lambda c: c.dialect.call(fn if c.d is DType.float64 else f"{fn}f", c.args[0])


def _rsqrt(c: Call) -> str:
    return round_double(c.d, "1.0 / " + c.dialect.call("sqrt", f"(double){c.args[0]}"))


#: gelu's ``approximate`` forms -> the preamble's double function
_GELU = {"none": "ec_gelu", "tanh": "ec_gelu_tanh", "quick": "ec_gelu_quick"}


def _gelu(c: Call) -> str:
    return c.dialect.rounded(_GELU[c.attrs.get("approximate", "none")], c.d, c.args[0])


def _relu(c: Call) -> str:
    """``x > 0 ? x : +0``: NaN and -0 give +0 (MAX's ReluOp)."""
    x = c.args[0]
    return f"({x} > 0 ? {x} : ({c.dialect.ctype(c.d)})0)"


# -- numpy out= forms (the numpy tier) ----------------------------------------------------------
_UINT: dict[int, Any] = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _bits(dtype: np.dtype[Any]) -> Any:
    """The unsigned integer type of ``dtype``'s width (for bit views)."""
    return _UINT[dtype.itemsize]


def _select_into(cond: Any, x: Any, y: Any, out: np.ndarray) -> np.ndarray:
    """``where(cond, x, y)`` into ``out`` as a branch-free bit select (byte-exact: NaN
    payloads and -0 kept; 7x faster than ``np.where`` on random conditions)."""
    u = _bits(out.dtype)
    mask = np.asarray(cond).astype(u)
    np.negative(mask, out=mask)  # True -> all ones
    ou, yu = out.view(u), np.asarray(y).view(u)
    np.bitwise_xor(np.asarray(x).view(u), yu, out=ou)
    np.bitwise_and(ou, mask, out=ou)
    np.bitwise_xor(ou, yu, out=ou)
    return out


def _extreme_into(pick: np.ufunc, positive_wins: bool) -> Callable[..., np.ndarray]:
    """NUM-8 max/min into ``out``: numpy's maximum/minimum (NaN propagates), then the sign
    bit of a pair of differently signed operands is cleared (max) or set (min). That only
    changes the result where both are zeros (a NaN result may change sign: NaN matches any
    NaN); the C form above combines the bits of equal operands to the same effect."""

    def kernel(x: Any, y: Any, out: np.ndarray) -> np.ndarray:
        pick(x, y, out=out)
        if out.dtype.kind in "fV":
            u = _bits(out.dtype)
            sign = u(1 << (8 * out.dtype.itemsize - 1))
            d = np.empty(out.shape, u)  # an array also for rank 0 (ufuncs return scalars)
            np.bitwise_xor(np.asarray(x).view(u), np.asarray(y).view(u), out=d)
            np.bitwise_and(d, sign, out=d)
            ou = out.view(u)
            if positive_wins:
                np.invert(d, out=d)
                np.bitwise_and(ou, d, out=ou)
            else:
                np.bitwise_or(ou, d, out=ou)
        return out

    return kernel


# -- the entries -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """One op: its C expression (``expr``) and, where its registry kernel is not a numpy ufunc,
    a byte-exact ``numpy_out(*operands, out)`` for the numpy tier (COMP-6)."""

    expr: Emit
    numpy_out: Callable[..., np.ndarray] | None = field(default=None)


ENTRIES: dict[str, Entry] = {
    "add": Entry(_arith("+")), "sub": Entry(_arith("-")), "mul": Entry(_arith("*")),
    "div": Entry(lambda c: round_float(c.d, f"{c.args[0]} / {c.args[1]}")),
    "floor_div": Entry(_divlike("floordiv", "ec_floordiv")),
    "mod": Entry(_divlike("mod", "ec_fmodpy")), "pow": Entry(_pow),
    "max": Entry(_extreme(">", "&"), _extreme_into(np.maximum, True)),
    "min": Entry(_extreme("<", "|"), _extreme_into(np.minimum, False)),
    "equal": Entry(_infix("==")), "not_equal": Entry(_infix("!=")),
    "greater": Entry(_infix(">")), "greater_equal": Entry(_infix(">=")),
    "logical_and": Entry(_infix("&&")), "logical_or": Entry(_infix("||")),
    "logical_xor": Entry(_infix("!=")), "logical_not": Entry(lambda c: f"(!{c.args[0]})"),
    "negate": Entry(_negate), "abs": Entry(_abs),
    "exp": Entry(_via_double("exp")), "log": Entry(_via_double("log")),
    "log1p": Entry(_via_double("log1p")), "sqrt": Entry(_via_double("sqrt")),
    "rsqrt": Entry(_rsqrt), "tanh": Entry(_via_double("tanh")),
    "sin": Entry(_via_double("sin")), "cos": Entry(_via_double("cos")),
    "erf": Entry(_via_double("erf")), "sigmoid": Entry(_via_double("ec_sigmoid")),
    "silu": Entry(_via_double("ec_silu")), "gelu": Entry(_gelu),
    "floor": Entry(_exact("floor")), "ceil": Entry(_exact("ceil")),
    "round": Entry(_exact("rint")), "trunc": Entry(_exact("trunc")),
    "is_nan": Entry(lambda c: c.dialect.call("isnan", c.args[0])),
    "is_inf": Entry(lambda c: c.dialect.call("isinf", c.args[0])),
    "cast": Entry(lambda c: cast_expr(c.dialect, c.d, c.r, c.args[0])),
    "select": Entry(lambda c: f"({c.args[0]} ? {c.args[1]} : {c.args[2]})", _select_into),
    "broadcast_to": Entry(lambda c: c.args[0]),
    # issue 19
    "relu": Entry(_relu), "atanh": Entry(_via_double("atanh")),
}


def expression(dialect: Dialect, node: Node, args: list[str]) -> str | None:
    """The C expression of ``node`` (one result) over its operands' expressions ``args`` in
    ``dialect``, or None when the op or one of its dtypes is outside the dialect."""
    entry = ENTRIES.get(node.op.name)
    if entry is None or any(v.type.dtype not in dialect.dtypes
                            for v in (*node.operands, *node.results)):
        return None
    data = node.op.data_operand
    r = node.results[0].type.dtype
    d = node.operands[data].type.dtype if data is not None and node.operands else r
    try:
        return entry.expr(Call(dialect, d, r, args, node.attrs))
    except Unsupported:
        return None


def numpy_out(op_name: str) -> Callable[..., np.ndarray] | None:
    """The op's byte-exact numpy ``out=`` form, if its entry has one."""
    entry = ENTRIES.get(op_name)
    return None if entry is None else entry.numpy_out


# -- random kernels (CUDA only; spec/random.md, GPU-16) -----------------------------------------
def _uniform(dtype: DType) -> tuple[str, list[str]]:
    """RNG-3/4: ``low + (high - low) * u`` rounded once; ``below`` (the largest value
    < high) where that rounds up to ``high``."""
    lines = []
    if dtype is DType.float64:
        lines.append("double u = (double)(((unsigned long long)(w0 >> 5) << 26)"
                     " + (unsigned long long)(w1 >> 6)) * 1.1102230246251565e-16;")
    else:
        lines.append("double u = (double)(w0 >> 8) * 5.9604644775390625e-08;")
    ct = CUDA.ctype(dtype)
    lines += ["double r = low + (high - low) * u;", f"{ct} v = {round_double(dtype, 'r')};",
              f"if ((double)v >= high) v = ({ct})below;"]
    return "raw uint64 seed, float64 low, float64 high, float64 below", lines


def _normal(dtype: DType) -> tuple[str, list[str]]:
    """RNG-5: Box-Muller in double, ``mu + sd * z`` rounded once."""
    return "raw uint64 seed, float64 mu, float64 sd", [
        "double u1 = (double)((w0 >> 8) + 1u) * 5.9604644775390625e-08;",
        "double u2 = (double)(w1 >> 8) * 5.9604644775390625e-08;",
        "double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);",
        f"{CUDA.ctype(dtype)} v = {round_double(dtype, 'mu + sd * z')};"]


#: random op -> (CuPy parameters, the lines computing ``v`` from Philox words ``w0, w1``)
RANDOM: dict[str, Callable[[DType], tuple[str, list[str]]]] = {
    "random_uniform": _uniform, "random_normal": _normal}
