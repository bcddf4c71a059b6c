"""Call sequences for the multi-execution state family (CONF-90, ``test_state.py``).

A sequence is a list of :class:`Step` s that one executor instance runs in order. It is
deterministic in its family and seed, and reuses a small set of graph structures (each
called several times with fresh inputs), so a compiling executor pays for few structures
and a JIT switches from interpreting to compiled code mid-sequence. Step kinds:

``value``   judged against the reference like any differential case (``check_case``)
``bad``     inputs that do not match the graph (count, dtype, shape): not judged, an
            executor may raise anything (only the reference must, EXEC-7)
``probe``   a graph an executor may refuse (a buffer on ``gpu:0``, which the reference
            refuses; a graph whose only effect is a store): not judged
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from interpreter.dtype import DType
from interpreter.graph import ops
from interpreter.graph.core import BufferValue, Graph
from interpreter.graph.lowering import lower
from interpreter.registry import REGISTRY
from interpreter.types import BufferType, DeviceRef, TensorType

from .strategies import build_random_graph, case_from_call

__all__ = ["FAMILIES", "SMOKE_FAMILIES", "Step", "build_sequence", "lifetime_pool"]

KINDS = ("value", "bad", "probe")


@dataclass
class Step:
    """One executor call: a graph and the inputs to hand over (copies are handed over)."""

    kind: str
    graph: Graph
    inputs: list[np.ndarray]
    note: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown step kind {self.kind!r}; expected one of {KINDS}")

    @cached_property
    def key(self) -> str:
        """The graph's structural hash (computed when asked: the Harness records every
        case it runs)."""
        return self.graph.structural_hash()

    def describe(self) -> str:
        what = {"value": "", "bad": " (mismatched inputs)", "probe": " (a probe)"}[self.kind]
        return f"graph {self.graph.name!r}{what}" + (f": {self.note}" if self.note else "")


Make = Callable[[np.random.Generator], list[np.ndarray]]


def _graph(name: str, types: list[Any], body: Callable[..., Any]) -> Graph:
    with Graph(name, input_types=types) as g:
        out = body(*g.inputs)
        g.output(*(out if isinstance(out, tuple) else () if out is None else (out,)))
    return lower(g)


def _t(dtype: DType, shape: tuple[int, ...]) -> TensorType:
    return TensorType(dtype, shape, DeviceRef.CPU())


def _values(rng: np.random.Generator, dtype: DType, shape: tuple[int, ...]) -> np.ndarray:
    np_dtype = dtype.to_numpy()
    if dtype.is_float():
        a = rng.standard_normal(shape) * 4
        return np.asarray(a).astype(np_dtype)
    if dtype.value == "bool":
        return rng.random(shape) < 0.5
    return rng.integers(-20 if dtype.is_signed() else 0, 20, shape).astype(np_dtype)


class _Pool:
    """Structures with their input makers; the sequence draws calls from it."""

    def __init__(self) -> None:
        self.items: list[tuple[Graph, Make, str]] = []

    def add(self, graph: Graph, note: str = "", make: Make | None = None) -> None:
        types = [v.type for v in graph.inputs]

        def default(rng: np.random.Generator) -> list[np.ndarray]:
            return [_values(rng, t.dtype, tuple(t.shape)) for t in types]
        self.items.append((graph, make or default, note))

    def step(self, rng: np.random.Generator, i: int | None = None) -> Step:
        graph, make, note = self.items[int(rng.integers(len(self.items))) if i is None else i]
        return Step("value", graph, make(rng), note)


# -- structures --------------------------------------------------------------------------------
F32_34 = _t(DType.float32, (3, 4))


def _unary(builder: Callable[[Any], Any], t: TensorType = F32_34) -> Graph:
    return _graph(f"state_{builder.__name__}_{t.dtype.value}", [t], builder)


def equal_shape_pool() -> _Pool:
    """Structures on equal input types that differ in an op, an attribute or a dtype."""
    p = _Pool()
    for unary in (ops.negate, ops.exp, ops.tanh, ops.floor, ops.abs):
        p.add(_unary(unary), f"{unary.__name__} on float32[3, 4]")
    for d in (DType.float64, DType.float16):
        p.add(_unary(ops.exp, _t(d, (3, 4))), f"exp on {d.value}[3, 4]")
    for binary in (ops.add, ops.sub, ops.mul, ops.max):
        name = binary.__name__
        p.add(_graph(f"state_{name}", [F32_34, F32_34], binary), f"{name} of two float32[3, 4]")
    sq = _t(DType.float32, (4, 4))
    for axis in (0, 1):
        p.add(_graph(f"state_sum{axis}", [sq], lambda x, a=axis: ops.sum(x, a)),
              f"reduce_sum axis {axis} of float32[4, 4]")
    for perm in ((1, 0), (0, 1)):
        p.add(_graph("state_permute", [sq], lambda x, q=perm: ops.permute(x, q) * 1.0),
              f"permute {perm} of float32[4, 4]")
    for c in (2.0, 3.0):
        p.add(_graph("state_scale", [F32_34], lambda x, k=c: x * k), f"x * {c}")
    for d in (DType.int32, DType.float64):
        p.add(_graph("state_cast", [F32_34], lambda x, dd=d: ops.cast(ops.floor(x), dd)),
              f"cast(floor(x)) to {d.value}")
    return p


def buffer_pool() -> _Pool:
    """Buffer lifecycles: created scratch buffers (all zero, MUT-4) written fully or in
    part, loads before and after stores, buffer inputs mutated in place."""
    p = _Pool()
    shape = (3, 4)

    def fill(x: Any) -> Any:
        b = ops.buffer_create(DType.float32, shape)
        ops.buffer_store(b, x)
        return ops.buffer_load(b) + 1.0

    def part(x: Any) -> Any:
        b = ops.buffer_create(DType.float32, shape)
        ops.buffer_store_slice(b, x[0:1], (slice(1, 2),))
        return ops.buffer_load(b)

    def fresh(x: Any) -> Any:
        b = ops.buffer_create(DType.float32, shape)
        before = ops.buffer_load(b)
        ops.buffer_store(b, x * 2.0)
        return before, ops.buffer_load(b)

    def bump(b: BufferValue, x: Any) -> Any:
        old = ops.buffer_load(b)
        ops.buffer_store(b, old + x)
        return old * 1.0

    def bump_slice(b: BufferValue) -> Any:
        ops.buffer_store_slice(b, ops.buffer_load(b)[0:2] * 2.0 + 1.0, (slice(1, 3),))
        return ops.buffer_load(b)

    p.add(_graph("state_create_fill", [F32_34], fill), "buffer_create, store all, load")
    p.add(_graph("state_create_part", [F32_34], part),
          "buffer_create, store one row, load (the other rows stay zero, MUT-4)")
    p.add(_graph("state_create_load_first", [F32_34], fresh),
          "buffer_create, load before any store (all zero, MUT-4), store, load")
    p.add(_graph("state_bump", [F32_34.as_buffer(), F32_34], bump),
          "buffer input += x, old contents returned")
    p.add(_graph("state_bump_slice", [_t(DType.float32, (4,)).as_buffer()], bump_slice),
          "buffer input slice store")
    return p


#: Element counts of the fused chains of ``lifetime_pool`` (CONF-109): past 4,096 and past
#: 32,768, where compilers switch to vectorised, native or threaded code.
TIER_SHAPES = ((64, 65), (257, 129))


def lifetime_pool() -> _Pool:
    """Structures that test how an executor plans memory and switches code paths
    (CONF-109): views of an intermediate read after a same-shaped intermediate, a long skip
    connection, and fused elementwise chains on large arrays ending in every kind of cast."""
    p = _Pool()
    sq = _t(DType.float32, (8, 8))

    def view_after(view: Callable[[Any], Any], what: str) -> None:
        def body(x: Any, y: Any) -> Any:
            # exact ops only: a wrong value is a hard failure, never explained away by
            # per-node tolerances (CONF-30's local check)
            a = x * 0.25 + 1.0  # an intermediate (a fused group's result)
            v = view(a)  # a view of it, read after b is computed
            b = y * 3.0 - 1.0  # same dtype and shape as a
            return v * b + b
        p.add(_graph(f"lifetime_{what}", [sq, sq], body),
              f"{what} view of an intermediate read after a same-shaped intermediate")

    view_after(lambda a: ops.permute(a, (1, 0)), "permuted")
    view_after(lambda a: ops.reshape(ops.reshape(a, (4, 16)), (8, 8)), "reshaped")
    view_after(lambda a: ops.broadcast_to(a[0:1], (8, 8)), "broadcast")

    def sliced(x: Any, y: Any) -> Any:
        a = x * 0.25 + 1.0
        v = a[1:5]
        b = y * 3.0 - 1.0
        return v * b[0:4] + b[4:8]
    p.add(_graph("lifetime_slice", [sq, sq], sliced),
          "slice of an intermediate read after a same-shaped intermediate")

    def skip(x: Any) -> Any:
        a = x * 2.0 + 1.0
        h = a
        for k in range(6):  # same-shaped intermediates, each unfusable across the sum
            h = ops.tanh(h) * float(k + 2)
            h = ops.sum(h, 1)  # [8, 1]
            h = ops.broadcast_to(h, (8, 8)) - a * 0.5
        return h + a
    p.add(_graph("lifetime_skip", [sq], skip), "a long skip connection over 6 stages")

    for shape in TIER_SHAPES:
        f = _t(DType.float32, shape)
        n = shape[0] * shape[1]

        def chain(x: Any, y: Any) -> Any:
            a = x * 1.5 - y
            m = ops.greater(a, y * 0.5)
            s = ops.where(m, a, -a) + 0.25  # |a|-like, always >= 0.25
            return (ops.cast(s, DType.bool), ops.cast(a - s, DType.bool),
                    ops.cast(s * 3.0, DType.int32), ops.cast(ops.floor(s), DType.uint8),
                    ops.cast(s * a - y, DType.float16), ops.logical_and(m, ops.less(y, a)))
        p.add(_graph(f"lifetime_chain_{n}", [f, f], chain),
              f"fused elementwise chain on {n} elements ending in casts to bool, int32, "
              f"uint8, float16")

        i = _t(DType.int32, shape)

        def int_chain(x: Any, y: Any) -> Any:
            a = x * 3 - y
            b = ops.where(ops.greater(a, 0), a, y) + 7
            return (ops.cast(b, DType.bool), ops.cast(ops.cast(a - b, DType.bool), DType.int32),
                    ops.cast(b, DType.float32) * 0.5)
        p.add(_graph(f"lifetime_int_chain_{n}", [i, i], int_chain),
              f"fused int32 chain on {n} elements ending in casts to bool and float32")
    return p


def _pick(sets: list[list[np.ndarray]]) -> Make:
    """Copies of one of ``sets`` (drawn per call)."""
    def make(rng: np.random.Generator) -> list[np.ndarray]:
        return [np.array(a, copy=True) for a in sets[int(rng.integers(len(sets)))]]
    return make


def random_pool(rng: np.random.Generator, graphs: int = 3, max_ops: int = 8) -> _Pool:
    """Random registry graphs (``build_random_graph``), each with its input sets, and one
    single-op case of some registry ops (their sampler's values)."""
    p = _Pool()
    for _ in range(graphs):
        seed = int(rng.integers(2**32))
        case = build_random_graph(seed, int(rng.integers(2, max_ops + 1)),
                                  name=f"state_random_{seed}", input_sets=4)
        p.add(case.graph, f"random graph seed {seed}",
              _pick([case.inputs, *case.extra_inputs]))
    from interpreter.testing.sampling import RandomArgSource

    names = sorted(n for n, op in REGISTRY.items() if op.sample is not None
                   and op.category in ("elementwise-binary", "reduction", "shape"))
    for name in rng.choice(names, size=2, replace=False):
        op = REGISTRY[str(name)]
        seed = int(rng.integers(1000))
        try:
            case = case_from_call(op, op.sample(RandomArgSource(seed)),  # type: ignore[misc]
                                  name=f"state_{name}")
        except Exception:
            continue  # a call that does not stage is no structure of the pool
        if not case.graph.outputs:
            continue
        p.add(case.graph, f"{name} sample seed {seed}", _pick([case.inputs]))
    return p


# -- steps that are not judged ---------------------------------------------------------------
def bad_step(rng: np.random.Generator, pool: _Pool) -> Step:
    """A structure of ``pool`` called with inputs that do not match it."""
    graph, make, note = pool.items[int(rng.integers(len(pool.items)))]
    inputs = make(rng)
    how = int(rng.integers(3))
    if how == 0 or not inputs:
        inputs = [*inputs, inputs[0] if inputs else np.zeros(3, np.float32)]
        what = "one input too many"
    elif how == 1:
        wrong = np.float64 if inputs[0].dtype != np.float64 else np.float32
        inputs = [inputs[0].astype(wrong), *inputs[1:]]
        what = f"input 0 as {np.dtype(wrong)}"
    else:
        inputs = [np.zeros((*inputs[0].shape, 2), inputs[0].dtype), *inputs[1:]]
        what = "input 0 of another shape"
    return Step("bad", graph, inputs, f"{note}: {what}")


def probe_steps() -> list[Step]:
    """Graphs an executor may refuse (EXEC-2): a store into a buffer on ``gpu:0`` (the
    reference refuses it) and a graph whose only effect is a store (no outputs)."""
    gpu = BufferType(DType.float32, (3,), DeviceRef.GPU(0))

    def inc(b: BufferValue) -> Any:
        ops.buffer_store(b, ops.buffer_load(b) + 1.0)
        return ops.buffer_load(b)

    def store_only(b: BufferValue) -> None:
        ops.buffer_store(b, ops.buffer_load(b) * 2.0)

    cpu = BufferType(DType.float32, (3,), DeviceRef.CPU())
    return [Step("probe", _graph("state_probe_gpu", [gpu], inc),
                 [np.array([1.0, 2.0, 3.0], np.float32)], "a buffer on gpu:0"),
            Step("probe", _graph("state_probe_no_outputs", [cpu], store_only),
                 [np.array([1.0, 2.0, 3.0], np.float32)], "no outputs")]


# -- families ------------------------------------------------------------------------------------
def _same_structure(rng: np.random.Generator, n: int) -> list[Step]:
    """Two structures (a random graph and an elementwise one), each called with fresh
    inputs over and over, with mismatched inputs for them in between."""
    p = random_pool(rng, graphs=1)
    p.items = p.items[:1]
    p.add(_unary(ops.tanh), "tanh on float32[3, 4]")
    out = []
    for i in range(n):
        out.append(bad_step(rng, p) if i % 7 == 6 else p.step(rng, i % 2))
    return out


def _equal_shapes(rng: np.random.Generator, n: int) -> list[Step]:
    p = equal_shape_pool()
    order = [int(i) for i in rng.permutation(len(p.items))]
    return [p.step(rng, order[i % len(order)]) if i < len(order) else p.step(rng)
            for i in range(n)]


def _buffers(rng: np.random.Generator, n: int) -> list[Step]:
    p = buffer_pool()
    return [p.step(rng, i % len(p.items)) if i < len(p.items) else p.step(rng)
            for i in range(n)]


def _failures_between(rng: np.random.Generator, n: int) -> list[Step]:
    """Calls that raise or are refused between calls of the same structures."""
    p = equal_shape_pool()
    p.items = [p.items[int(i)] for i in rng.choice(len(p.items), 3, replace=False)]
    probes = probe_steps()
    out: list[Step] = []
    for i in range(n):
        r = i % 3
        out.append(p.step(rng) if r == 0 else bad_step(rng, p) if r == 1 or i % 9 != 2
                   else probes[(i // 9) % len(probes)])
    return out


def _lifetimes(rng: np.random.Generator, n: int) -> list[Step]:
    """Every structure of ``lifetime_pool`` in turn, then drawn (CONF-109)."""
    p = lifetime_pool()
    return [p.step(rng, i % len(p.items)) if i < len(p.items) else p.step(rng)
            for i in range(n)]


def _interleaved(rng: np.random.Generator, n: int) -> list[Step]:
    """Everything mixed: random graphs, registry samples, equal-shape twins, buffer
    lifecycles, mismatched inputs and refused graphs."""
    pools = [random_pool(rng, graphs=2), equal_shape_pool(), buffer_pool()]
    pools[1].items = [pools[1].items[int(i)] for i in rng.choice(len(pools[1].items), 4,
                                                               replace=False)]
    pools[2].items = [pools[2].items[int(i)] for i in rng.choice(len(pools[2].items), 3,
                                                               replace=False)]
    probes = probe_steps()
    out: list[Step] = []
    for _ in range(n):
        u = rng.random()
        pool = pools[int(rng.integers(len(pools)))]
        out.append(probes[int(rng.integers(len(probes)))] if u < 0.05
                   else bad_step(rng, pool) if u < 0.15 else pool.step(rng))
    return out


FAMILIES: dict[str, Callable[[np.random.Generator, int], list[Step]]] = {
    "same_structure": _same_structure,
    "equal_shapes": _equal_shapes,
    "buffers": _buffers,
    "failures_between": _failures_between,
    "lifetimes": _lifetimes,
    "interleaved": _interleaved,
}

#: The families ``--conformance-smoke`` keeps (CONF-35).
SMOKE_FAMILIES = ("buffers", "lifetimes", "interleaved")


def build_sequence(family: str, seed: int, calls: int) -> list[Step]:
    """The ``calls`` steps of ``family`` for ``seed`` (deterministic)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown state sequence family {family!r}; expected one of "
                         f"{sorted(FAMILIES)} [CONF-90]")
    return FAMILIES[family](np.random.default_rng(seed), calls)
