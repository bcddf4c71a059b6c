"""``CompilingExecutor``: a fusing CPU compiler for lowered graphs (spec/reference-executors.md).

``compile(graph)`` lowers the graph, plans it (``compiling_plan``: maximal runs of ops with
the registry's ``fusable`` trait -- elementwise ops, ``select``, ``broadcast_to`` -- of one
shape become one fused kernel; every other op is one library call; materialized values
share storage by a liveness plan) and generates ONE Python function for the whole plan,
compiled with ``compile()``. Each fused kernel is a loop
over blocks of ``block`` elements (flat, or rows of axis 0 when an operand is broadcast):
every member op runs on the block, writing into block-sized scratch buffers (``out=``) that
stay in cache, so intermediates never touch memory; only the group's outputs are written
to full-size buffers. This is numexpr's approach without the dependency.

Code generators, chosen by measurement (``benchmarks/bench_compiling.py``; this machine: 2
cores shared by 8 sessions, best of several runs). Two tiers:

- the numpy tier (every group; the only one for small groups, ``native_pays``): the generated
  Python above, compiled with ``compile()``: a 10-op graph in ~0.6 ms (budget 5 ms), 100 ops
  in ~5 ms, 1000 ops in ~125 ms, far below MAX 26.7's ~1.6 s. Its cost is numpy's per-call
  dispatch per op and block and the float64 route of transcendentals: the 16-op chain on 4M
  float32 runs ~4.5x faster than the interpreter but at ~5% of copy bandwidth.
- the native tier (``compiling_native``, COMP-13..18): a qualifying group of at least ``NATIVE_MIN``
  elements (or ``NATIVE_MIN_FUSED`` with ``NATIVE_MIN_OPS`` ops) becomes one C loop (every op
  inline as the C emitter's host dialect writes it, ``c_emitter``: per-op rounding exact,
  vectorized by gcc, no libm call), compiled by the system ``cc``
  once per kernel source and cached on disk. Measured on the chain (float32): the C kernel is 4-7x
  faster than the numpy tier at every size from 1K to 256K elements, but gcc takes ~0.2 s for a
  10-op loop, ~0.5 s for 100 ops and ~7 s for 1000 (hence ``NATIVE_MAX_OPS``); from 32K elements a
  run saves ~0.7 ms, so the threshold keeps the conformance suite's small graphs (and CI) off the
  compiler while a tensor workload repays the one-time compile within a few hundred calls (a few
  with the disk cache warm). On 4M elements the chain runs in one native kernel in 17-20 ms
  (interpreter 390-720 ms: 23-36x; numpy tier 4-5x) at 21-24% of ``np.copyto``'s bandwidth: ``exp``
  (correctly rounded in double, ~1.5 ns per element on this shared core) keeps it compute-bound,
  short of the issue's 60%. numba would add a dependency and similar compile times; numexpr cannot
  express the per-op rounding or NUM-8; so C through the system compiler, optional at run time
  (without it the numpy tier serves everything).

Which kernel each op runs (COMP-6): an op whose registry kernel is a numpy ufunc (add, sub,
mul, div, comparisons, logic, negate, abs, floor, ceil, round, trunc, is_nan, is_inf) calls
that same ufunc with ``out=``, on the block; an op whose emitter entry has a numpy ``out=``
form runs that (``select`` as a branch-free bit select, ``max``/``min`` as numpy's
maximum/minimum plus a sign-bit fix, NUM-8: byte-exact and 7x faster than the registry's
``np.where`` forms); every other op calls its registry
kernel -- its definition, as a library call -- on the block (fused) or on whole arrays (not
fused). Nothing calls ``interpreter.evaluate``.

Numerics (COMP-7; the native tier: COMP-16): each fused op rounds to its declared dtype
exactly as the reference, because it runs the reference's own function on the same values,
elementwise: float16 and
bfloat16 round after every op (no excess precision across fused ops), there is no
reassociation or contraction (no FMA), NaN, signed zeros and subnormals follow the op's
kernel. Transcendentals take the reference's float64 route (``_via_f64``: evaluate in
float64, round once), so they are bit-identical to the reference, well inside ulp(2..4).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from interpreter.errors import UnsupportedGraphError
from interpreter.evaluate import fresh_outputs
from interpreter.executor import PlanCache, validate_inputs
from interpreter.fp import ignore_fp_errors, restore_fp_errors
from interpreter.graph.core import Graph, Value
from interpreter.graph.key import structural_key
from interpreter.graph.lowering import lowered
from interpreter.graph.splat import is_splat
from interpreter.registry import REGISTRY, OpDef

from . import compiling_native
from .c_emitter import numpy_out
from .compiling_plan import Group, Plan, broadcast_view, plan_graph, value_ends

__all__ = ["BLOCK", "CACHE_SIZE", "NATIVE_MAX_OPS", "NATIVE_MIN", "NATIVE_MIN_FUSED",
           "NATIVE_MIN_OPS", "CompiledPlan", "CompilingExecutor", "native_pays"]

#: Elements per block of a fused kernel (float32: 64 KiB per scratch buffer).
BLOCK = 16384
#: Plans kept per executor instance (least recently used dropped first, COMP-9).
CACHE_SIZE = 256
#: Elements from which ``native="auto"`` compiles a fused group to C (COMP-14).
NATIVE_MIN = 32768
#: ... and from which it compiles a group of at least ``NATIVE_MIN_OPS`` member ops: above the
#: conformance suite's shapes (at most 625 elements), where one C loop already beats the
#: numpy tier's per-op dispatch (4096 f32, the 10-op chain of 6 weak scalars: ~22 against
#: ~35 us per run; a 1-2 op group is faster in numpy: C's fixed cost is ~12 us a call).
NATIVE_MIN_FUSED = 2048
NATIVE_MIN_OPS = 4
#: Most member ops of a group ``native="auto"`` compiles to C (gcc's time grows with the
#: loop body: ~0.2 s for 10 ops, ~0.5 s for 100, ~7 s for 1000; COMP-14).
NATIVE_MAX_OPS = 128


def _out_form(op: OpDef) -> Callable[..., Any] | None:
    """The op's byte-exact ``out=`` form on a block (COMP-6): its emitter entry's numpy form
    (``select``, ``max``/``min``), else its registry kernel when that is a numpy ufunc
    (called with ``out=``), else None (the kernel runs on the block and returns a result)."""
    direct = numpy_out(op.name)
    if direct is not None:
        return direct
    return op.kernel if isinstance(op.kernel, np.ufunc) else None


def native_pays(size: int, ops: int) -> bool:
    """Whether ``native="auto"`` compiles a qualifying group of ``ops`` member ops on
    ``size`` elements to C (COMP-14)."""
    return ops <= NATIVE_MAX_OPS and (size >= NATIVE_MIN or (
        size >= NATIVE_MIN_FUSED and ops >= NATIVE_MIN_OPS))


class _Gen:
    """Generates the source of one plan's function."""

    def __init__(self, plan: Plan, block: int, native: bool | str = False,
                 threads: int = 1) -> None:
        self.plan, self.block, self.native, self.threads = plan, block, native, threads
        self.ns: dict[str, Any] = {"np": np, "asarray": np.asarray, "empty": np.empty,
                                   "broadcast": np.broadcast_to,
                                   "contig": np.ascontiguousarray,
                                   "address": compiling_native.address,
                                   "parallel": compiling_native.run_parallel}
        self.native_kernels = 0
        self.lines: list[str] = []
        self.allocated: set[int] = set()
        #: constants whose array is one element broadcast (a weak scalar's splat), by value
        self.splats: dict[Value, np.ndarray] = {}

    def name(self, v: Value) -> str:
        return f"v{self.plan.ids[v]}"

    def dtype(self, v: Value) -> str:
        key = f"d_{v.type.dtype.value}"
        self.ns[key] = v.type.dtype.to_numpy()
        return key

    def source(self) -> str:
        graph, plan = self.plan.graph, self.plan
        self.lines = ["def plan(ins):"]
        names = [self.name(v) for v in graph.inputs]
        if names:
            self.lines.append(f"    {', '.join(names)}, = ins")
        end = value_ends(graph, plan.steps)
        inputs = set(graph.inputs)
        defined: set[Value] = set(inputs)
        outs = set(graph.outputs or ())
        for i, step in enumerate(plan.steps):
            if step.node is not None:
                self.node(step.node)
                defined.update(graph.nodes[step.node].results)
            elif step.group is not None:
                self.group(step.group)
                defined.update(step.group.outputs)
            dead = [v for v in defined if end.get(v, -1) == i and v not in outs
                    and v not in inputs]
            for v in sorted(dead, key=lambda v: plan.ids[v]):
                self.lines.append(f"    del {self.name(v)}")
                defined.discard(v)
        self.lines.append(f"    return [{', '.join(self.name(v) for v in graph.outputs or ())}]")
        return "\n".join(self.lines) + "\n"

    def node(self, pos: int) -> None:
        node = self.plan.graph.nodes[pos]
        if "compile-time" in node.op.traits:  # evaluated once, here: read-only (COMP-20)
            value = self.ns[f"const{pos}"] = node.op.kernel(**node.attrs)
            if is_splat(value):
                self.splats[node.results[0]] = value
            self.lines.append(f"    {self.name(node.results[0])} = const{pos}")
            return
        self.ns[f"k{pos}"], self.ns[f"a{pos}"] = node.op.kernel, dict(node.attrs)
        call = f"k{pos}({''.join(self.name(v) + ', ' for v in node.operands)}**a{pos})"
        if len(node.results) == 1:
            self.lines.append(f"    {self.name(node.results[0])} = {call}")
        elif node.results:
            names = ", ".join(self.name(r) for r in node.results)
            self.lines.append(f"    {names}, = tuple({call})")
        else:
            self.lines.append(f"    {call}")

    def group(self, g: Group) -> None:
        nodes = self.plan.graph.nodes
        shape, emit = g.shape, self.lines.append
        size = math.prod(shape)
        outputs = set(g.outputs)
        for v in g.outputs:  # full-size outputs: slots reused by liveness (COMP-4)
            slot = self.plan.slots[v]
            if slot not in self.allocated:
                self.allocated.add(slot)
                emit(f"    s{slot} = empty({shape!r}, {self.dtype(v)})")
            emit(f"    {self.name(v)} = s{slot}")
        if size == 0 or self.native_group(g, size):
            return
        bcast = any(broadcast_view(nodes[p]) and nodes[p].operands[0] not in g.values
                    and nodes[p].operands[0].type.shape != shape for p in g.members)
        flat = bool(shape) and not bcast
        if not shape:
            rows, n, scratch_shape = 1, 1, "()"
        elif flat:
            n = size
            rows = min(self.block, n)
            scratch_shape = f"({rows},)" if rows < n else repr(shape)
        else:
            n = shape[0]
            rows = min(n, max(1, self.block // (size // n)))
            scratch_shape = repr((rows, *shape[1:]))
        # one block covering the flat whole: whole arrays, no loop, views or slices
        whole = flat and rows >= n
        flat = flat and not whole
        at, store = ("", "[...]") if whole else ("[s]", "[s]")
        # externals and full-size output views
        ext: dict[Value, str] = {}
        for p in g.members:
            node = nodes[p]
            for v in node.operands:
                if v in g.values or v in ext:
                    continue
                ext[v] = f"x{self.plan.ids[v]}"
                tail = ".reshape(-1)" if flat else ""
                emit(f"    {ext[v]} = asarray({self.name(v)}){tail}")
            if (broadcast_view(node) and node.operands[0] not in g.values
                    and not flat and not whole):
                r = node.results[0]
                emit(f"    b{self.plan.ids[r]} = broadcast({ext[node.operands[0]]}, "
                     f"{shape!r})")
        for v in g.outputs:
            emit(f"    o{self.plan.ids[v]} = {self.name(v)}{'.reshape(-1)' if flat else ''}")
        # scratch buffers for intermediates, reused within the block loop by liveness
        body: list[str] = []
        ends: dict[Value, int] = {}
        for idx in range(len(g.members) - 1, -1, -1):
            node = nodes[g.members[idx]]
            r = node.results[0]
            alias = -1 if _out_form(node.op) is not None else ends.get(r, idx)
            for v in node.operands:
                ends[v] = max(ends.get(v, -1), idx, alias)
        holding: dict[str, Value] = {}  # scratch name -> the value it holds
        free: list[tuple[str, Any]] = []
        nscratch = 0
        sl = "[:m]" if shape and not whole else ""
        for idx, p in enumerate(g.members):
            node = nodes[p]
            r, rid = node.results[0], self.plan.ids[node.results[0]]
            for name, v in list(holding.items()):
                if ends.get(v, -1) < idx:
                    del holding[name]
                    free.append((name, v.type.dtype))
            args = [f"t{self.plan.ids[v]}" if v in g.values else f"{ext[v]}{at}"
                    for v in node.operands]
            if broadcast_view(node):
                src = node.operands[0]
                if src in g.values:
                    expr = args[0]
                else:
                    expr = f"x{self.plan.ids[src]}{at}" if flat or whole else f"b{rid}[s]"
                body.append(f"t{rid} = {expr}")
                if r in outputs:
                    body.append(f"o{rid}{store} = t{rid}")
                continue
            into = _out_form(node.op)
            if into is not None:
                if r in outputs:
                    target = f"o{rid}{at}"
                else:
                    got = next((f for f in free if f[1] == r.type.dtype), None)
                    if got is None:
                        wname = f"w{nscratch}"
                        nscratch += 1
                        emit(f"    {wname} = empty({scratch_shape}, {self.dtype(r)})")
                    else:
                        free.remove(got)
                        wname = got[0]
                    holding[wname] = r
                    target = f"{wname}{sl}"
                self.ns[f"k{p}"] = into
                body.append(f"t{rid} = k{p}({', '.join(args)}, out={target})")
                continue
            self.ns[f"k{p}"], self.ns[f"a{p}"] = node.op.kernel, dict(node.attrs)
            body.append(f"t{rid} = k{p}({''.join(a + ', ' for a in args)}**a{p})")
            if r in outputs:
                body.append(f"o{rid}{store} = t{rid}")
        if whole:
            self.lines.extend(f"    {b}" for b in body)
        elif shape:
            emit(f"    for i in range(0, {n}, {rows}):")
            emit(f"        s = slice(i, i + {rows})")
            emit(f"        m = min({rows}, {n} - i)")
            self.lines.extend(f"        {b}" for b in body)
        else:
            emit("    s = ...")
            self.lines.extend(f"    {b}" for b in body)


    def native_group(self, g: Group, size: int) -> bool:
        """Emit ``g`` as one call of its C kernel if it qualifies (COMP-13); else False."""
        if self.native is False or (self.native == "auto" and not native_pays(
                size, len(g.members))):
            return False
        got = compiling_native.group_source(self.plan.graph.nodes, g.members, g.values,
                                            g.outputs, size, frozenset(self.splats))
        if got is None:
            return False
        source, ext, outs = got
        kernel = compiling_native.build(source, len(ext) + len(outs))
        if kernel is None:
            return False
        gid = self.native_kernels
        self.native_kernels += 1
        self.ns[f"nk{gid}"] = kernel
        args = []
        names = []  # operands bound to names: a copy made by contig must outlive the call
        for v in ext:
            splat = self.splats.get(v)
            if splat is not None:  # its one element's address, read at [0] (held in ns)
                self.ns[f"p{self.plan.ids[v]}"] = splat.ctypes.data
                args.append(f"p{self.plan.ids[v]}")
                continue
            name = f"c{self.plan.ids[v]}"
            names.append(name)
            self.lines.append(f"    {name} = contig({self.name(v)}, {self.dtype(v)})")
            args.append(f"address({name})")
        args += [f"address({self.name(v)})" for v in outs]
        if self.threads > 1 and size >= compiling_native.PARALLEL_MIN:
            self.lines.append(f"    parallel(nk{gid}, {size}, {self.threads}, {', '.join(args)})")
        else:
            self.lines.append(f"    nk{gid}(0, {size}, {', '.join(args)})")
        if names:
            self.lines.append(f"    del {', '.join(names)}")
        return True


class CompiledPlan:
    """One compiled graph: ``run(inputs)`` has ``execute``'s semantics (EXEC-4..7)."""

    def __init__(self, graph: Graph, plan: Plan, block: int, native: bool | str = False,
                 threads: int = 1) -> None:
        self.graph = graph
        self.plan = plan
        gen = _Gen(plan, block, native, threads)
        self.source = gen.source()
        self.native_kernel_count = gen.native_kernels
        code = compile(self.source, f"<compiled plan {graph.name}>", "exec")
        exec(code, gen.ns)
        self._fn = gen.ns["plan"]

    @property
    def kernel_count(self) -> int:
        """The number of fused kernels (generated block loops) in the plan."""
        return len(self.plan.groups)

    @property
    def buffer_count(self) -> int:
        """Full-size buffers the liveness plan allocates for fused kernels' outputs."""
        return len(self.plan.slot_types)

    def run(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        """Validate ``inputs`` (EXEC-7), run, return fresh outputs (EXEC-5)."""
        validate_inputs("CompilingExecutor", self.graph, inputs)
        return self.run_validated(inputs)

    def run_validated(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        """``run`` for inputs a caller has validated against this plan's graph already."""
        token = ignore_fp_errors()  # IEEE results, never warnings (NUM-5)
        try:
            outs = self._fn(list(inputs))
        except Exception as e:
            e.add_note(f"while running the compiled plan of graph {self.graph.name!r}")
            raise
        finally:
            restore_fp_errors(token)
        return fresh_outputs(outs, inputs)


class CompilingExecutor:
    """Compiles each graph once (cached per instance by structural key, LRU of
    ``cache_size`` plans) and runs the compiled plan (COMP-1..COMP-9)."""

    def __init__(self, cache_size: int = CACHE_SIZE, block: int = BLOCK,
                 native: bool | str = "auto", threads: int | None = None) -> None:
        if native not in (True, False, "auto"):
            raise ValueError(f"CompilingExecutor: native={native!r}; expected 'auto', True "
                             "or False [COMP-13]")
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ValueError(f"CompilingExecutor: threads={threads!r}; expected a positive "
                             "int or None (the CPUs this process may use) [COMP-19]")
        self.cache_size, self.block, self.native = cache_size, block, native
        self.threads = threads or compiling_native.usable_cpus()
        self._cache: PlanCache[Hashable, CompiledPlan] = PlanCache(cache_size)

    def __repr__(self) -> str:
        return (f"CompilingExecutor(cache_size={self.cache_size!r}, block={self.block!r}, "
                f"native={self.native!r}, threads={self.threads!r})")

    def refusal(self, graph: Graph) -> str | None:
        """Why ``graph`` cannot be compiled, or None; changes nothing (COMP-8)."""
        if graph.outputs is None:
            return "graph has no outputs (call graph.output(...))"
        for v in graph.inputs:
            if not v.type.device.is_cpu():
                return f"input on {v.type.device} (this executor compiles for CPUs only)"
        for node in graph.nodes:
            if REGISTRY.get(node.op.name) is not node.op:
                return f"unregistered op {node.op.name!r}"
            for r in node.results:
                if not r.type.device.is_cpu():
                    return f"{node.op.name} produces a value on {r.type.device}"
        return None

    def compile(self, graph: Graph) -> CompiledPlan:
        """The compiled plan of ``graph``; ``UnsupportedGraphError`` before any side effect."""
        why = self.refusal(graph)
        if why is not None:
            raise UnsupportedGraphError(f"CompilingExecutor: graph {graph.name!r} refused: "
                                        f"{why} [COMP-8]")
        low = lowered(graph)  # a lowered copy: the graph given stays as it is (EXEC-15)
        return self._cache.get_or_build(structural_key(low), lambda: CompiledPlan(
            low, plan_graph(low), self.block, self.native, self.threads))

    @property
    def compiles(self) -> int:
        """Plans built (cache misses), for tests."""
        return self._cache.builds

    def cached_plans(self) -> int:
        return len(self._cache)

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
        return self.compile(graph).run(inputs)
