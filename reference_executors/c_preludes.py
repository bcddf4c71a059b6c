"""The C text each dialect of the C emitter puts before its kernels (``c_emitter``).

No op is named here: these are the helper functions the emitter's entries call, written
once per dialect. ``HOST_PRELUDE`` (C11, the compiling executor's native tier) defines the
bit casts and an ``exp`` without libm, so gcc vectorizes the loop; ``CUDA_PREAMBLE``
(NVRTC, no ``#include``) defines the float16 conversions and the numpy/Python-semantics
helpers of the ops CUDA computes in double; ``PHILOX`` is the random kernels' generator.
"""

from __future__ import annotations

from decimal import Decimal, getcontext

__all__ = ["CUDA_PREAMBLE", "HOST_PRELUDE", "PHILOX"]


def _exp_table() -> str:
    """2^(j/64), j = 0..63, correctly rounded to double (50-digit decimal arithmetic)."""
    getcontext().prec = 50
    ln2 = Decimal(2).ln()
    return ", ".join(float((ln2 * j / 64).exp()).hex() for j in range(64))


# exp in double without libm (gcc vectorizes it; the table read is a gather): clamp to
# [-746, 710] (beyond: inf or 0; NaN passes), k = rint(64 x / ln 2) by the 1.5 * 2^52 shift,
# r = x - k ln2/64 by Cody-Waite (the high part has 35 bits, so k * hi and x - k * hi are
# exact; |r| <= ln2/128), exp(r) - 1 by a degree-5 Taylor polynomial (truncation < 2^-54
# relative), y = T[k mod 64] * (1 + q) as T + T * q; 2^(k div 64) is applied as two exact
# powers of two so that the last product rounds once (overflow to inf, gradual underflow);
# float32 inputs clamp to [-104, 89], where 2^(k div 64) * T is a normal double and goes
# into T's exponent field, and round the double result once.
HOST_PRELUDE = """\
#include <stdint.h>
#include <string.h>

static inline uint64_t ec_bits(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
static inline double ec_from(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }
static inline uint32_t ec_bits32(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static inline float ec_from32(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

static inline double ec_pow2(double k) {  /* 2^k for an integral k in [-1022, 1023] */
    const double shift = 0x1.8p52;
    return ec_from((ec_bits(k + shift) - ec_bits(shift) + 1023u) << 52);
}

static const double ec_T[64] = {TABLE};

static inline double ec_exp_core(double c, int wide) {
    /* exp(c) for c in [-746, 710]; wide: results may be subnormal or overflow in double */
    const double shift = 0x1.8p52;
    double kd = c * 0x1.71547652b82fep6;
    kd = kd + shift;
    uint64_t kb = ec_bits(kd) - ec_bits(shift);
    kd = kd - shift;
    double r = c - kd * 0x1.62e42fef80000p-7;
    r = r - kd * 0x1.1cf79abc9e3b4p-42;
    double q = 0x1.1111111111111p-7;
    q = q * r + 0x1.5555555555555p-5;
    q = q * r + 0x1.5555555555555p-3;
    q = q * r + 0.5;
    q = q * r + 1.0;
    q = q * r;
    if (!wide) {  /* 2^(k div 64) * T[k mod 64] is a normal double: add to its exponent */
        double t = ec_from(ec_bits(ec_T[kb & 63u]) + (uint64_t)(((int64_t)kb >> 6) << 52));
        return t + t * q;
    }
    double t = ec_T[kb & 63u];
    double e = (kd - (double)(int64_t)(kb & 63u)) * 0x1p-6;
    double h = e * 0.5;
    h = h + shift;
    h = h - shift;
    return ((t + t * q) * ec_pow2(h)) * ec_pow2(e - h);
}

static inline double ec_exp(double x) {  /* float64 exp */
    double c = x < 710.0 ? x : 710.0;  /* vminpd/vmaxpd: a NaN becomes 710, restored below */
    c = c > -746.0 ? c : -746.0;
    double y = ec_exp_core(c, 1);
    return x != x ? x : y;
}

static inline float ec_expf(float x) {  /* float32 exp: float64 exp rounded once */
    double c = (double)x < 89.0 ? (double)x : 89.0;  /* exp(89) > FLT_MAX */
    c = c > -104.0 ? c : -104.0;  /* exp(-104) < 2^-150: rounds to 0 */
    double y = ec_exp_core(c, 0);
    return x != x ? x : (float)y;
}

""".replace("TABLE", _exp_table())

#: Helpers every CUDA kernel gets (no #include: CuPy's NVRTC include paths do not matter).
CUDA_PREAMBLE = r"""
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
__device__ __forceinline__ double ec_gelu_quick(double x) {  // x * sigmoid(1.702 x)
  if (isinf(x) && x < 0.0) return -0.0;
  double xc = isnan(x) ? x : fmin(fmax(x, -1000.0), 1000.0);
  double t = 1.702 * xc;  // t + t_lo = the decimal 1.702 times x
  double t_lo = fma(1.702, xc, -t) + 4.263256414560601e-17 * xc;
  return ec_x_sigmoid(x, t, t_lo);
}
"""

PHILOX = r"""
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
