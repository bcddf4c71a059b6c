"""The compiling executor's native tier: fused elementwise groups as generated C (COMP-13..).

A fused group (``compiling_plan.Group``) whose members are all in ``NATIVE_OPS`` on
``NATIVE_DTYPES``, and whose external operands are full-shape or single elements, becomes one
C function: a single loop over the flat elements with every member op inline, each op
rounding to its declared dtype (C's ``float``/``double`` arithmetic with
``-ffp-contract=off``, no ``-ffast-math``), integers wrapping through unsigned arithmetic
(no signed-overflow undefined behaviour), max/min with numpy's NaN propagation and the NUM-8
signed-zero order, ``sqrt`` as the correctly rounded instruction and ``exp`` as an inline
range reduction plus polynomial in double (no libm call, so gcc vectorizes the loop).

The source is compiled by the system C compiler (``cc``: ``-O3 -march=native -fPIC -shared``)
into a shared object cached on disk under ``$XDG_CACHE_HOME/eager-conformance/native`` (or
``~/.cache/...``; a private temporary directory when that is not writable), named by a hash
of the source, the flags and the compiler, written under a temporary name and renamed
atomically so that parallel workers never see a partial file, and loaded with ``ctypes``
(kept in memory per process). Without a C compiler, or when a compile fails, ``build``
returns None and the group keeps the numpy block path.

Measured (gcc 12, this machine: AVX-512, 2 cores shared by 8 sessions; the 16-op chain on
4M float32, kernel alone): gcc vectorizes the loop (``-fopt-info-vec``: "loop vectorized
using 64 byte vectors") only with ``-fno-trapping-math`` (else both arms of a
select or of max/min count as control flow) and non-short-circuit conditions;
``-mprefer-vector-width=512`` runs it in ~20 ms against ~30 ms with gcc's default 256-bit
vectors. ``exp`` dominates: a degree-13 polynomial without a table took ~28 ms for the
chain, the 64-entry table with a degree-5 polynomial ~15 ms, min/max-style clamps ~10 ms,
against ~7 ms without ``exp`` and ~3.6 ms for ``x + y`` (the memory-bound floor). The
float32 ``exp`` equals the reference on all 2^32 inputs; float64 is within 1 ulp of numpy.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal, getcontext
from pathlib import Path
from typing import Any

from interpreter.dtype import DType
from interpreter.graph.core import Node, Value

__all__ = ["CFLAGS", "NATIVE_DTYPES", "NATIVE_OPS", "PARALLEL_MIN", "address", "build",
           "cache_dir", "cflags", "compiler", "group_source", "run_parallel", "usable_cpus"]

CFLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-std=c11", "-ffp-contract=off",
          "-fno-math-errno", "-fno-trapping-math",
          *(("-mprefer-vector-width=512",) if platform.machine() in ("x86_64", "AMD64") else ()))
#: Flags added when the compiler accepts them. gcc's tuning for AMD Zen (what
#: ``-march=native`` picks there) turns off gather instructions, and ``exp``'s table lookup
#: is a gather: without this the chain loop is not vectorized at all (gcc 12, Zen 2: 68 ms
#: scalar against 15 ms vectorized for the 16-op chain on 4M float32, the same bytes).
TUNING_FLAGS = (("-mtune-ctrl=use_gather_2parts,use_gather_4parts",)
                if platform.machine() in ("x86_64", "AMD64") else ())

_CTYPE = {DType.bool: "uint8_t", DType.int8: "int8_t", DType.int16: "int16_t",
          DType.int32: "int32_t", DType.int64: "int64_t", DType.uint8: "uint8_t",
          DType.uint16: "uint16_t", DType.uint32: "uint32_t", DType.uint64: "uint64_t",
          DType.float32: "float", DType.float64: "double"}
#: dtypes the native tier computes (float16/bfloat16/float8 keep the numpy path).
NATIVE_DTYPES = frozenset(_CTYPE)
_FLOATS = frozenset({DType.float32, DType.float64})
_BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_COMPARE = {"equal": "==", "not_equal": "!=", "greater": ">", "greater_equal": ">="}
_LOGIC = {"logical_and": "&", "logical_or": "|", "logical_xor": "^"}
#: ops the native tier computes (with ``broadcast_to`` of a full-shape or one-element value).
NATIVE_OPS = frozenset({*_BINARY, *_COMPARE, *_LOGIC, "logical_not", "max", "min", "select",
                        "cast", "negate", "abs", "sqrt", "exp", "broadcast_to"})

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
_PRELUDE = """\
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


def _wide(dtype: DType) -> str:
    """The unsigned type integer arithmetic of ``dtype`` wraps in (no UB, no promotion)."""
    return "uint64_t" if dtype in (DType.int64, DType.uint64) else "uint32_t"


def _expr(node: Node, args: list[str]) -> str | None:
    """The C expression of one member op, or None when it is outside the native tier."""
    name, dtypes = node.op.name, {v.type.dtype for v in node.operands}
    out = node.results[0].type.dtype
    ct = _CTYPE.get(out)
    if ct is None or not dtypes <= NATIVE_DTYPES or name not in NATIVE_OPS:
        return None
    a = args[0]
    if name == "broadcast_to":
        return a
    if name == "cast":
        return f"(uint8_t)({a} != 0)" if out is DType.bool else f"({ct})({a})"
    if name == "select":
        return f"({a} ? {args[1]} : {args[2]})"
    if len(dtypes) != 1:
        return None
    (dt,) = dtypes
    fl, b = dt in _FLOATS, args[1] if len(args) > 1 else ""
    if name in _COMPARE:
        return f"(uint8_t)({a} {_COMPARE[name]} {b})"
    if name in _LOGIC:
        return f"(uint8_t)({a} {_LOGIC[name]} {b})" if dt is DType.bool else None
    if name == "logical_not":
        return f"(uint8_t)({a} ^ 1)" if dt is DType.bool else None
    if name in ("max", "min"):
        gt = ">" if name == "max" else "<"
        pick = f"((({a} {gt} {b}) | ({a} != {a})) ? {a} : {b})"
        if not fl:
            return pick
        # NUM-8: equal operands (both zeros) combine their bits: max clears a differing
        # sign bit (+0 wins), min sets it (-0 wins); equal nonzeros have equal bits
        bits, frm = ("ec_bits32", "ec_from32") if dt is DType.float32 else ("ec_bits", "ec_from")
        op = "&" if name == "max" else "|"
        return f"({a} == {b} ? {frm}({bits}({a}) {op} {bits}({b})) : {pick})"
    if name in _BINARY:
        if fl:
            return f"({a} {_BINARY[name]} {b})"
        if name == "div" or dt is DType.bool:
            return None
        w = _wide(dt)
        return f"({ct})(({w}){a} {_BINARY[name]} ({w}){b})"
    if name == "negate":
        return f"(-{a})" if fl else f"({ct})(0u - ({_wide(dt)}){a})"
    if name == "abs":
        if fl:
            return f"__builtin_fabsf({a})" if dt is DType.float32 else f"__builtin_fabs({a})"
        if dt.value.startswith("u") or dt is DType.bool:
            return a
        return f"({a} < 0 ? ({ct})(0u - ({_wide(dt)}){a}) : {a})"
    if name == "sqrt" and fl:
        return f"__builtin_sqrtf({a})" if dt is DType.float32 else f"__builtin_sqrt({a})"
    if name == "exp" and fl:
        return f"ec_expf({a})" if dt is DType.float32 else f"ec_exp({a})"
    return None


def group_source(nodes: Sequence[Node], members: Sequence[int], values: set[Value],
                 outputs: Sequence[Value], size: int, splats: frozenset[Value] = frozenset()
                 ) -> tuple[str, list[Value], list[Value]] | None:
    """C source of one fused group (function ``kernel(lo, hi, externals..., outputs...)``
    computing elements ``lo <= i < hi``) and
    its external operands in argument order; None when the group is outside the tier.

    An external operand is read at ``[i]`` when it has ``size`` elements, at ``[0]`` when it
    has one (read through ``broadcast_to``) or is in ``splats`` (a value whose elements are
    all one element: its caller passes that element's address); any other broadcast keeps
    the numpy path."""
    ext: dict[Value, str] = {}
    local: dict[Value, str] = {}
    body: list[str] = []
    for p in members:
        node = nodes[p]
        args = []
        for v in node.operands:
            if v in values:
                args.append(local[v])
                continue
            if v not in ext:
                ext[v] = f"x{len(ext)}"
            n = 1
            for d in v.type.shape:
                n *= d
            if v in splats:
                args.append(f"{ext[v]}[0]")
            elif n == size:
                args.append(f"{ext[v]}[i]")
            elif n == 1 and node.op.name == "broadcast_to":
                args.append(f"{ext[v]}[0]")
            else:
                return None
        if v_dtype_unsupported(node):
            return None
        expr = _expr(node, args)
        if expr is None:
            return None
        r = node.results[0]
        local[r] = f"t{len(local)}"
        body.append(f"        {_CTYPE[r.type.dtype]} {local[r]} = {expr};")
    params = ["int64_t lo", "int64_t hi"]
    params += [f"const {_CTYPE[v.type.dtype]} *restrict {name}" for v, name in ext.items()]
    params += [f"{_CTYPE[v.type.dtype]} *restrict o{j}" for j, v in enumerate(outputs)]
    body += [f"        o{j}[i] = {local[v]};" for j, v in enumerate(outputs)]
    src = (_PRELUDE + f"void kernel({', '.join(params)}) {{\n"
           "    for (int64_t i = lo; i < hi; i++) {\n" + "\n".join(body) + "\n    }\n}\n")
    return src, list(ext), list(outputs)


def v_dtype_unsupported(node: Node) -> bool:
    """True when an operand or the result has a dtype outside the native tier."""
    return any(v.type.dtype not in NATIVE_DTYPES for v in (*node.operands, *node.results))


# -- compiler, disk and memory caches ------------------------------------------------------
_lock = threading.Lock()
_loaded: dict[str, Callable[..., Any] | None] = {}  # source key -> kernel (None: failed)
_cc: list[tuple[str, str] | None] = []  # [(path, version line)] once looked up
_tuning: dict[str, tuple[str, ...]] = {}  # compiler path -> the TUNING_FLAGS it accepts
_tmp_cache: list[Path] = []


def compiler() -> tuple[str, str] | None:
    """The system C compiler (``cc``, else ``gcc``/``clang``) and its version line, or None."""
    with _lock:
        if not _cc:
            found = next((p for p in (shutil.which(c) for c in ("cc", "gcc", "clang")) if p),
                         None)
            version = ""
            if found is not None:
                try:
                    version = subprocess.run([found, "--version"], capture_output=True,
                                             text=True, timeout=30).stdout.split("\n")[0]
                except (OSError, subprocess.SubprocessError):
                    found = None
            _cc.append((found, version) if found else None)
        return _cc[0]


def cflags() -> tuple[str, ...]:
    """The flags kernels are compiled with: ``CFLAGS`` and the ``TUNING_FLAGS`` the compiler
    accepts (each tried once on an empty file)."""
    cc = compiler()
    if cc is None:
        return CFLAGS
    with _lock:
        extra = _tuning.get(cc[0])
    if extra is None:
        extra = tuple(f for f in TUNING_FLAGS if _accepts(cc[0], f))
        with _lock:
            _tuning[cc[0]] = extra
    return (*CFLAGS, *extra)


def _accepts(cc: str, flag: str) -> bool:
    try:
        done = subprocess.run([cc, flag, "-c", "-x", "c", "-", "-o", os.devnull],
                              input="int ec_probe;\n", capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and not done.stderr.strip()


def cache_dir() -> Path:
    """Where shared objects are kept: the user cache dir, else a private temporary one."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "eager-conformance" / "native"
    try:
        path.mkdir(parents=True, exist_ok=True)
        if os.access(path, os.W_OK):
            return path
    except OSError:
        pass
    with _lock:
        if not _tmp_cache:
            _tmp_cache.append(Path(tempfile.mkdtemp(prefix="eager-conformance-native-")))
        return _tmp_cache[0]


def _compile_so(cc: str, source: str, target: Path) -> bool:
    """Compile ``source`` into ``target`` through a temporary name and an atomic rename."""
    fd, tmp_name = tempfile.mkstemp(suffix=".so.tmp", dir=target.parent)
    os.close(fd)
    src = Path(tmp_name).with_suffix(".c")
    try:
        src.write_text(source)
        done = subprocess.run([cc, *cflags(), "-o", tmp_name, str(src)], capture_output=True,
                              timeout=120)
        if done.returncode != 0:
            return False
        os.replace(tmp_name, target)
        return True
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        for leftover in (Path(tmp_name), src):
            leftover.unlink(missing_ok=True)


def build(source: str, nargs: int) -> Callable[..., Any] | None:
    """The loaded ``kernel(lo, hi, *pointers)`` of ``source`` taking ``nargs`` pointers (compiled
    once per source, cached on disk and in memory), or None without a C compiler or when
    the compile fails."""
    cc = compiler()
    if cc is None:
        return None
    key = hashlib.sha256("\0".join([source, *cflags(), *cc, platform.machine(),
                                    platform.node()]).encode()).hexdigest()[:32]
    with _lock:
        if key in _loaded:
            return _loaded[key]
    target = cache_dir() / f"k{key}.so"
    fn: Callable[..., Any] | None = None
    if target.exists() or _compile_so(cc[0], source, target):
        try:
            lib = ctypes.CDLL(str(target))
            fn = lib.kernel
            fn.restype = None
            fn.argtypes = [ctypes.c_int64, ctypes.c_int64] + [ctypes.c_void_p] * nargs
        except OSError:
            fn = None
    with _lock:
        _loaded.setdefault(key, fn)
        return _loaded[key]


def address(a: Any) -> int:
    """The address of a C-contiguous array's first element, for a kernel call: through a
    ctypes view of its buffer (~0.5 us) when it is writable, else ``a.ctypes.data`` (~2 us,
    numpy builds a helper object)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except (TypeError, ValueError):  # read-only, or no bytes
        return int(a.ctypes.data)


# -- splitting one kernel call across threads (COMP-19) -------------------------------------
#: Elements from which a native kernel call is split across threads: below ~1M elements the
#: hand-off (~20-50 us) costs more than a second core saves.
PARALLEL_MIN = 1 << 20
_CHUNK_ALIGN = 1024  # chunk boundaries stay multiples of every vector width
#: [(process id, workers, pool)] once created; a forked child makes its own (the parent's
#: threads do not exist there, so work submitted to the parent's pool would never run).
_pool: list[tuple[int, int, ThreadPoolExecutor]] = []


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def run_parallel(kernel: Callable[..., Any], size: int, threads: int, *pointers: int) -> None:
    """``kernel(0, size, *pointers)`` as ``threads`` calls on disjoint element ranges at once
    (ctypes releases the GIL during a foreign call; every element is computed by exactly one
    call and elements are independent, so the result is the same bytes)."""
    step = -(-size // threads // _CHUNK_ALIGN) * _CHUNK_ALIGN
    bounds = [(lo, min(lo + step, size)) for lo in range(0, size, step)]
    with _lock:
        if not _pool or _pool[0][0] != os.getpid() or _pool[0][1] < threads - 1:
            _pool[:] = [(os.getpid(), threads - 1,
                         ThreadPoolExecutor(threads - 1, "ec-native"))]
        pool = _pool[0][2]
    futures = [pool.submit(kernel, lo, hi, *pointers) for lo, hi in bounds[1:]]
    kernel(*bounds[0], *pointers)
    for f in futures:
        f.result()
