"""CUDA source for the GPU executor: one ``cupy.ElementwiseKernel`` per fused group (GPU-5..8).

Pure string generation (no CuPy import), so the sources are checked on machines without a
GPU against reviewed golden files (``tests/reference_executors/golden/cuda/``).

Representation: every value lives in a C variable of its *compute type*: the C type of its
dtype, except float16, which is held as a ``float`` that is always exactly a float16 value
(it is rounded back to float16 after every op: ``ec_rh``). float16 arrays cross the kernel
boundary as their raw ``uint16`` bits (CuPy's own float16 class is not used), converted by
the integer helpers ``ec_h2f``/``ec_f2h`` below. Kernels are compiled with ``--fmad=false``
(no contraction of a multiply and an add into an FMA).

Per-op numerics mirror the registry kernels (spec/numerics.md): float +, -, *, / in the
dtype (float16: in float, then rounded; float has 24 >= 2 * 11 + 2 bits, so the double
rounding is innocuous, exactly as numpy's float16 loops); transcendentals, ``floor_div``,
``mod`` and ``pow`` of floats in double and rounded once (the reference's ``_via_f64``),
double -> float16 through float rounded to odd (``ec_dh``, one rounding); integer +, -, *,
negate and pow wrap (unsigned arithmetic, no signed-overflow UB); integer division follows
Python's floor semantics, a zero divisor gives 0 (unspecified, NUM-3); max/min propagate
NaN and order -0 < +0 (NUM-8).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from interpreter.dtype import DType
from interpreter.graph.core import Graph, Node, Value

__all__ = ["CTYPE", "ELEMENTWISE_OPS", "GPU_DTYPES", "PARAM", "PREAMBLE", "KernelSource",
           "generate_group", "random_kernel"]

#: dtypes a GPU graph may use (bfloat16 and float8 have no CuPy dtype: refused, GPU-3).
GPU_DTYPES = frozenset({DType.bool, DType.int8, DType.int16, DType.int32, DType.int64,
                        DType.uint8, DType.uint16, DType.uint32, DType.uint64,
                        DType.float16, DType.float32, DType.float64})

#: C compute type of each dtype (float16 values are held in a float, exactly).
CTYPE = {DType.bool: "bool", DType.int8: "signed char", DType.int16: "short",
         DType.int32: "int", DType.int64: "long long", DType.uint8: "unsigned char",
         DType.uint16: "unsigned short", DType.uint32: "unsigned int",
         DType.uint64: "unsigned long long", DType.float16: "float", DType.float32: "float",
         DType.float64: "double"}

#: CuPy parameter type of each dtype (float16 crosses as its raw bits).
PARAM = {d: d.value for d in GPU_DTYPES} | {DType.float16: "uint16"}

_FLOATS = frozenset({DType.float16, DType.float32, DType.float64})
_SIGNED = frozenset({DType.int8, DType.int16, DType.int32, DType.int64})

#: Helpers every kernel gets (no #include: CuPy's NVRTC include paths do not matter).
PREAMBLE = r"""
// float16 bits -> float (exact)
__device__ __forceinline__ float ec_h2f(unsigned short h) {
  unsigned int sign = ((unsigned int)h & 0x8000u) << 16;
  unsigned int e = ((unsigned int)h >> 10) & 0x1fu, m = (unsigned int)h & 0x3ffu;
  if (e == 0u) {  // zero or subnormal: m * 2^-24, exact
    float v = (float)m * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (e == 31u) return __uint_as_float(sign | 0x7f800000u | (m << 13));
  return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
}
// float -> float16 bits, round to nearest even
__device__ __forceinline__ unsigned short ec_f2h(float f) {
  unsigned int x = __float_as_uint(f);
  unsigned int sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (unsigned short)(sign | 0x7e00u | ((ax >> 13) & 0x1ffu));
  if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);  // >= 65520: inf
  if (ax < 0x38800000u)  // below 2^-14: a multiple of 2^-24 (rintf: ties to even)
    return (unsigned short)(sign | (unsigned int)rintf(__uint_as_float(ax) * 16777216.0f));
  unsigned int r = ax + 0xfffu + ((ax >> 13) & 1u);  // round at bit 13, ties to even
  return (unsigned short)(sign | ((r - 0x38000000u) >> 13));
}
// float rounded to the nearest float16 value
__device__ __forceinline__ float ec_rh(float f) { return ec_h2f(ec_f2h(f)); }
// double rounded once to the nearest float16 value: via float rounded to odd
__device__ __forceinline__ float ec_dh(double d) {
  float f = __double2float_rz(d);
  if (f == f && (double)f != d) f = __uint_as_float(__float_as_uint(f) | 1u);
  return ec_rh(f);
}
// NUM-8: NaN propagates, -0 < +0
__device__ __forceinline__ double ec_max(double a, double b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a > b) return a;
  if (b > a) return b;
  return signbit(a) ? b : a;
}
__device__ __forceinline__ double ec_min(double a, double b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a < b) return a;
  if (b < a) return b;
  return signbit(a) ? a : b;
}
__device__ __forceinline__ float ec_maxf(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a > b) return a;
  if (b > a) return b;
  return signbit(a) ? b : a;
}
__device__ __forceinline__ float ec_minf(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a < b) return a;
  if (b < a) return b;
  return signbit(a) ? a : b;
}
// numpy's float divmod (npy_divmod): Python's // and %
__device__ __forceinline__ double ec_fmodpy(double a, double b) {
  double m = fmod(a, b);
  if (b == 0.0) return m;
  if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) m += b; }
  else m = copysign(0.0, b);
  return m;
}
__device__ __forceinline__ double ec_floordiv(double a, double b) {
  double m = fmod(a, b);
  if (b == 0.0) return a / b;
  double d = (a - m) / b;
  if (m != 0.0 && ((b < 0.0) != (m < 0.0))) d -= 1.0;
  if (d != 0.0) {
    double f = floor(d);
    if (d - f > 0.5) f += 1.0;
    return f;
  }
  return copysign(0.0, a / b);
}
// integers: Python floor semantics; a zero divisor gives 0 (unspecified, NUM-3)
__device__ __forceinline__ long long ec_floordiv_s(long long a, long long b) {
  if (b == 0) return 0;
  if (b == -1) return (long long)(0ull - (unsigned long long)a);  // wraps
  long long q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}
__device__ __forceinline__ long long ec_mod_s(long long a, long long b) {
  if (b == 0 || b == -1) return 0;
  long long r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
__device__ __forceinline__ unsigned long long ec_floordiv_u(unsigned long long a,
                                                            unsigned long long b) {
  return b == 0 ? 0 : a / b;
}
__device__ __forceinline__ unsigned long long ec_mod_u(unsigned long long a,
                                                       unsigned long long b) {
  return b == 0 ? 0 : a % b;
}
// integer power, wrapping; negative exponents truncate (NUM-6)
__device__ __forceinline__ unsigned long long ec_ipow(unsigned long long base,
                                                      unsigned long long e) {
  unsigned long long r = 1;
  while (e) { if (e & 1ull) r *= base; base *= base; e >>= 1; }
  return r;
}
__device__ __forceinline__ long long ec_ipow_s(long long base, long long e) {
  if (e < 0) return base == 1 ? 1 : (base == -1 ? ((e & 1) ? -1 : 1) : 0);
  return (long long)ec_ipow((unsigned long long)base, (unsigned long long)e);
}
// sigmoid, silu and gelu as the reference (interpreter/registry/accurate.py, NUM-16):
// no overflow of exp(-t), no subnormal exp(t) under a normal result, double-double
// arguments where exp or erfc amplifies their rounding; limit -0.0 at -inf (NUM-7)
__device__ __forceinline__ double ec_x_sigmoid(double x, double t, double t_lo) {
  if (t >= 0.0) return x / (1.0 + exp(-t) * (1.0 - t_lo));
  double xl = x * (1.0 + t_lo);
  if (t < -708.0) { double h = exp(t / 2.0); return (xl * h) * h; }
  double e = exp(t);
  return (xl * e) / (1.0 + e);
}
__device__ __forceinline__ double ec_sigmoid(double x) {
  double e = exp(x);
  return x >= 0.0 ? 1.0 / (1.0 + exp(-x)) : e / (1.0 + e);
}
__device__ __forceinline__ double ec_silu(double x) {
  return (isinf(x) && x < 0.0) ? -0.0 : ec_x_sigmoid(x, x, 0.0);
}
__device__ __forceinline__ double ec_gelu(double x) {
  if (isinf(x) && x < 0.0) return -0.0;
  double xc = isnan(x) ? x : fmin(fmax(x, -64.0), 64.0);
  if (x < -14.0) {  // Mills-ratio series, x*x = sq + sq_lo
    double sq = xc * xc, sq_lo = fma(xc, xc, -sq), r = 1.0 / sq, term = 1.0, tail = 0.0;
    for (int n = 1; n < 16; ++n) { term = -term * (2 * n - 1) * r; tail = tail + term; }
    tail = tail - sq_lo / 2.0;
    double c = 0.3989422804014327 + (0.3989422804014327 * tail + -2.49232720227773e-17);
    return -c * exp(-sq / 2.0);
  }
  double z = -xc * 0.7071067811865476;  // z + z_lo = -x / sqrt(2)
  double z_lo = fma(-xc, 0.7071067811865476, -z) - xc * -4.833646656726457e-17;
  return 0.5 * x * (erfc(z) - z_lo * 1.1283791670955126 * exp(-z * z));
}
__device__ __forceinline__ double ec_gelu_tanh(double x) {
  if (isinf(x) && x < 0.0) return -0.0;
  double xc = isnan(x) ? x : fmin(fmax(x, -64.0), 64.0);
  double p = xc * xc, e = fma(xc, xc, -p), q = xc * p, f = fma(xc, p, -q);
  double cube_lo = f + xc * e;  // x**3 = q + cube_lo
  double a = 0.07135481627260025 * q;
  double a_lo = fma(0.07135481627260025, q, -a) + 0.07135481627260025 * cube_lo
                + -6.175149918155315e-19 * q;
  double b = 1.5957691216057308 * xc;
  double b_lo = fma(1.5957691216057308, xc, -b) + -9.96930880911092e-17 * xc;
  double t = a + b, bb = t - a;  // 2u = t + t_lo
  double t_lo = (a - (t - bb)) + (b - bb) + a_lo + b_lo;
  return ec_x_sigmoid(x, t, t_lo);
}
"""

#: kernel compile options: no FMA contraction (GPU-6).
OPTIONS = ("--fmad=false",)


@dataclass(frozen=True)
class KernelSource:
    """What ``cupy.ElementwiseKernel(in_params, out_params, operation, name, ...)`` takes."""

    name: str
    in_params: str
    out_params: str
    operation: str
    preamble: str = PREAMBLE
    options: tuple[str, ...] = OPTIONS

    def text(self) -> str:
        """The kernel as one reviewable text (golden files; the preamble is shared)."""
        return (f"// kernel {self.name}\n// in:  {self.in_params}\n"
                f"// out: {self.out_params}\n// options: {' '.join(self.options)}\n"
                f"{self.operation}")


def _name(prefix: str, *parts: str) -> str:
    return f"{prefix}_{hashlib.sha1('|'.join(parts).encode()).hexdigest()[:16]}"


# -- per-op expressions ------------------------------------------------------------------------
def _wide(d: DType) -> str:
    return "unsigned long long" if d.size_in_bytes == 8 else "unsigned int"


def _round(d: DType, expr: str) -> str:
    """A float-typed (compute type) expression rounded to dtype ``d``."""
    return f"ec_rh({expr})" if d is DType.float16 else expr


def _round_double(d: DType, expr: str) -> str:
    """A double expression rounded once to float dtype ``d``."""
    if d is DType.float16:
        return f"ec_dh({expr})"
    if d is DType.float32:
        return f"(float)({expr})"
    return f"({expr})"


def _wrap(d: DType, a: str, op: str, b: str) -> str:
    u = _wide(d)
    return f"({CTYPE[d]})(({u}){a} {op} ({u}){b})"


def _arith(op: str) -> Callable[[DType, DType, list[str], dict[str, Any]], str]:
    def gen(d: DType, r: DType, a: list[str], attrs: dict[str, Any]) -> str:
        if d in _FLOATS:
            return _round(d, f"{a[0]} {op} {a[1]}")
        return _wrap(d, a[0], op, a[1])

    return gen


def _via_double(fn: str) -> Callable[[DType, DType, list[str], dict[str, Any]], str]:
    def gen(d: DType, r: DType, a: list[str], attrs: dict[str, Any]) -> str:
        args = ", ".join(f"(double){x}" for x in a)
        return _round_double(d, f"{fn}({args})")

    return gen


def _divlike(fn: str) -> Callable[[DType, DType, list[str], dict[str, Any]], str]:
    def gen(d: DType, r: DType, a: list[str], attrs: dict[str, Any]) -> str:
        if d in _FLOATS:
            return _round_double(d, f"ec_{'fmodpy' if fn == 'mod' else fn}"
                                    f"((double){a[0]}, (double){a[1]})")
        if d in _SIGNED:
            return f"({CTYPE[d]})ec_{fn}_s((long long){a[0]}, (long long){a[1]})"
        return (f"({CTYPE[d]})ec_{fn}_u((unsigned long long){a[0]}, "
                f"(unsigned long long){a[1]})")

    return gen


def _pow(d: DType, r: DType, a: list[str], attrs: dict[str, Any]) -> str:
    if d in _FLOATS:
        return _round_double(d, f"pow((double){a[0]}, (double){a[1]})")
    if d in _SIGNED:
        return f"({CTYPE[d]})ec_ipow_s((long long){a[0]}, (long long){a[1]})"
    return f"({CTYPE[d]})ec_ipow((unsigned long long){a[0]}, (unsigned long long){a[1]})"


def _extreme(which: str) -> Callable[[DType, DType, list[str], dict[str, Any]], str]:
    cmp = ">" if which == "max" else "<"

    def gen(d: DType, r: DType, a: list[str], attrs: dict[str, Any]) -> str:
        if d is DType.float64:
            return f"ec_{which}({a[0]}, {a[1]})"
        if d in _FLOATS:
            return f"ec_{which}f({a[0]}, {a[1]})"
        return f"({a[0]} {cmp} {a[1]} ? {a[0]} : {a[1]})"

    return gen


def _compare(op: str) -> Callable[[DType, DType, list[str], dict[str, Any]], str]:
    return lambda d, r, a, attrs: f"({a[0]} {op} {a[1]})"


def _negate(d: DType, r: DType, a: list[str], attrs: dict[str, Any]) -> str:
    if d in _FLOATS:
        return f"(-{a[0]})"
    return f"({CTYPE[d]})(({_wide(d)})0 - ({_wide(d)}){a[0]})"


def _abs(d: DType, r: DType, a: list[str], attrs: dict[str, Any]) -> str:
    if d is DType.float64:
        return f"fabs({a[0]})"
    if d in _FLOATS:
        return f"fabsf({a[0]})"
    if d in _SIGNED:  # the most negative integer maps to itself
        u = _wide(d)
        return f"({CTYPE[d]})({a[0]} < 0 ? ({u})0 - ({u}){a[0]} : ({u}){a[0]})"
    return a[0]


def _float_fn(fn: str) -> Callable[[DType, DType, list[str], dict[str, Any]], str]:
    """floor/ceil/rint/trunc: exact in the dtype (a float16 value's floor is a float16)."""
    return lambda d, r, a, attrs: f"{fn}({a[0]})" if d is DType.float64 else f"{fn}f({a[0]})"


def _gelu(d: DType, r: DType, a: list[str], attrs: dict[str, Any]) -> str:
    fn = "ec_gelu_tanh" if attrs.get("approximate") == "tanh" else "ec_gelu"
    return _round_double(d, f"{fn}((double){a[0]})")


def cast_expr(src: DType, dst: DType, x: str) -> str:
    """``x`` (compute type of ``src``) converted to ``dst`` (NUM-4)."""
    if dst is DType.bool:
        return f"({x} != 0)"
    if src is DType.bool:
        return f"({x} ? ({CTYPE[dst]})1 : ({CTYPE[dst]})0)"
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
    return f"({CTYPE[dst]}){x}"


def _cast(d: DType, r: DType, a: list[str], attrs: dict[str, Any]) -> str:
    return cast_expr(d, r, a[0])


_Gen = Callable[[DType, DType, list[str], dict[str, Any]], str]
_OPS: dict[str, _Gen] = {
    "add": _arith("+"), "sub": _arith("-"), "mul": _arith("*"),
    "div": lambda d, r, a, attrs: _round(d, f"{a[0]} / {a[1]}"),
    "floor_div": _divlike("floordiv"), "mod": _divlike("mod"), "pow": _pow,
    "max": _extreme("max"), "min": _extreme("min"),
    "equal": _compare("=="), "not_equal": _compare("!="), "greater": _compare(">"),
    "greater_equal": _compare(">="),
    "logical_and": _compare("&&"), "logical_or": _compare("||"),
    "logical_xor": _compare("!="), "logical_not": lambda d, r, a, attrs: f"(!{a[0]})",
    "negate": _negate, "abs": _abs,
    "exp": _via_double("exp"), "log": _via_double("log"), "log1p": _via_double("log1p"),
    "sqrt": _via_double("sqrt"), "tanh": _via_double("tanh"), "sin": _via_double("sin"),
    "cos": _via_double("cos"), "erf": _via_double("erf"),
    "rsqrt": lambda d, r, a, attrs: _round_double(d, f"1.0 / sqrt((double){a[0]})"),
    "sigmoid": _via_double("ec_sigmoid"),
    "silu": _via_double("ec_silu"), "gelu": _gelu,
    "floor": _float_fn("floor"), "ceil": _float_fn("ceil"), "round": _float_fn("rint"),
    "trunc": _float_fn("trunc"),
    "is_nan": lambda d, r, a, attrs: f"isnan({a[0]})",
    "is_inf": lambda d, r, a, attrs: f"isinf({a[0]})",
    "cast": _cast,
    "select": lambda d, r, a, attrs: f"({a[0]} ? {a[1]} : {a[2]})",
    "broadcast_to": lambda d, r, a, attrs: a[0],
}
#: op names the generator fuses (elementwise categories, select, broadcast_to).
ELEMENTWISE_OPS = frozenset(_OPS)


def _load(d: DType, param: str) -> str:
    return f"ec_h2f({param})" if d is DType.float16 else param


def _store(d: DType, var: str) -> str:
    return f"ec_f2h({var})" if d is DType.float16 else var


def generate_group(graph: Graph, members: Sequence[int], outputs: Sequence[Value]
                   ) -> tuple[KernelSource, list[Value]]:
    """One kernel for the member nodes (positions in ``graph.nodes``, in order), writing
    ``outputs``. Returns the source and the external values it reads, in parameter order
    (each must be handed over broadcast to the group's shape)."""
    nodes: list[Node] = [graph.nodes[p] for p in members]
    local: dict[Value, str] = {}
    ext: list[Value] = []
    lines: list[str] = []
    for node in nodes:
        for v in node.operands:
            if v not in local:
                k = len(ext)
                ext.append(v)
                local[v] = f"a{k}"
                lines.append(f"const {CTYPE[v.type.dtype]} a{k} = {_load(v.type.dtype, f'x{k}')};")
        r = node.results[0]
        operand_dtype = node.operands[-1].type.dtype  # select: the data operands' dtype
        expr = _OPS[node.op.name](operand_dtype, r.type.dtype,
                                  [local[v] for v in node.operands], dict(node.attrs))
        name = f"t{len(local) - len(ext)}"
        local[r] = name
        lines.append(f"const {CTYPE[r.type.dtype]} {name} = {expr};")
    for j, v in enumerate(outputs):
        lines.append(f"o{j} = {_store(v.type.dtype, local[v])};")
    in_params = ", ".join(f"{PARAM[v.type.dtype]} x{k}" for k, v in enumerate(ext))
    out_params = ", ".join(f"{PARAM[v.type.dtype]} o{j}" for j, v in enumerate(outputs))
    operation = "\n".join(lines) + "\n"
    return KernelSource(_name("ec_fused", in_params, out_params, operation), in_params,
                        out_params, operation), ext


# -- random (Philox4x32-10, spec/random.md) ----------------------------------------------------
_PHILOX = r"""
// Philox4x32-10 words x0, x1 for counter (n mod 2^32, n >> 32, 0, 0) and a 64-bit seed (RNG-1/2)
__device__ __forceinline__ void ec_philox(unsigned long long n, unsigned long long seed,
                                          unsigned int* x0, unsigned int* x1) {
  unsigned int c0 = (unsigned int)n, c1 = (unsigned int)(n >> 32), c2 = 0u, c3 = 0u;
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
  for (int r = 0; r < 10; r++) {
    if (r) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
    unsigned long long p0 = 0xD2511F53ull * (unsigned long long)c0;
    unsigned long long p1 = 0xCD9E8D57ull * (unsigned long long)c2;
    unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;
    unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
    c1 = (unsigned int)p1;
    c3 = (unsigned int)p0;
    c0 = n0;
    c2 = n2;
  }
  *x0 = c0;
  *x1 = c1;
}
"""


def random_kernel(op: str, dtype: DType) -> KernelSource:
    """``random_uniform`` (params ``low, high, below``: RNG-3/4, ``below`` the largest value
    < high) or ``random_normal`` (params ``mu, sd``: RNG-5) into ``y``; element ``i``
    is the row-major index of a fresh C-contiguous output."""
    lines = ["unsigned int w0, w1;", "ec_philox((unsigned long long)i, seed[0], &w0, &w1);"]
    if op == "random_uniform":
        params = "raw uint64 seed, float64 low, float64 high, float64 below"
        if dtype is DType.float64:
            lines.append("double u = (double)(((unsigned long long)(w0 >> 5) << 26)"
                         " + (unsigned long long)(w1 >> 6)) * 1.1102230246251565e-16;")
        else:
            lines.append("double u = (double)(w0 >> 8) * 5.9604644775390625e-08;")
        lines.append("double r = low + (high - low) * u;")
        lines.append(f"{CTYPE[dtype]} v = {_round_double(dtype, 'r')};")
        lines.append(f"if ((double)v >= high) v = ({CTYPE[dtype]})below;")
    elif op == "random_normal":
        params = "raw uint64 seed, float64 mu, float64 sd"
        lines.append("double u1 = (double)((w0 >> 8) + 1u) * 5.9604644775390625e-08;")
        lines.append("double u2 = (double)(w1 >> 8) * 5.9604644775390625e-08;")
        lines.append("double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);")
        lines.append(f"{CTYPE[dtype]} v = {_round_double(dtype, 'mu + sd * z')};")
    else:
        raise ValueError(f"random_kernel: unknown op {op!r}")
    lines.append(f"y = {_store(dtype, 'v')};")
    out_params = f"{PARAM[dtype]} y"
    operation = "\n".join(lines) + "\n"
    return KernelSource(_name("ec_random", params, out_params, operation), params, out_params,
                        operation, PREAMBLE + _PHILOX)
