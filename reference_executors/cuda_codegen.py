"""CUDA source for the GPU executor: one ``cupy.ElementwiseKernel`` per fused group (GPU-5..8).

Pure string generation (no CuPy import), so the sources are checked on machines without a
GPU against reviewed golden files (``tests/executors/golden/cuda/``). What each op
computes is the C emitter's CUDA dialect (``c_emitter``: per-op numerics, NaN, signed
zeros, wrap-around, the type map); this module writes the kernel around it.

Representation: every value lives in a C variable of its *compute type*: the C type of its
dtype, except float16, which is held as a ``float`` that is always exactly a float16 value
(it is rounded back to float16 after every op: ``ec_rh``). float16 arrays cross the kernel
boundary as their raw ``uint16`` bits (CuPy's own float16 class is not used), converted by
the integer helpers ``ec_h2f``/``ec_f2h`` of the preamble. Kernels are compiled with
``--fmad=false`` (no contraction of a multiply and an add into an FMA).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from interpreter.dtype import DType
from interpreter.graph.core import Graph, Node, Value

from .c_emitter import CUDA, ENTRIES, RANDOM, expression
from .c_preludes import PHILOX

__all__ = ["ELEMENTWISE_OPS", "GPU_DTYPES", "PARAM", "PREAMBLE", "KernelSource",
           "generate_group", "random_kernel"]

#: dtypes a GPU graph may use (bfloat16 and float8 have no CuPy dtype: refused, GPU-3).
GPU_DTYPES = CUDA.dtypes

#: CuPy parameter type of each dtype (float16 crosses as its raw bits).
PARAM = {d: d.value for d in GPU_DTYPES} | {DType.float16: "uint16"}

#: Helpers every kernel gets (no #include: CuPy's NVRTC include paths do not matter).
PREAMBLE = CUDA.prelude

#: op names the generator fuses (the emitter's entries: the registry's fusable ops).
ELEMENTWISE_OPS = frozenset(ENTRIES)

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


def _load(d: DType, param: str) -> str:
    return f"ec_h2f({param})" if d is DType.float16 else param


def _store(d: DType, var: str) -> str:
    return f"ec_f2h({var})" if d is DType.float16 else var


def generate_group(graph: Graph, members: Sequence[int], outputs: Sequence[Value]
                   ) -> tuple[KernelSource, list[Value]]:
    """One kernel for the member nodes (positions in ``graph.nodes``, in order), writing
    ``outputs``. Returns the source and the external values it reads, in parameter order
    (each must be handed over broadcast to the group's shape). A member without a CUDA form
    (an op without an emitter entry, a dtype outside ``GPU_DTYPES``) is a ``ValueError``:
    the executor refuses such graphs first (GPU-3)."""
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
                lines.append(f"const {CUDA.ctype(v.type.dtype)} a{k} = "
                             f"{_load(v.type.dtype, f'x{k}')};")
        r = node.results[0]
        expr = expression(CUDA, node, [local[v] for v in node.operands])
        if expr is None:
            raise ValueError(f"generate_group: {node.op.name} on "
                             f"{[v.type.dtype.value for v in node.operands]} has no CUDA form")
        name = f"t{len(local) - len(ext)}"
        local[r] = name
        lines.append(f"const {CUDA.ctype(r.type.dtype)} {name} = {expr};")
    for j, v in enumerate(outputs):
        lines.append(f"o{j} = {_store(v.type.dtype, local[v])};")
    in_params = ", ".join(f"{PARAM[v.type.dtype]} x{k}" for k, v in enumerate(ext))
    out_params = ", ".join(f"{PARAM[v.type.dtype]} o{j}" for j, v in enumerate(outputs))
    operation = "\n".join(lines) + "\n"
    return KernelSource(_name("ec_fused", in_params, out_params, operation), in_params,
                        out_params, operation), ext


# -- random (Philox4x32-10, spec/random.md) ----------------------------------------------------
def random_kernel(op: str, dtype: DType) -> KernelSource:
    """The Philox kernel of random op ``op`` (its ``c_emitter.RANDOM`` entry: uniform takes
    ``low, high, below``, RNG-3/4, ``below`` the largest value < high; normal takes
    ``mu, sd``, RNG-5) into ``y``; element ``i`` is the row-major index of a fresh
    C-contiguous output."""
    body = RANDOM.get(op)
    if body is None:
        raise ValueError(f"random_kernel: unknown op {op!r}")
    params, computed = body(dtype)
    lines = ["unsigned int w0, w1;", "ec_philox((unsigned long long)i, seed[0], &w0, &w1);",
             *computed, f"y = {_store(dtype, 'v')};"]
    out_params = f"{PARAM[dtype]} y"
    operation = "\n".join(lines) + "\n"
    return KernelSource(_name("ec_random", params, out_params, operation), params, out_params,
                        operation, PREAMBLE + PHILOX)
