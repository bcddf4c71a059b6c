"""The suite's vocabulary of generated inputs, all driven by the op registry.

Read top to bottom:

* ``dtypes()``, ``shapes()``, ``arrays()``: hypothesis strategies for element types, shapes
  (rank 0, empty dims, size-1 broadcast dims) and arrays with special values (NaN, +-inf,
  +-0, subnormals, extremes, integer min/max; ``interpreter.testing.sampling.special_values``).
* :class:`HypothesisArgSource`: the registry's ``ArgSource`` protocol on top of hypothesis, so
  every op's ``OpDef.sample`` draws through hypothesis (and shrinks). It can *pin* the data
  dtype (the draw a sampler marks ``data=True``, OPDT-3) and bias every shape towards a
  **shape class** (``SHAPE_CLASSES``).
* ``single_op_calls(op)``: a strategy of :class:`Case` (a one-op graph plus its inputs).
* ``random_graphs(ops)``: a strategy of type-correct DAGs of up to ~30 ops built from the
  registry's sample functions: earlier values are reused where the type fits, adapted by
  ``cast``/``reshape``/``broadcast_to`` where it nearly fits, and otherwise become new graph
  inputs (tensors, or mutable buffers for store/load operands; seeds for random ops).
  A share of the graphs (``INTERLEAVE_SHARE``) gets bursts of interleaved loads, stores and
  slice stores on one buffer (CONF-96).

Nothing here names an op's semantics: a new registry op with a ``sample`` function is covered
without touching the suite. Array *values* come from a numpy generator seeded by hypothesis
(drawing every element through hypothesis costs ~30x more, array-api-tests #197); shapes,
dtypes, attributes and graph structure are drawn (and shrunk) by hypothesis itself.
"""

from __future__ import annotations

import functools
import math
import random
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from hypothesis import strategies as st

from interpreter.dtype import DType
from interpreter.errors import EagerConformanceError
from interpreter.graph import ops as builders
from interpreter.graph.core import BufferValue, Graph, TensorValue, Value
from interpreter.graph.lowering import lower
from interpreter.promotion import broadcast_shapes, promote_dtypes
from interpreter.registry import REGISTRY, OpDef, op_with, ops_with
from interpreter.registry.core import OpCall
from interpreter.testing.sampling import RandomArgSource, special_values
from interpreter.types import BufferType, DeviceRef, TensorType, ValueType
from interpreter.validators import sliced_shape

__all__ = [
    "INPUT_SETS",
    "LONG_SIDE",
    "REACH_ELEMENTS",
    "REACH_SIDES",
    "SHAPE_CLASSES",
    "TIER_ELEMENTS",
    "TIER_SIDE",
    "BiasedArgSource",
    "Case",
    "HypothesisArgSource",
    "ReplayArgSource",
    "RngArgSource",
    "arrays",
    "build_random_graph",
    "call_dtype",
    "case_from_call",
    "cell_gaps",
    "dtypes",
    "extra_input_sets",
    "feasible_cells",
    "graph_families",
    "observe_buffer",
    "random_graphs",
    "reach_case",
    "reach_cases",
    "reach_headlines",
    "shape_class_of",
    "shapes",
    "single_op_calls",
    "special_input_sets",
    "special_values",
    "tier_case",
]

T = TypeVar("T")

#: Shape classes of the op x dtype x shape-class matrix.
#: ``scalar``: every drawn shape has rank 0; ``empty``: some dimension is 0;
#: ``broadcast``: a size-1 dimension, or operands of a broadcasting op differ in shape;
#: ``general``: everything else (rank >= 1, dims >= 2).
SHAPE_CLASSES = ("scalar", "empty", "broadcast", "general")

#: How likely ``values(kind="any")`` is to use each special-value rate.
_SPECIAL_RATES = (0.0, 0.2, 0.6)

#: Special-value rates of the extra input sets every generated graph also runs on (CONF-30):
#: a compiling executor pays per graph structure, so each graph is reused for
#: ``INPUT_SETS`` value sets (the drawn one plus one per rate), special values spread
#: across them.
EXTRA_SET_RATES = (0.0, 0.3, 0.8)
INPUT_SETS = 1 + len(EXTRA_SET_RATES)

#: Shape buckets (CONF-31): dimension sizes a biased source draws from, so that graph
#: structures repeat within a cell (0 only where a dimension may be empty).
SIDE_BUCKETS = (0, 1, 2, 3, 5)

#: Axis lengths of the reach structures (CONF-86): around vector and tile widths, and one
#: above 4096 (``LONG_SIDE``), each operand within ``REACH_ELEMENTS`` elements.
REACH_SIDES = (7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257)
LONG_SIDE = 4097
REACH_ELEMENTS = 5000
#: The headline axis of the tier structures (CONF-150): above the element counts from which
#: compilers switch an elementwise loop to another code path (2^15: ``CompilingExecutor``'s
#: native C tier; 2^16; a 16384-element block loop's fourth block), odd, so every vector
#: width and block size leaves a remainder; each operand within ``TIER_ELEMENTS`` elements.
TIER_SIDE = 65537
TIER_ELEMENTS = 3 * TIER_SIDE
#: ``max_side`` of ``ArgSource.shape`` below this: axes the op keeps short (CONF-86).
SHORT_MAX_SIDE = 5


# -- basic strategies ----------------------------------------------------------------------
def dtypes(allowed: Iterable[DType] | None = None) -> st.SearchStrategy[DType]:
    """Element types (all of ``DType`` by default), in a stable order."""
    return st.sampled_from(sorted(DType if allowed is None else allowed, key=lambda d: d.value))


def shapes(min_rank: int = 0, max_rank: int = 4, min_side: int = 0, max_side: int = 5
           ) -> st.SearchStrategy[tuple[int, ...]]:
    """Shapes; shrink towards rank 0 and small sides (so 0-d, empty and size-1 dims occur)."""
    return st.lists(st.integers(min_side, max_side), min_size=min_rank,
                    max_size=max_rank).map(tuple)


@st.composite
def arrays(draw: Any, dtype: DType | st.SearchStrategy[DType],
           shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]], kind: str = "any"
           ) -> np.ndarray:
    """Arrays of ``dtype``/``shape``; ``kind`` as in the ``ArgSource`` protocol.

    ``kind="any"`` mixes in special values at a drawn rate (0, 20% or 60% of elements).
    """
    d = draw(dtype) if isinstance(dtype, st.SearchStrategy) else dtype
    s = draw(shape) if isinstance(shape, st.SearchStrategy) else shape
    seed = draw(st.integers(0, 2**32 - 1))
    rate = draw(st.sampled_from(_SPECIAL_RATES))
    return RandomArgSource(seed, rate).values(d, tuple(s), kind)


# -- ArgSource implementations -------------------------------------------------------------
class BiasedArgSource:
    """``ArgSource`` with a pinned data dtype and shapes biased to a shape class.

    ``pin_dtype`` is returned by the draw the sampler marks ``data=True`` (OPDT-3) whenever it
    is allowed there; other dtype draws (a seed, indices, a cast target) stay random.
    Subclasses provide the primitive draws ``_int`` and ``_values``. Every shape handed out is
    recorded in ``drawn_shapes`` (used by :func:`shape_class_of`), every data dtype in
    ``data_draws``, every ``values`` array with its kind in ``value_draws`` (CONF-103:
    :meth:`operand_kinds`).

    With ``reach`` (an axis length, CONF-86) it is a *reach* source: the first long axis it
    hands out (``shape`` or ``axis_size``) has length ``reach``, further ones a length from
    ``REACH_SIDES`` or 1..3, every operand within ``reach_elements`` elements (``rest``;
    ``REACH_ELEMENTS``, or ``TIER_ELEMENTS`` for a tier structure, CONF-150).
    """

    def __init__(self, pin_dtype: DType | None = None, shape_class: str | None = None,
                 reach: int | None = None, reach_elements: int = REACH_ELEMENTS) -> None:
        self.pin_dtype = pin_dtype
        self.shape_class = shape_class
        self.reach = reach
        self.reach_elements = reach_elements
        self.reach_placed = False
        self.drawn_shapes: list[tuple[int, ...]] = []
        self.data_draws: list[DType] = []
        self.value_draws: list[tuple[np.ndarray, str]] = []

    def operand_kinds(self, call: OpCall) -> tuple[str | None, ...]:
        """The ``values`` kind each operand of ``call`` was drawn with (None: an operand
        the sampler did not take from ``values`` as it is)."""
        return tuple(next((k for b, k in self.value_draws if b is a), None)
                     for a in call.operands)

    def _int(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def _values(self, dtype: DType, shape: tuple[int, ...], kind: str) -> np.ndarray:
        raise NotImplementedError

    # -- the protocol ------------------------------------------------------------------
    def dtype(self, allowed: Iterable[DType], data: bool = False) -> DType:
        options = sorted(allowed, key=lambda d: d.value)
        if data and self.pin_dtype is not None and self.pin_dtype in options:
            out = self.pin_dtype
        else:
            out = options[self._int(0, len(options) - 1)]
        if data:
            self.data_draws.append(out)
        return out

    def shape(self, min_rank: int = 0, max_rank: int = 4, min_side: int = 0,
              max_side: int = 5, rest: int = 1) -> tuple[int, ...]:
        if self.reach is not None and max_rank >= 1:
            got = (self._reach_shape(min_rank, max_rank, min_side, rest)
                   if max_side >= SHORT_MAX_SIDE else
                   self._short_shape(min_rank, max_rank, min_side, max_side, rest))
            self.drawn_shapes.append(got)
            return got
        cls = self.shape_class
        lo_rank = min_rank if cls in (None, "scalar") else max(1, min_rank)
        if cls == "scalar" and min_rank == 0:
            out: tuple[int, ...] = ()
        else:
            rank = self._int(lo_rank, max(lo_rank, max_rank))
            lo_side = min_side
            if cls == "general" and max_side >= max(2, min_side):
                lo_side = max(2, min_side)
            elif cls == "broadcast" and min_side <= 1 <= max_side:
                lo_side = max(1, min_side)
            sides = [self._side(lo_side, max(lo_side, max_side)) for _ in range(rank)]
            if rank and cls == "empty" and min_side == 0 and 0 not in sides:
                sides[self._int(0, rank - 1)] = 0
            if rank and cls == "broadcast" and min_side <= 1 <= max_side and 1 not in sides:
                sides[self._int(0, rank - 1)] = 1
            out = tuple(sides)
        self.drawn_shapes.append(out)
        return out

    def _side(self, lo: int, hi: int) -> int:
        """A dimension size in ``[lo, hi]`` from ``SIDE_BUCKETS`` where one fits."""
        sides = [s for s in SIDE_BUCKETS if lo <= s <= hi]
        return sides[self._int(0, len(sides) - 1)] if sides else self._int(lo, hi)

    def axis_size(self, lo: int, hi: int, rest: int = 1) -> int:
        return self.integer(lo, hi) if self.reach is None else self._reach_side(lo, rest)

    # -- reach mode (CONF-86) ----------------------------------------------------------
    def _reach_side(self, lo: int, rest: int) -> int:
        """A long axis: ``reach`` the first time it fits, then a reach size or 1..3."""
        room = self.reach_elements // max(1, rest)
        assert self.reach is not None
        if not self.reach_placed and lo <= self.reach <= room:
            self.reach_placed = True
            return self.reach
        sizes = [s for s in REACH_SIDES if lo <= s <= room]
        if sizes and self._int(0, 3):
            return sizes[self._int(0, len(sizes) - 1)]
        small = [s for s in (1, 2, 3) if lo <= s <= room] or [max(lo, 1)]
        return small[self._int(0, len(small) - 1)]

    def _reach_shape(self, min_rank: int, max_rank: int, min_side: int, rest: int
                     ) -> tuple[int, ...]:
        lo_rank = max(1, min_rank)
        rank = self._int(lo_rank, max(lo_rank, min(max_rank, 3)))
        first = self._int(0, rank - 1)  # where the headline length goes
        sides = [0] * rank
        for i in [first, *(j for j in range(rank) if j != first)]:
            sides[i] = self._reach_side(min_side, rest)
            rest *= sides[i]
        return tuple(sides)

    def _short_shape(self, min_rank: int, max_rank: int, min_side: int, max_side: int,
                     rest: int = 1) -> tuple[int, ...]:
        """An axis the op keeps short: buckets, never empty (a reach structure is not the
        empty class), and no longer than ``rest`` leaves room for (1 when it leaves none)."""
        lo = max(1, min_side) if max_side >= 1 else min_side
        rank = self._int(min_rank, max_rank)
        sides = []
        for _ in range(rank):
            hi = max(lo, min(max_side, self.reach_elements // max(1, rest)))
            sides.append(self._side(lo, hi))
            rest *= max(1, sides[-1])
        return tuple(sides)

    def integer(self, lo: int, hi: int) -> int:
        return self._int(lo, hi)

    def choice(self, options: Sequence[T]) -> T:
        return options[self._int(0, len(options) - 1)]

    def boolean(self) -> bool:
        return self._int(0, 1) == 1

    def values(self, dtype: DType, shape: tuple[int, ...], kind: str = "any") -> np.ndarray:
        out = self._values(dtype, tuple(shape), kind)
        self.value_draws.append((out, kind))
        return out


class HypothesisArgSource(BiasedArgSource):
    """``ArgSource`` drawing from a hypothesis ``data`` object (``st.data()``)."""

    def __init__(self, data: Any, pin_dtype: DType | None = None,
                 shape_class: str | None = None) -> None:
        super().__init__(pin_dtype, shape_class)
        self.data = data
        self.int_draws: list[int] = []  # every structural draw, for ReplayArgSource

    def _int(self, lo: int, hi: int) -> int:
        out = lo if lo >= hi else int(self.data.draw(st.integers(lo, hi)))
        self.int_draws.append(out)
        return out

    def _values(self, dtype: DType, shape: tuple[int, ...], kind: str) -> np.ndarray:
        out: np.ndarray = self.data.draw(arrays(dtype, shape, kind))
        return out


class RngArgSource(BiasedArgSource):
    """``ArgSource`` over a seeded PRNG: fast, reproducible (random graphs, probing)."""

    def __init__(self, seed: int, pin_dtype: DType | None = None,
                 shape_class: str | None = None, values_seed: int | None = None,
                 special_rate: float = 0.2, reach: int | None = None,
                 reach_elements: int = REACH_ELEMENTS) -> None:
        super().__init__(pin_dtype, shape_class, reach, reach_elements)
        self.rng = random.Random(seed)
        self.arrays = RandomArgSource(seed if values_seed is None else values_seed,
                                      special_rate=special_rate)

    def _int(self, lo: int, hi: int) -> int:
        return lo if lo >= hi else self.rng.randint(lo, hi)

    def _values(self, dtype: DType, shape: tuple[int, ...], kind: str) -> np.ndarray:
        return self.arrays.values(dtype, shape, kind)


class ReplayArgSource(BiasedArgSource):
    """Replays the structural draws of a :class:`HypothesisArgSource` (shapes, dtypes,
    attributes) with fresh values: the same graph structure on another input set."""

    def __init__(self, int_draws: Sequence[int], seed: int, special_rate: float,
                 pin_dtype: DType | None = None, shape_class: str | None = None) -> None:
        super().__init__(pin_dtype, shape_class)
        self.replay = list(int_draws)
        self.pos = 0
        self.arrays = RandomArgSource(seed, special_rate)

    def _int(self, lo: int, hi: int) -> int:
        if self.pos >= len(self.replay) or not lo <= self.replay[self.pos] <= max(lo, hi):
            raise _ReplayDiverged
        self.pos += 1
        return self.replay[self.pos - 1]

    def _values(self, dtype: DType, shape: tuple[int, ...], kind: str) -> np.ndarray:
        return self.arrays.values(dtype, shape, kind)


class SpecialReplayArgSource(ReplayArgSource):
    """A replay (:class:`ReplayArgSource`) whose value arrays are all special value number
    ``j`` of their dtype, the k-th array shifted by k places (CONF-99); index arrays keep
    random values."""

    def __init__(self, int_draws: Sequence[int], j: int, pin_dtype: DType | None = None,
                 shape_class: str | None = None) -> None:
        super().__init__(int_draws, j, 0.0, pin_dtype, shape_class)
        self.j = j
        self.k = 0

    def _values(self, dtype: DType, shape: tuple[int, ...], kind: str) -> np.ndarray:
        if kind.startswith(("index:", "uindex:")):
            return self.arrays.values(dtype, shape, kind)
        sv = special_values(dtype)
        self.k += 1
        return np.full(shape, sv[(self.j + self.k - 1) % len(sv)], dtype=sv.dtype)


def special_input_sets(op: OpDef, int_draws: Sequence[int], case: Case,
                       pin_dtype: DType | None) -> list[list[np.ndarray]]:
    """Input sets of a ``scalar`` cell's graph enumerating the special set (CONF-99): one per
    special value of the data dtype (a replay whose structure differs is dropped)."""
    assert op.sample is not None
    want = case.graph.structural_hash()
    n = len(special_values(pin_dtype)) if pin_dtype is not None else 2
    out: list[list[np.ndarray]] = []
    for j in range(n):
        again = SpecialReplayArgSource(int_draws, j, pin_dtype, "scalar")
        try:
            other = case_from_call(op, op.sample(again))
        except Exception:  # replay diverged or the call does not stage: no such set
            continue
        if other.graph.structural_hash() == want:
            out.append(other.inputs)
    return out


class _ReplayDiverged(Exception):
    """The sampler took another path on replay (its structure depends on values)."""


def extra_input_sets(op: OpDef, src: HypothesisArgSource, case: Case, seed: int
                     ) -> list[list[np.ndarray]]:
    """Further input sets for ``case``'s graph (CONF-30): ``op.sample`` replayed with the
    structural draws of ``src`` and fresh values at each of ``EXTRA_SET_RATES``. A replay
    whose graph differs in structure (e.g. a ``constant``'s value) is dropped."""
    assert op.sample is not None
    want = case.graph.structural_hash()
    out: list[list[np.ndarray]] = []
    for k, rate in enumerate(EXTRA_SET_RATES):
        again = ReplayArgSource(src.int_draws, (seed + k) & 0xFFFFFFFF, rate, src.pin_dtype,
                                src.shape_class)
        try:
            other = case_from_call(op, op.sample(again))
        except Exception:  # replay diverged or the call does not stage: no extra set
            continue
        if other.graph.structural_hash() == want:
            out.append(other.inputs)
    return out


# -- reach structures (CONF-86) --------------------------------------------------------------
def reach_headlines(op: OpDef, dtype: DType) -> tuple[int, ...]:
    """The headline axis lengths of ``(op, dtype)``'s reach structures (CONF-86): one from
    ``REACH_SIDES``, rotating over the op's data dtypes (so an op with n dtypes meets n of
    them), and ``LONG_SIDE``."""
    dts = sorted(op.data_dtypes, key=lambda d: d.value)
    i = (zlib.crc32(op.name.encode()) + (dts.index(dtype) if dtype in dts else 0)) \
        % len(REACH_SIDES)
    return (REACH_SIDES[i], LONG_SIDE)


def reach_case(op: OpDef, dtype: DType, reach: int, tries: int = 8,
               elements: int = REACH_ELEMENTS) -> Case | None:
    """A one-op case of ``op`` at data dtype ``dtype`` drawn by a reach source (CONF-86)
    whose headline axis ``reach`` the sampler took, with its extra input sets (CONF-30);
    ``None`` where no try of ``op.sample`` takes a long axis (its axes are all short).
    ``elements`` bounds each drawn operand (``TIER_ELEMENTS`` for a tier structure, whose
    largest result must also hold at least ``reach`` elements, CONF-150)."""
    if op.sample is None:
        return None
    for t in range(tries):
        seed = zlib.crc32(f"reach/{op.name}/{dtype.value}/{reach}/{t}".encode())
        src = RngArgSource(seed, dtype, reach=reach, reach_elements=elements)
        try:
            call = op.sample(src)
            if not src.reach_placed or call_dtype(op, call) != dtype:
                continue
            case = case_from_call(op, call)
            shapes = [*(a.shape for a in call.operands), tuple(call.attrs.get("shape", ())),
                      *(v.type.shape for v in case.graph.outputs or ())]
            if max((s for sh in shapes for s in sh), default=0) < min(REACH_SIDES):
                continue  # the sampler resized the long axis away
            if reach == TIER_SIDE and max((math.prod(v.type.shape) for v in
                                           case.graph.outputs or ()), default=0) < reach:
                continue  # a tier structure: its result holds the long axis (CONF-150)
        except Exception:  # a sampler path that does not stage: try the next seed
            continue
        case.shape_class = "reach"
        want = case.graph.structural_hash()
        for k, rate in enumerate(EXTRA_SET_RATES):
            again = RngArgSource(seed, dtype, values_seed=(seed * 7919 + k + 1) & 0xFFFFFFFF,
                                 special_rate=rate, reach=reach, reach_elements=elements)
            try:
                other = case_from_call(op, op.sample(again))
            except Exception:  # the replay does not stage: no extra set
                continue
            if other.graph.structural_hash() == want:
                case.extra_inputs.append(other.inputs)
        return case
    return None


@functools.cache
def reach_cases(op: OpDef, dtype: DType) -> tuple[Case, ...]:
    """The reach structures of ``(op, dtype)`` (CONF-86), one per headline that fits."""
    got = (reach_case(op, dtype, r) for r in reach_headlines(op, dtype))
    return tuple(c for c in got if c is not None)


@functools.cache
def tier_case(op: OpDef, dtype: DType) -> Case | None:
    """The tier structure of ``(op, dtype)`` (CONF-150): a one-op case whose headline axis is
    ``TIER_SIDE`` long and whose result holds at least that many elements; None where the
    sampler takes no such axis."""
    case = reach_case(op, dtype, TIER_SIDE, elements=TIER_ELEMENTS)
    if case is not None:
        case.shape_class = "tier"
    return case


# -- classifying a sampled call -----------------------------------------------------------
def call_dtype(op: OpDef, call: OpCall) -> DType | None:
    """The dtype cell of a call: its data dtype (OPDT-3). That is operand ``op.data_operand``
    after promotion, or, for ops without one, the result dtype: the ``dtype`` attribute (the
    ``value`` attribute's dtype for ``constant``)."""
    k = op.data_operand
    if call.operands and k is not None and k < len(call.operands):
        ds = [DType.from_numpy(a.dtype) for a in call.operands]
        if k in op.promote and all(i < len(ds) for i in op.promote):
            promoted = promote_dtypes([ds[i] for i in op.promote])
            return promoted if promoted is not None else ds[k]
        return ds[k]
    d = call.attrs.get("dtype")
    if isinstance(d, DType):
        return d
    v = call.attrs.get("value")
    if isinstance(v, np.ndarray):
        return DType.from_numpy(v.dtype)
    return None


def shape_class_of(op: OpDef, call: OpCall, drawn: Sequence[tuple[int, ...]] = ()) -> str:
    """The shape class (``SHAPE_CLASSES``) of a sampled call."""
    operand_shapes = [tuple(a.shape) for a in call.operands]
    shapes_ = list(drawn) or operand_shapes or _result_shapes(op, call)
    everything = shapes_ + operand_shapes
    if any(0 in s for s in everything):
        return "empty"
    if shapes_ and all(s == () for s in shapes_):
        return "scalar"
    if any(1 in s for s in shapes_) or (op.broadcast and len(set(operand_shapes)) > 1):
        return "broadcast"
    return "general"


def _result_shapes(op: OpDef, call: OpCall) -> list[tuple[int, ...]]:
    types = [_input_type(a, i in call.buffers) for i, a in enumerate(call.operands)]
    try:
        return [t.shape for t in op.infer(op, types, call.attrs)]
    except Exception:
        return []


# -- cases: a graph plus its inputs --------------------------------------------------------
@dataclass
class Case:
    """A lowered graph, its input arrays (never handed to an executor: pass copies) and
    what it exercises."""

    graph: Graph
    inputs: list[np.ndarray]
    op: str | None = None
    dtype: DType | None = None
    shape_class: str | None = None
    call: OpCall | None = None
    seed: int | None = None
    skipped_ops: list[str] = field(default_factory=list)
    #: further input sets for the same graph (CONF-30), each judged like ``inputs``
    extra_inputs: list[list[np.ndarray]] = field(default_factory=list)
    #: a ``scalar`` cell's input sets over the whole special set, made on demand (CONF-99)
    special_inputs: Callable[[], list[list[np.ndarray]]] | None = None
    #: the ``values`` kind of each input of a one-op case (CONF-103; None: unknown)
    operand_kinds: tuple[str | None, ...] = ()

    def input_copies(self) -> list[np.ndarray]:
        return [np.array(a, copy=True) for a in self.inputs]


def _input_type(a: np.ndarray, buffer: bool) -> ValueType:
    t = TensorType(DType.from_numpy(a.dtype), tuple(a.shape), DeviceRef.CPU())
    return t.as_buffer() if buffer else t


def case_from_call(op: OpDef, call: OpCall, name: str | None = None) -> Case:
    """A one-op graph: inputs typed after the operands (``call.buffers`` as buffers), every
    tensor result an output. Raises the project error if the call does not type-check."""
    types = [_input_type(a, i in call.buffers) for i, a in enumerate(call.operands)]
    with Graph(name or f"conformance_{op.name}", input_types=types) as g:
        results = g.stage(op, list(g.inputs), call.attrs)
        outs = [r for r in results if isinstance(r.type, TensorType)]
        for r in results:
            if isinstance(r.type, BufferType):
                outs += observe_buffer(g, r)
        g.output(*outs)
    lower(g)
    return Case(g, [np.asarray(a) for a in call.operands], op.name, call_dtype(op, call),
                None, call)


def _pattern(t: BufferType) -> np.ndarray:
    """A nonzero value of ``t``'s dtype and shape (1, 2, ..., 7, 1, ...; True for bool)."""
    n = int(np.prod(t.shape, dtype=np.int64))
    raw = np.arange(n, dtype=np.int64) % 7 + 1
    return raw.astype(np.float64).astype(t.dtype.to_numpy()).reshape(t.shape)


def observe_buffer(g: Graph, buf: Value) -> list[Value]:
    """Stage ``load, store(nonzero pattern), load`` on a buffer an op created (MUT-6): the
    first load sees the fresh contents (all zero, MUT-4), the second the store, and a buffer
    kept from a previous execution shows in the first load of the next."""
    t = buf.type
    assert isinstance(t, BufferType) and isinstance(buf, BufferValue) and Graph.current is g
    before = builders.buffer_load(buf)
    builders.buffer_store(buf, builders.constant(_pattern(t), device=t.device))
    after = builders.buffer_load(buf)
    return [before, after]


@st.composite
def single_op_calls(draw: Any, op: OpDef, dtype: DType | None = None,
                    shape_class: str | None = None) -> Case:
    """A :class:`Case` with one use of ``op``, drawn by its registry ``sample`` function.

    With ``dtype``/``shape_class`` the draw is biased to that cell and rejected when the
    sampled call lands elsewhere. ``op.sample`` must exist (see :func:`feasible_cells`).
    """
    from hypothesis import assume

    if op.sample is None:
        raise ValueError(f"op {op.name!r} has no sample function")
    src = HypothesisArgSource(draw(st.data()), dtype, shape_class)
    call = op.sample(src)
    cls = shape_class_of(op, call, src.drawn_shapes)
    assume(dtype is None or call_dtype(op, call) == dtype)
    assume(shape_class is None or cls == shape_class)
    case = case_from_call(op, call)
    case.shape_class = cls
    case.operand_kinds = src.operand_kinds(call)
    case.extra_inputs = extra_input_sets(op, src, case, draw(st.integers(0, 2**32 - 1)))
    if cls == "scalar":  # CONF-99
        draws = list(src.int_draws)
        case.special_inputs = functools.partial(special_input_sets, op, draws, case, dtype)
    return case


def feasible_cells(op: OpDef, tries: int = 8) -> dict[tuple[DType, str], int]:
    """Which (data dtype, shape class) cells ``op.sample`` can reach: cell -> a probe seed
    that reached it with a call that stages. Probed with :class:`RngArgSource` (cheap,
    deterministic); a probe whose sampler or staging raises reaches nothing."""
    return dict(_probe(op, tries)[0])


def cell_gaps(op: OpDef, tries: int = 8) -> dict[DType, str]:
    """The data dtypes of ``op`` (``OpDef.data_dtypes``) no cell reaches -> why (CONF-21)."""
    return dict(_probe(op, tries)[1])


@functools.cache
def _probe(op: OpDef, tries: int) -> tuple[dict[tuple[DType, str], int], dict[DType, str]]:
    found: dict[tuple[DType, str], int] = {}
    gaps: dict[DType, str] = {}
    for dtype in sorted(op.data_dtypes, key=lambda d: d.value):
        if op.sample is None:
            gaps[dtype] = (f"op {op.name!r} has no sample function in the registry "
                           "(OpDef.sample); add one to test it")
            continue
        errors: list[str] = []
        landed: set[str] = set()
        for cls in SHAPE_CLASSES:
            for seed in range(tries):
                src = RngArgSource(seed, dtype, cls)
                try:
                    call = op.sample(src)
                    got = call_dtype(op, call)
                    if got == dtype:
                        case_from_call(op, call)  # raises if the call does not stage
                except Exception as e:  # a broken sampler or call: not a reachable cell
                    errors.append(f"{type(e).__name__}: {e}")
                    continue
                landed.add("none" if got is None else got.value)
                if got == dtype and shape_class_of(op, call, src.drawn_shapes) == cls:
                    found[(dtype, cls)] = seed
                    break
        if not any(d == dtype for d, _ in found):
            n = tries * len(SHAPE_CLASSES)
            if errors and not landed:
                gaps[dtype] = f"the sample function raised on all {n} probes ({errors[-1]})"
            else:
                gaps[dtype] = (f"the sample function gave no call with data dtype "
                               f"{dtype.value} in {n} probes (got {', '.join(sorted(landed))}"
                               f"{'; errors: ' + errors[-1] if errors else ''}); it must draw "
                               "its data dtype with src.dtype(..., data=True)")
    return found, gaps


# -- random multi-op graphs -----------------------------------------------------------------
def graph_families() -> dict[str, list[OpDef]]:
    """Op families for random graphs: one per registry category, plus ``mixed`` (all ops)."""
    fams: dict[str, list[OpDef]] = {}
    for name in sorted(REGISTRY):
        op = REGISTRY[name]
        if op.sample is not None:
            fams.setdefault(op.category, []).append(op)
            fams.setdefault("mixed", []).append(op)
    return fams


class _GraphBuilder:
    """Grows a graph op by op from registry samples (see :func:`build_random_graph`)."""

    def __init__(self, graph: Graph, src: RngArgSource) -> None:
        self.g = graph
        self.src = src
        self.inputs: list[np.ndarray] = []
        self.tensors: list[Value] = []   # tensor values available as operands
        self.buffers: list[Value] = []   # buffer values (inputs and buffer_create results)
        self.used: set[Value] = set()
        self.by_type: dict[ValueType, list[Value]] = {}

    def _avail(self, v: Value) -> None:
        (self.buffers if isinstance(v.type, BufferType) else self.tensors).append(v)
        self.by_type.setdefault(v.type, []).append(v)

    def new_input(self, a: np.ndarray, buffer: bool) -> Value:
        v = self.g.add_input(_input_type(a, buffer))
        self.inputs.append(np.asarray(a))
        self._avail(v)
        return v

    def stage(self, op: OpDef, operands: list[Value], attrs: dict[str, Any]) -> Value | None:
        """``op``'s one result (None: it does not stage, or has no result: a store)."""
        try:
            (v,) = self.g.stage(op, operands, attrs)
        except (EagerConformanceError, ValueError):
            return None
        self.used.update(operands)
        self._avail(v)
        return v

    def adapt(self, builder: Callable[..., TensorValue], v: Value, arg: Any) -> Value | None:
        """``builder(v, arg)`` (a reshape, broadcast or cast), None where it does not stage."""
        try:
            out = builder(v, arg)
        except (EagerConformanceError, ValueError):
            return None
        self.used.add(v)
        self._avail(out)
        return out

    def fit_tensor(self, a: np.ndarray) -> Value:
        """A value of exactly ``a``'s type: reused, adapted, or a new graph input."""
        want = _input_type(a, False)
        assert isinstance(want, TensorType)
        rng = self.src.rng
        exact = self.by_type.get(want, ())
        if exact and rng.random() < 0.85:
            return exact[-1 - int(rng.random() ** 2 * len(exact))]  # prefer recent values
        for _ in range(3 if self.tensors else 0):
            if rng.random() < 0.3:
                break
            v = self.tensors[-1 - int(rng.random() ** 2 * len(self.tensors))]
            t = v.type
            if t.device == want.device:
                adapted: Value | None = v
                if t.shape != want.shape and t.num_elements == want.num_elements:
                    adapted = self.adapt(builders.reshape, v, want.shape)
                elif (t.shape != want.shape and len(t.shape) <= len(want.shape)
                      and broadcast_shapes([t.shape, want.shape]) == want.shape):
                    adapted = self.adapt(builders.broadcast_to, v, want.shape)
                if adapted is not None and adapted.type.shape == want.shape \
                        and adapted.type.dtype != want.dtype:
                    adapted = self.adapt(builders.cast, adapted, want.dtype)
                if adapted is not None and adapted.type == want:
                    return adapted
        return self.new_input(a, False)

    def fit_buffer(self, a: np.ndarray) -> Value:
        want = _input_type(a, True)
        same = self.by_type.get(want, [])
        if same and self.src.rng.random() < 0.7:
            return self.src.choice(same)
        return self.new_input(a, True)

    def add(self, op: OpDef, call: OpCall) -> bool:
        operands = [self.fit_buffer(a) if i in call.buffers else self.fit_tensor(a)
                    for i, a in enumerate(call.operands)]
        try:
            results = self.g.stage(op, operands, call.attrs)
        except (EagerConformanceError, ValueError):
            return False
        self.used.update(operands)
        for r in results:
            self._avail(r)
        return True


#: Share of random graphs whose steps may add an interleaved store / slice store / load
#: burst on a shared buffer (CONF-96), and the chance per step in such a graph.
INTERLEAVE_SHARE = 0.25
INTERLEAVE_STEP = 0.35
#: The buffer accesses: a load, then the stores (whole, slice) in registry order.
_ACCESSES = (op_with("buffer-load"), *ops_with("buffer-store"))


def interleaved(seed: int) -> bool:
    """Whether the random graph of ``seed`` gets mutation bursts (where its op pool has
    buffer ops); decided and drawn on a side stream of ``seed``."""
    return random.Random(seed ^ 0x5EED_B0F5).random() < INTERLEAVE_SHARE


def _burst(b: _GraphBuilder, rng: random.Random) -> None:
    """3 to 6 accesses to one buffer (reused where the builder has one), mixing whole and
    slice stores and loads, so loads sit between stores of the same buffer (MUT-2)."""
    src = b.src
    if b.buffers and rng.random() < 0.6:
        buf = b.buffers[-1 - int(rng.random() ** 2 * len(b.buffers))]
    else:
        dtype = src.dtype(sorted(DType, key=lambda d: d.value), data=True)
        buf = b.new_input(src.values(dtype, src.shape(min_rank=1, max_rank=3, min_side=1)),
                          True)
    t = buf.type
    assert isinstance(t, BufferType)
    for k in range(rng.randint(3, 6)):
        kind = _ACCESSES[(k + rng.randint(0, 2)) % 3]
        if "buffer-load" in kind.traits:
            b.stage(kind, [buf], {})
            continue
        if not kind.attrs:  # a whole store
            value = b.fit_tensor(src.values(t.dtype, t.shape))
            b.stage(kind, [buf, value], {})
            continue
        slices = tuple(_triple(rng, d) for d in t.shape)
        region = sliced_shape(t.shape, slices)
        value = b.fit_tensor(src.values(t.dtype, region))
        b.stage(kind, [buf, value], {"slices": slices})


def _triple(rng: random.Random, dim: int) -> tuple[int | None, int | None, int]:
    step = rng.choice((1, 1, 2, -1))
    start = rng.choice((None, rng.randint(-dim, dim)))
    stop = rng.choice((None, rng.randint(-dim, dim)))
    return (start, stop, step)


def build_random_graph(seed: int, n_ops: int, ops: Sequence[OpDef] | None = None,
                       name: str = "random_graph", input_sets: int = 1) -> Case:
    """A random type-correct DAG of ``n_ops`` sampled ops (plus adapters), deterministic in
    ``(seed, n_ops, ops)``; the graph for ``n_ops = k`` is a prefix of the one for ``k + 1``.

    Outputs: every tensor value no later node consumes. Buffers keep their final contents
    (compared by the differential tests). ``input_sets > 1`` adds up to ``input_sets - 1``
    further input sets (``Case.extra_inputs``, CONF-30): the same structure rebuilt with
    other values (``EXTRA_SET_RATES``).
    """
    case = _random_graph(seed, n_ops, ops, name, RngArgSource(seed))
    want = case.graph.structural_hash() if input_sets > 1 else ""
    for k, rate in enumerate(EXTRA_SET_RATES[:max(0, input_sets - 1)]):
        other = _random_graph(seed, n_ops, ops, name, RngArgSource(
            seed, values_seed=(seed * 7919 + k + 1) & 0xFFFFFFFF, special_rate=rate))
        if other.graph.structural_hash() == want:
            case.extra_inputs.append(other.inputs)
    return case


def _random_graph(seed: int, n_ops: int, ops: Sequence[OpDef] | None, name: str,
                  src: RngArgSource) -> Case:
    pool = [op for op in (ops if ops is not None else graph_families()["mixed"])
            if op.sample is not None]
    g = Graph(name)
    b = _GraphBuilder(g, src)
    skipped: list[str] = []
    mutates = any(op.category == "buffer" for op in pool)
    bursts = random.Random(seed ^ 0xB0257) if mutates and interleaved(seed) else None
    with g:
        for _ in range(n_ops):
            op = src.choice(pool)
            assert op.sample is not None
            call = op.sample(src)
            if not b.add(op, call):
                skipped.append(op.name)
            if bursts is not None and bursts.random() < INTERLEAVE_STEP:
                _burst(b, bursts)
        outs = [v for v in b.tensors if v not in b.used and not _is_input(g, v)]
        g.output(*outs)
    lower(g)
    return Case(g, b.inputs, seed=seed, skipped_ops=skipped)


def _is_input(g: Graph, v: Value) -> bool:
    return any(v is i for i in g.inputs)


def random_graphs(ops: Sequence[OpDef] | None = None, max_ops: int = 30,
                  name: str = "random_graph") -> st.SearchStrategy[Case]:
    """Random graphs; hypothesis shrinks the op count (prefixes) and the seed."""
    def build(seed: int, n: int) -> Case:
        return build_random_graph(seed, n, ops, name)
    return st.builds(build, st.integers(0, 2**32 - 1), st.integers(1, max_ops))
