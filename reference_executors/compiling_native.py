"""The compiling executor's native tier: fused elementwise groups as generated C (COMP-13..).

A fused group (``compiling_plan.Group``) whose members all have a C expression in the C
emitter's host dialect (``c_emitter.HOST``: the ops and ``NATIVE_DTYPES`` it can write
without libm), and whose external operands are full-shape or single elements, becomes one
C function: a single loop over the flat elements with every member op inline, each op
rounding to its declared dtype (C's ``float``/``double`` arithmetic with
``-ffp-contract=off``, no ``-ffast-math``), integers wrapping through unsigned arithmetic
(no signed-overflow undefined behaviour), max/min with numpy's NaN propagation and the NUM-8
signed-zero order, ``sqrt`` as the correctly rounded instruction and ``exp`` as an inline
range reduction plus polynomial in double (``c_preludes.HOST_PRELUDE``: no libm call, so
gcc vectorizes the loop). What each op computes is the emitter's; this module writes the
loop around it, compiles and loads it.

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
from pathlib import Path
from typing import Any

from interpreter.graph.core import Node, Value

from .c_emitter import HOST, expression
from .compiling_plan import broadcast_view

__all__ = ["CFLAGS", "NATIVE_DTYPES", "PARALLEL_MIN", "address", "build",
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

#: dtypes the native tier computes (float16/bfloat16/float8 keep the numpy path).
NATIVE_DTYPES = HOST.dtypes


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
            elif n == 1 and broadcast_view(node):
                args.append(f"{ext[v]}[0]")
            else:
                return None
        expr = expression(HOST, node, args)
        if expr is None:
            return None
        r = node.results[0]
        local[r] = f"t{len(local)}"
        body.append(f"        {HOST.ctype(r.type.dtype)} {local[r]} = {expr};")
    params = ["int64_t lo", "int64_t hi"]
    params += [f"const {HOST.ctype(v.type.dtype)} *restrict {name}" for v, name in ext.items()]
    params += [f"{HOST.ctype(v.type.dtype)} *restrict o{j}" for j, v in enumerate(outputs)]
    body += [f"        o{j}[i] = {local[v]};" for j, v in enumerate(outputs)]
    src = (HOST.prelude + f"void kernel({', '.join(params)}) {{\n"
           "    for (int64_t i = lo; i < hi; i++) {\n" + "\n".join(body) + "\n    }\n}\n")
    return src, list(ext), list(outputs)


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
