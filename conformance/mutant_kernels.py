"""The mutant kernels of a registry op (CONF-105), for ``python -m conformance.mutants``.

What is mutated, for an op whose kernel is ``k``:

* ``k`` itself, when it is a Python function (or lambda) with source;
* the Python functions in ``k``'s closure (``_via_f64(_pow)``: ``_pow``), rebound into a
  copy of ``k``;
* the Python functions of this project ``k`` calls through its module globals (``widen``
  in ``reduce_sum``), replaced in a copy of ``k``'s globals: only this op's kernel sees the
  mutant, every other op keeps the original helper;
* a kernel that is a numpy ufunc (``add`` is ``np.add``) gets the operator swap at the
  kernel level (``np.add`` -> ``np.subtract``);
* every elementwise float kernel gets a narrowed-precision mutant (float64 inputs evaluated
  in float32, float32 in float16, the result cast back).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from interpreter.registry import REGISTRY, OpDef

from .mutation_ops import Mutation, compile_mutant, function_mutations, original_source, rebind

__all__ = ["MutantKernel", "op_mutants"]

Kernel = Callable[..., Any]

#: ufunc kernel -> the numpy functions an operator swap puts in its place
UFUNC_SWAPS: dict[np.ufunc, tuple[Kernel, ...]] = {
    np.add: (np.subtract,), np.subtract: (np.add,), np.multiply: (np.add,),
    np.divide: (np.multiply, np.floor_divide), np.equal: (np.not_equal, np.greater_equal),
    np.not_equal: (np.equal,), np.greater: (np.greater_equal, np.less),
    np.greater_equal: (np.greater, np.less_equal), np.logical_and: (np.logical_or,),
    np.logical_or: (np.logical_and, np.logical_xor), np.logical_xor: (np.logical_or,),
    np.logical_not: (np.logical_and,), np.floor: (np.ceil, np.trunc),
    np.ceil: (np.floor, np.trunc), np.trunc: (np.floor, np.rint), np.rint: (np.trunc, np.round),
    np.absolute: (np.negative,), np.negative: (np.positive, np.invert),
    np.isnan: (np.isinf, np.isfinite), np.isinf: (np.isnan, np.isposinf)}
_NARROW = {np.dtype(np.float64): np.float32, np.dtype(np.float32): np.float16}


@dataclass
class MutantKernel:
    """One mutant of an op: ``kernel`` replaces ``op.kernel`` in the mutant executor."""

    op: str
    number: int
    target: str  # "kernel", "closure fn", "global widen", "ufunc"
    function: str  # qualified name of the mutated function
    operator: str
    line: int
    before: str
    after: str
    diff: str
    kernel: Kernel
    mutated: Kernel | None = None  # the mutated function itself (None: kernel-level)
    original: Kernel | None = None

    @property
    def id(self) -> str:
        return f"{self.op}#{self.number}"

    def describe(self) -> str:
        return (f"{self.id} [{self.operator}] {self.function}:{self.line}: "
                f"{self.before!r} -> {self.after!r}")


def _ours(fn: Any) -> bool:
    mod = getattr(fn, "__module__", "") or ""
    return isinstance(fn, types.FunctionType) and mod.split(".")[0] == "interpreter"


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


def targets(kernel: Kernel) -> list[tuple[str, types.FunctionType, Callable[[Kernel], Kernel]]]:
    """(target label, function to mutate, how a mutated copy becomes the op's kernel)."""
    if not isinstance(kernel, types.FunctionType):
        return []
    out: list[tuple[str, types.FunctionType, Callable[[Kernel], Kernel]]] = []
    out.append(("kernel", kernel, _same))
    for var, cell in zip(kernel.__code__.co_freevars, kernel.__closure__ or (), strict=True):
        fn = cell.cell_contents
        if _ours(fn):
            out.append((f"closure {var}", fn, _installer(kernel, free=var)))
    seen = {id(f) for _, f, _ in out}
    for name in sorted(_code_names(kernel.__code__)):
        g = kernel.__globals__.get(name)
        if isinstance(g, types.FunctionType) and _ours(g) and id(g) not in seen:
            seen.add(id(g))
            out.append((f"global {name}", g, _installer(kernel, glob=name)))
    return out


def _same(m: Kernel) -> Kernel:
    return m


def _installer(kernel: types.FunctionType, free: str | None = None, glob: str | None = None
               ) -> Callable[[Kernel], Kernel]:
    def install(m: Kernel) -> Kernel:
        if free is not None:
            return rebind(kernel, free={free: m})
        return rebind(kernel, globals_={str(glob): m})

    return install


def _narrowed(kernel: Kernel) -> Kernel:
    def narrow(*xs: Any, **attrs: Any) -> Any:
        dtype = np.asarray(xs[0]).dtype
        lo = _NARROW.get(dtype)
        if lo is None:
            return kernel(*xs, **attrs)
        out = kernel(*(np.asarray(x).astype(lo) if np.asarray(x).dtype == dtype else x
                       for x in xs), **attrs)
        return np.asarray(out).astype(dtype) if np.asarray(out).dtype == lo else out

    return narrow


def op_mutants(op: OpDef | str) -> list[MutantKernel]:
    """Every mutant of ``op``'s kernel, numbered in a stable order."""
    if isinstance(op, str):
        op = REGISTRY[op]
    kernel = op.kernel
    found: list[MutantKernel] = []
    texts: set[tuple[str, str]] = set()
    for label, fn, install in targets(kernel):
        original = original_source(fn)
        for m in function_mutations(fn):
            if (fn.__qualname__, m.source) in texts:
                continue
            texts.add((fn.__qualname__, m.source))
            try:
                mutated = compile_mutant(fn, m)
            except Exception:  # e.g. a mutant of a name binding that no longer compiles
                continue
            found.append(_make(op.name, len(found), label, fn.__qualname__, m, original,
                               install(mutated), mutated, fn))
    name = getattr(kernel, "__name__", "")
    if isinstance(kernel, np.ufunc):
        for alt in UFUNC_SWAPS.get(kernel, ()):
            found.append(MutantKernel(op.name, len(found), "ufunc", f"np.{name}",
                                      "arithmetic swap" if op.category != "elementwise-binary"
                                      or not op.result_dtypes else "comparison swap",
                                      0, f"np.{name}", f"np.{alt.__name__}",
                                      f"-kernel = np.{name}\n+kernel = np.{alt.__name__}",
                                      alt))
    if op.traits & {"transcendental", "normalization"}:  # evaluated at a chosen precision
        found.append(MutantKernel(op.name, len(found), "kernel", name or op.name,
                                  "narrowed precision", 0, "float64/float32 evaluation",
                                  "float32/float16 evaluation",
                                  "-kernel(x)\n+kernel(x.astype(narrower)).astype(x.dtype)",
                                  _narrowed(kernel)))
    return found


def _make(op: str, n: int, label: str, qual: str, m: Mutation, original: str, kernel: Kernel,
          mutated: Kernel, fn: Kernel) -> MutantKernel:
    return MutantKernel(op, n, label, qual, m.operator, m.line, m.before, m.after,
                        m.diff(original), kernel, mutated, fn)
