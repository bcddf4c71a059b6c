"""Compile generated CUDA kernel bodies for the host (tests only; GPU-17).

A kernel body (``KernelSource.operation``) is wrapped in ``void fn(void** ins, void** outs,
long long n)``, one loop iteration per element, with a shim for the CUDA intrinsics the
CUDA dialect uses (bit casts, ``__double2float_rz``), and compiled by g++ into a shared
library loaded with ctypes. Inputs of group kernels are contiguous arrays of the output's
size; the random kernels' float64
parameters are scalars (one-element arrays). Results on the host check the generated
code's logic, never CUDA's libm or NVRTC.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from interpreter.dtype import DType
from reference_executors.c_emitter import CUDA
from reference_executors.c_preludes import PHILOX
from reference_executors.cuda_codegen import PREAMBLE, KernelSource

__all__ = ["CXX", "build", "run"]

CXX = shutil.which("g++")
SHIM = r"""
#include <math.h>
#include <cmath>
#include <cstring>
#include <cfloat>
#define __device__
#define __forceinline__ inline
using std::isnan; using std::isinf; using std::signbit;
static inline unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
static inline long long __double_as_longlong(double d) { long long u; memcpy(&u, &d, 8); return u; }
static inline double __longlong_as_double(long long u) { double d; memcpy(&d, &u, 8); return d; }
static inline float __double2float_rz(double d) {  // round toward zero
  if (d != d) return (float)d;
  float f = (float)d;
  if (std::isinf(f) && !std::isinf(d)) return copysignf(FLT_MAX, f);
  if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
  return f;
}
"""


def _ctype(param: str) -> str:
    """The C type of a CuPy parameter type (``float16`` crosses as ``uint16``)."""
    return CUDA.ctype(DType(param))


def _harness(fn: str, src: KernelSource) -> str:
    lines = []
    scalars = src.name.startswith("ec_random")  # their float64 params are scalars
    for k, p in enumerate(q.split() for q in src.in_params.split(", ") if q):
        if p[0] == "raw":
            lines.append(f"const {_ctype(p[1])}* {p[2]} = (const {_ctype(p[1])}*)ins[{k}];")
        else:
            at = "0" if scalars else "i"
            lines.append(f"const {_ctype(p[0])} {p[1]} = ((const {_ctype(p[0])}*)ins[{k}])[{at}];")
    for j, p in enumerate(q.split() for q in src.out_params.split(", ")):
        lines.append(f"{_ctype(p[0])}& {p[1]} = (({_ctype(p[0])}*)outs[{j}])[i];")
    return (f'extern "C" void {fn}(void** ins, void** outs, long long n) {{\n'
            "for (long long i = 0; i < n; ++i) {\n" + "\n".join(lines) + "\n"
            + src.operation + "}}\n")


def build(sources: Sequence[KernelSource], directory: Path) -> Any:
    """One library with function ``k<i>`` for ``sources[i]``."""
    code = SHIM + PREAMBLE + PHILOX + "".join(_harness(f"k{i}", s)
                                               for i, s in enumerate(sources))
    (directory / "k.cpp").write_text(code)
    assert CXX is not None, "no g++"
    proc = subprocess.run([CXX, "-O0", "-shared", "-fPIC", "-ffp-contract=off",
                           "-o", str(directory / "k.so"), str(directory / "k.cpp")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[:4000]
    return ctypes.CDLL(str(directory / "k.so"))


def run(fn: Any, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> None:
    """Call one kernel: contiguous inputs (float16 as bits), outputs written in place."""
    def bits(a: np.ndarray) -> np.ndarray:
        return a.view(np.uint16) if a.dtype == np.float16 else a

    cin = [np.ascontiguousarray(bits(np.asarray(a))) for a in ins]
    assert all(o.flags.c_contiguous for o in outs)
    ptrs = (ctypes.c_void_p * max(1, len(cin)))(*[a.ctypes.data for a in cin])
    optrs = (ctypes.c_void_p * len(outs))(*[bits(o).ctypes.data for o in outs])
    fn(ptrs, optrs, ctypes.c_longlong(outs[0].size if outs else 0))
